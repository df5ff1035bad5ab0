package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/prometheus/prometheus/model/metadata"
)

// metadataHandler serves /api/v1/metadata from weft's store with Prometheus'
// parameters and response shape. (Prometheus answers it from its scrape
// targets, which weft does not have.)
type metadataHandler struct {
	reader MetadataReader
	logger *slog.Logger
}

func (h *metadataHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := -1
	if s := r.FormValue("limit"); s != "" {
		var err error
		if limit, err = strconv.Atoi(s); err != nil {
			respondError(w, h.logger, errorBadData, errors.New("limit must be a number"))
			return
		}
	}
	limitPerMetric := -1
	if s := r.FormValue("limit_per_metric"); s != "" {
		var err error
		if limitPerMetric, err = strconv.Atoi(s); err != nil {
			respondError(w, h.logger, errorBadData, errors.New("limit_per_metric must be a number"))
			return
		}
	}
	res := map[string][]metadata.Metadata{}
	if h.reader != nil && limit != 0 {
		found, err := h.reader.Metadata(r.Context(), r.FormValue("metric"), limit)
		if err != nil {
			respondError(w, h.logger, errorForContext(r, err), err)
			return
		}
		for name, ms := range found {
			if limit >= 0 && len(res) >= limit {
				break
			}
			if limitPerMetric > 0 && len(ms) > limitPerMetric {
				ms = ms[:limitPerMetric]
			}
			if ms == nil {
				ms = []metadata.Metadata{}
			}
			res[name] = ms
		}
	}
	respond(w, h.logger, res)
}

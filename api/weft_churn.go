package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
)

// ChurnReader answers how a selector's metric series came and went
// (package index, Index.Churn). Safe for concurrent use.
type ChurnReader interface {
	Churn(ctx context.Context, mint, maxt int64, sets ...[]*labels.Matcher) (index.Churn, error)
}

// churnWindow is /weft/api/v1/cardinality/churn's default range.
const churnWindow = 7 * 24 * time.Hour

var errNoChurn = errors.New("churn is not available on this server (it reads a local index)")

// churnHandler serves GET /weft/api/v1/cardinality/churn: for the series of
// match[] (every series without it) in [start, end] (default the last 7
// days), the series created in each hour and, per index partition, the
// series active, created and ended (in no later partition).
type churnHandler struct {
	churn  ChurnReader
	logger *slog.Logger
	now    func() time.Time
}

type churnAnswer struct {
	Hours      []churnHour      `json:"hours"`
	Partitions []churnPartition `json:"partitions"`
}

type churnHour struct {
	Start   int64  `json:"start"` // unix seconds
	Created uint64 `json:"created"`
}

type churnPartition struct {
	Start   int64   `json:"start"` // unix seconds
	End     int64   `json:"end"`
	Active  uint64  `json:"active"`
	Created *uint64 `json:"created"` // null: not known (older than the index's hour marks)
	Ended   *uint64 `json:"ended"`   // null: the newest partition
}

func (h *churnHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.churn == nil {
		respondError(w, h.logger, errorUnavailable, errNoChurn)
		return
	}
	if err := r.ParseForm(); err != nil {
		respondError(w, h.logger, errorBadData, fmt.Errorf("parse form: %w", err))
		return
	}
	sets, start, end, err := selectorRange(r, h.now(), churnWindow)
	if err != nil {
		respondError(w, h.logger, errorBadData, err)
		return
	}
	ch, err := h.churn.Churn(r.Context(), start.UnixMilli(), end.UnixMilli(), sets...)
	switch {
	case errors.Is(err, index.ErrChurnRange):
		respondError(w, h.logger, errorBadData, fmt.Errorf("%w: %w", errCardinalityParams, err))
		return
	case err != nil:
		respondError(w, h.logger, errorForContext(r, err), err)
		return
	}
	ans := churnAnswer{Hours: make([]churnHour, len(ch.Hours)), Partitions: make([]churnPartition, len(ch.Partitions))}
	for i, hc := range ch.Hours {
		ans.Hours[i] = churnHour{Start: hc.Start / 1000, Created: hc.Created}
	}
	for i, p := range ch.Partitions {
		cp := churnPartition{Start: p.Start / 1000, End: p.End / 1000, Active: p.Active}
		if p.CreatedKnown {
			cp.Created = &p.Created
		}
		if p.EndedKnown {
			cp.Ended = &p.Ended
		}
		ans.Partitions[i] = cp
	}
	respond(w, h.logger, ans)
}

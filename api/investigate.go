package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/weftdb/weft/investigate"
)

// Investigator answers weft's investigation API (docs/investigation.md):
// *investigate.Investigator. Safe for concurrent use.
type Investigator interface {
	Context(ctx context.Context, selector string, start, end time.Time) (*investigate.WorkloadContext, error)
	Investigate(ctx context.Context, s investigate.Symptom) (*investigate.Report, error)
	Spread(ctx context.Context, r investigate.SpreadRequest) (*investigate.Spread, error)
	Pivot(ctx context.Context, r investigate.PivotRequest) (*investigate.PivotAnswer, error)
	Incidents(ctx context.Context, r investigate.IncidentsRequest) (*investigate.IncidentGroups, error)
}

// contextWindow is the default range of the investigation endpoints;
// incidentsWindow the incidents endpoint's, long enough to see one GPU
// fail again in another run.
const (
	contextWindow   = time.Hour
	incidentsWindow = 7 * 24 * time.Hour
)

// investigateRoutes mounts /weft/api/v1/{context,investigate,pivot,spread,incidents}; without an
// Investigator they answer that investigation is unavailable.
func investigateRoutes(opts Options) []route {
	h := &investigateAPI{iv: opts.Investigate, logger: opts.Logger, now: time.Now}
	return []route{
		{pattern: "GET /weft/api/v1/context", name: "/weft/api/v1/context", ready: true, h: http.HandlerFunc(h.context)},
		{pattern: "POST /weft/api/v1/context", name: "/weft/api/v1/context", ready: true, h: http.HandlerFunc(h.context)},
		{pattern: "GET /weft/api/v1/investigate", name: "/weft/api/v1/investigate", ready: true, h: http.HandlerFunc(h.investigate)},
		{pattern: "POST /weft/api/v1/investigate", name: "/weft/api/v1/investigate", ready: true, h: http.HandlerFunc(h.investigate)},
		{pattern: "GET /weft/api/v1/pivot", name: "/weft/api/v1/pivot", ready: true, h: http.HandlerFunc(h.pivot)},
		{pattern: "POST /weft/api/v1/pivot", name: "/weft/api/v1/pivot", ready: true, h: http.HandlerFunc(h.pivot)},
		{pattern: "GET /weft/api/v1/spread", name: "/weft/api/v1/spread", ready: true, h: http.HandlerFunc(h.spread)},
		{pattern: "POST /weft/api/v1/spread", name: "/weft/api/v1/spread", ready: true, h: http.HandlerFunc(h.spread)},
		{pattern: "GET /weft/api/v1/incidents", name: "/weft/api/v1/incidents", ready: true, h: http.HandlerFunc(h.incidents)},
		{pattern: "POST /weft/api/v1/incidents", name: "/weft/api/v1/incidents", ready: true, h: http.HandlerFunc(h.incidents)},
	}
}

type investigateAPI struct {
	iv     Investigator
	logger *slog.Logger
	now    func() time.Time
}

var errNoInvestigator = errors.New("investigation is not available on this server")

// form parses the request's form and checks the server can investigate.
func (h *investigateAPI) form(w http.ResponseWriter, r *http.Request) bool {
	if h.iv == nil {
		respondError(w, h.logger, errorUnavailable, errNoInvestigator)
		return false
	}
	if err := r.ParseForm(); err != nil {
		respondError(w, h.logger, errorBadData, fmt.Errorf("parse form: %w", err))
		return false
	}
	return true
}

// window reads start and end (unix seconds or RFC 3339); end defaults to
// now, start to an hour before end.
func (h *investigateAPI) window(r *http.Request) (time.Time, time.Time, error) {
	return h.windowOf(r, contextWindow)
}

// windowOf is window with start defaulting to def before end.
func (h *investigateAPI) windowOf(r *http.Request, def time.Duration) (time.Time, time.Time, error) {
	end := h.now()
	if s := r.Form.Get("end"); s != "" {
		t, err := parseAPITime(s)
		if err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("end: %w", err)
		}
		end = t
	}
	start := end.Add(-def)
	if s := r.Form.Get("start"); s != "" {
		t, err := parseAPITime(s)
		if err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("start: %w", err)
		}
		start = t
	}
	if end.Before(start) {
		return time.Time{}, time.Time{}, errors.New("end is before start")
	}
	return start, end, nil
}

// fail answers err: 400 for the caller's mistakes.
func (h *investigateAPI) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, investigate.ErrInvalid):
		respondError(w, h.logger, errorBadData, err)
	case errors.Is(err, investigate.ErrTooMany):
		respondError(w, h.logger, errorExec, err)
	default:
		respondError(w, h.logger, errorForContext(r, err), err)
	}
}

// context serves GET /weft/api/v1/context?match=<selector>&start&end.
func (h *investigateAPI) context(w http.ResponseWriter, r *http.Request) {
	if !h.form(w, r) {
		return
	}
	start, end, err := h.window(r)
	if err != nil {
		respondError(w, h.logger, errorBadData, err)
		return
	}
	sel := r.Form.Get("match")
	if sel == "" {
		respondError(w, h.logger, errorBadData, errors.New("match: a selector is required, for example {run_id=\"r42\"}"))
		return
	}
	wc, err := h.iv.Context(r.Context(), sel, start, end)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	respond(w, h.logger, wc)
}

// investigate serves /weft/api/v1/investigate: selector, query,
// log_query, alert (a JSON object of labels) and time.
func (h *investigateAPI) investigate(w http.ResponseWriter, r *http.Request) {
	if !h.form(w, r) {
		return
	}
	s := investigate.Symptom{Selector: r.Form.Get("selector"), Query: r.Form.Get("query"), LogQuery: r.Form.Get("log_query"), Time: h.now()}
	if a := r.Form.Get("alert"); a != "" {
		if err := json.Unmarshal([]byte(a), &s.Alert); err != nil {
			respondError(w, h.logger, errorBadData, fmt.Errorf("alert: a JSON object of labels: %w", err))
			return
		}
	}
	if t := r.Form.Get("time"); t != "" {
		at, err := parseAPITime(t)
		if err != nil {
			respondError(w, h.logger, errorBadData, fmt.Errorf("time: %w", err))
			return
		}
		s.Time = at
	}
	rep, err := h.iv.Investigate(r.Context(), s)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	respond(w, h.logger, rep)
}

// spread serves /weft/api/v1/spread: match, metric, by (gpu, rank,
// node), time, window (a duration), threshold.
func (h *investigateAPI) spread(w http.ResponseWriter, r *http.Request) {
	if !h.form(w, r) {
		return
	}
	req := investigate.SpreadRequest{Selector: r.Form.Get("match"), Metric: r.Form.Get("metric"), By: r.Form.Get("by"), Time: h.now()}
	if t := r.Form.Get("time"); t != "" {
		at, err := parseAPITime(t)
		if err != nil {
			respondError(w, h.logger, errorBadData, fmt.Errorf("time: %w", err))
			return
		}
		req.Time = at
	}
	if s := r.Form.Get("window"); s != "" {
		d, err := model.ParseDuration(s)
		if err != nil || d <= 0 {
			respondError(w, h.logger, errorBadData, fmt.Errorf("window %q: a positive duration such as 5m", s))
			return
		}
		req.Window = time.Duration(d)
	}
	if s := r.Form.Get("threshold"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			respondError(w, h.logger, errorBadData, fmt.Errorf("threshold %q: a positive number", s))
			return
		}
		req.Threshold = f
	}
	sp, err := h.iv.Spread(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	respond(w, h.logger, sp)
}

// pivot serves /weft/api/v1/pivot: one of series (a selector), stream (a
// LogQL stream selector), alert (JSON labels), resource (a span's resource
// attributes as JSON), and start, end.
func (h *investigateAPI) pivot(w http.ResponseWriter, r *http.Request) {
	if !h.form(w, r) {
		return
	}
	start, end, err := h.window(r)
	if err != nil {
		respondError(w, h.logger, errorBadData, err)
		return
	}
	req := investigate.PivotRequest{Series: r.Form.Get("series"), Stream: r.Form.Get("stream"), Start: start, End: end}
	for name, dst := range map[string]*map[string]string{"alert": &req.Alert, "resource": &req.Resource} {
		if v := r.Form.Get(name); v != "" {
			if err := json.Unmarshal([]byte(v), dst); err != nil {
				respondError(w, h.logger, errorBadData, fmt.Errorf("%s: a JSON object of strings: %w", name, err))
				return
			}
		}
	}
	ans, err := h.iv.Pivot(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	respond(w, h.logger, ans)
}

// incidents serves /weft/api/v1/incidents: by (gpu_uuid, host, node,
// model_version, dependency, model, service, run_id; empty: all), start,
// end (default the 7 days before now), match[] (selectors over the
// incidents' context), min_count, limit.
func (h *investigateAPI) incidents(w http.ResponseWriter, r *http.Request) {
	if !h.form(w, r) {
		return
	}
	start, end, err := h.windowOf(r, incidentsWindow)
	if err != nil {
		respondError(w, h.logger, errorBadData, err)
		return
	}
	req := investigate.IncidentsRequest{By: r.Form.Get("by"), Start: start, End: end, Match: r.Form["match[]"]}
	for name, dst := range map[string]*int{"min_count": &req.MinCount, "limit": &req.Limit} {
		if v := r.Form.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				respondError(w, h.logger, errorBadData, fmt.Errorf("%s %q: a positive integer", name, v))
				return
			}
			*dst = n
		}
	}
	ans, err := h.iv.Incidents(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	respond(w, h.logger, ans)
}

package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage/logstore"
)

// Loki's log deletion API (its compactor's), over the log store's delete
// requests (storage/logstore/deletes.go):
//
//	POST|PUT /loki/api/v1/delete?query=<selector and line filters>&start=<t>[&end=<t>]  → 204
//	GET      /loki/api/v1/delete                                                         → 200 JSON list
//	DELETE   /loki/api/v1/delete?request_id=<id>                                         → 204
//
// Request parameters, errors and the list's shape are Loki's. Deletion is
// destructive, so it is served only with LokiOptions.EnableDelete (weft's
// -enable-admin-api); otherwise every call answers 403, as Loki answers
// when deletion is disabled.

// deleteRoutes are the delete API's entries in the Loki API's routes.
func (a *lokiAPI) deleteRoutes() []route {
	const p = "/loki/api/v1/delete"
	return []route{
		{pattern: "POST " + p, name: p, h: http.HandlerFunc(a.deleteCreate)},
		{pattern: "PUT " + p, name: p, h: http.HandlerFunc(a.deleteCreate)},
		{pattern: "GET " + p, name: p, h: http.HandlerFunc(a.deleteList)},
		{pattern: "DELETE " + p, name: p, h: http.HandlerFunc(a.deleteCancel)},
	}
}

// deleteRequestJSON is one entry of the list, with Loki's field names;
// times are unix seconds with millisecond precision (Prometheus'
// model.Time JSON).
type deleteRequestJSON struct {
	RequestID string     `json:"request_id"`
	StartTime model.Time `json:"start_time"`
	EndTime   model.Time `json:"end_time"`
	Query     string     `json:"query"`
	Status    string     `json:"status"`
	CreatedAt model.Time `json:"created_at"`
}

// Loki's delete request states.
const (
	deleteStatusReceived  = "received"
	deleteStatusProcessed = "processed"
)

func (a *lokiAPI) deleteAllowed(w http.ResponseWriter) (LogDeleter, bool) {
	if !a.opts.EnableDelete {
		lokiError(w, http.StatusForbidden, "deletion is not available: start weft with -enable-admin-api to enable the delete API")
		return nil, false
	}
	d, ok := a.store.(LogDeleter)
	if !ok {
		lokiError(w, http.StatusNotImplemented, "deletion is not served by this weft: its log store takes no delete requests")
		return nil, false
	}
	return d, true
}

func (a *lokiAPI) deleteCreate(w http.ResponseWriter, r *http.Request) {
	d, ok := a.deleteAllowed(w)
	if !ok {
		return
	}
	req, err := a.parseDeleteRequest(r)
	if err != nil {
		a.badRequest(w, err)
		return
	}
	if _, err := d.AddDeleteRequest(r.Context(), req); err != nil {
		if errors.Is(err, logstore.ErrInvalidDelete) {
			a.badRequest(w, err)
			return
		}
		a.log.Error("loki_delete_add_failed", "err", err)
		lokiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *lokiAPI) deleteList(w http.ResponseWriter, r *http.Request) {
	del, ok := a.deleteAllowed(w)
	if !ok {
		return
	}
	reqs := del.DeleteRequests()
	out := make([]deleteRequestJSON, 0, len(reqs)) // [] rather than null, as Loki answers
	for _, d := range reqs {
		if !tenant.Visible(r.Context(), d.Tenant()) {
			continue // another tenant's request
		}
		st := deleteStatusReceived
		if d.Processed {
			st = deleteStatusProcessed
		}
		out = append(out, deleteRequestJSON{
			RequestID: d.ID,
			StartTime: model.Time(d.Start / 1e6),
			EndTime:   model.Time(d.End / 1e6),
			Query:     d.Query,
			Status:    st,
			CreatedAt: model.Time(d.CreatedAt / 1e6),
		})
	}
	b, err := json.Marshal(out)
	if err != nil {
		lokiError(w, http.StatusInternalServerError, fmt.Sprintf("Error marshalling response: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

func (a *lokiAPI) deleteCancel(w http.ResponseWriter, r *http.Request) {
	d, ok := a.deleteAllowed(w)
	if !ok {
		return
	}
	err := d.CancelDeleteRequest(r.Context(), r.URL.Query().Get("request_id"))
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, logstore.ErrDeleteNotFound):
		lokiError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, logstore.ErrDeleteProcessed):
		a.badRequest(w, err)
	default:
		a.log.Error("loki_delete_cancel_failed", "err", err)
		lokiError(w, http.StatusInternalServerError, err.Error())
	}
}

// parseDeleteRequest reads Loki's parameters: query (a stream selector with
// optional |=, !=, |~ and !~ line filters), start (required) and end
// (default now; not in the future), each unix seconds or RFC3339;
// max_interval is validated as Loki does and otherwise ignored (Loki shards
// a request by it; weft applies one request as a whole).
func (a *lokiAPI) parseDeleteRequest(r *http.Request) (logstore.DeleteRequest, error) {
	q := r.URL.Query()
	var d logstore.DeleteRequest
	d.Query = q.Get("query")
	if d.Query == "" {
		return d, errors.New("query not set")
	}
	if err := deleteQuery(&d); err != nil {
		return d, err
	}
	if q.Get("start") == "" {
		return d, errors.New("start time not set")
	}
	start, err := deleteTime(q.Get("start"))
	if err != nil {
		return d, errors.New("invalid start time: require unix seconds or RFC3339 format")
	}
	now := a.now()
	end := now.UnixMilli()
	if v := q.Get("end"); v != "" {
		if end, err = deleteTime(v); err != nil {
			return d, errors.New("invalid end time: require unix seconds or RFC3339 format")
		}
	}
	if end > now.UnixMilli() {
		return d, errors.New("deletes in the future are not allowed")
	}
	if start > end {
		return d, errors.New("start time can't be greater than end time")
	}
	if len(d.Filters) > 0 {
		if v := q.Get("max_interval"); v != "" {
			if iv, err := time.ParseDuration(v); err != nil || iv < time.Second {
				return d, errors.New("invalid max_interval: valid time units are 's', 'm', 'h'")
			} else if iv > time.Duration(end-start)*time.Millisecond {
				return d, fmt.Errorf("max_interval can't be greater than the interval to be deleted (%s)", time.Duration(end-start)*time.Millisecond)
			}
		} else if end-start < 1000 {
			return d, errors.New("difference between start time and end time must be at least one second")
		}
	}
	// Loki's times are milliseconds, both ends inclusive.
	d.Start, d.End = start*1e6, end*1e6
	return d, nil
}

// deleteQuery parses d.Query into its selector and line filters.
func deleteQuery(d *logstore.DeleteRequest) error {
	e, err := logql.ParseExpr(d.Query)
	if err != nil {
		return fmt.Errorf("invalid query expression: %w", err)
	}
	sel, ok := e.(*logql.LogSelectorExpr)
	if !ok {
		return fmt.Errorf("invalid query expression: %q is not a log selector", d.Query)
	}
	d.Matchers = sel.Matchers
	for _, st := range sel.Stages {
		lf, ok := st.(*logql.LineFilterStage)
		if !ok {
			return fmt.Errorf("invalid query expression: weft deletes by stream selector and line filters (|=, !=, |~, !~); %q is not one", st.String())
		}
		switch lf.Op {
		case logstore.DeleteLineContains, logstore.DeleteLineNotContains, logstore.DeleteLineMatches, logstore.DeleteLineNotMatches:
		default:
			return fmt.Errorf("invalid query expression: line filter %s is not supported in delete requests (use |=, !=, |~ or !~)", lf.Op)
		}
		d.Filters = append(d.Filters, logstore.DeleteFilter{Op: lf.Op, Values: lf.Values})
	}
	return nil
}

// deleteTime parses RFC3339 or unix seconds (integer or fractional) into
// milliseconds.
func deleteTime(v string) (int64, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UnixMilli(), nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/1e6 {
		return 0, fmt.Errorf("invalid time %q", v)
	}
	return int64(math.Round(f * 1000)), nil
}

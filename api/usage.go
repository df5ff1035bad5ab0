package api

import (
	"encoding/csv"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/weftdb/weft/query/chargeback"
)

// usageAPI serves the chargeback report (docs/chargeback.md):
// /weft/api/v1/usage as JSON or CSV, /weft/api/v1/usage/export for a
// calendar month as CSV. Rows come from the tenant's own series, so a
// tenant sees only its rows.
type usageAPI struct {
	opts   chargeback.Options
	logger *slog.Logger
	now    func() time.Time
}

// usageRoutes mounts the usage report over the API's engine and storage.
func usageRoutes(opts Options) []route {
	h := &usageAPI{
		opts:   chargeback.Options{Engine: opts.Engine, Queryable: opts.Storage, Disk: opts.UsageDisk},
		logger: opts.Logger,
		now:    time.Now,
	}
	return []route{
		{pattern: "GET /weft/api/v1/usage", name: "/weft/api/v1/usage", ready: true, h: http.HandlerFunc(h.report)},
		{pattern: "GET /weft/api/v1/usage/export", name: "/weft/api/v1/usage/export", ready: true, h: http.HandlerFunc(h.export)},
	}
}

// usageRequest is a report's parameters.
type usageRequest struct {
	start, end time.Time
	by         chargeback.By
	step       time.Duration
	csv        bool
	month      string // set by export, names the CSV file
}

// params reads by and step, common to both routes.
func (h *usageAPI) params(r *http.Request, q *usageRequest) error {
	by, err := chargeback.ParseBy(r.Form.Get("by"))
	if err != nil {
		return err
	}
	q.by = by
	if s := r.Form.Get("step"); s != "" {
		d, err := lokiDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("%w: step %q: a positive duration such as 1m or 60", chargeback.ErrInvalid, s)
		}
		q.step = d
	}
	return nil
}

// report serves GET /weft/api/v1/usage?start&end&by&step&format: start
// defaults to the first instant of this calendar month (UTC), end to now.
func (h *usageAPI) report(w http.ResponseWriter, r *http.Request) {
	q, err := h.reportRequest(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.serve(w, r, q)
}

func (h *usageAPI) reportRequest(r *http.Request) (usageRequest, error) {
	var q usageRequest
	if err := r.ParseForm(); err != nil {
		return q, fmt.Errorf("%w: parse form: %w", chargeback.ErrInvalid, err)
	}
	if err := h.params(r, &q); err != nil {
		return q, err
	}
	q.end = h.now()
	if s := r.Form.Get("end"); s != "" {
		t, err := parseAPITime(s)
		if err != nil {
			return q, fmt.Errorf("%w: end: %w", chargeback.ErrInvalid, err)
		}
		q.end = t
	}
	q.start = chargeback.MonthStart(q.end)
	if s := r.Form.Get("start"); s != "" {
		t, err := parseAPITime(s)
		if err != nil {
			return q, fmt.Errorf("%w: start: %w", chargeback.ErrInvalid, err)
		}
		q.start = t
	}
	switch f := r.Form.Get("format"); f {
	case "", "json":
	case "csv":
		q.csv = true
	default:
		return q, fmt.Errorf("%w: format must be json or csv, not %q", chargeback.ErrInvalid, f)
	}
	return q, nil
}

// export serves GET /weft/api/v1/usage/export?month=YYYY-MM&by&step as CSV:
// the calendar month (UTC), up to now for the month in progress.
func (h *usageAPI) export(w http.ResponseWriter, r *http.Request) {
	q, err := h.exportRequest(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.serve(w, r, q)
}

func (h *usageAPI) exportRequest(r *http.Request) (usageRequest, error) {
	q := usageRequest{csv: true}
	if err := r.ParseForm(); err != nil {
		return q, fmt.Errorf("%w: parse form: %w", chargeback.ErrInvalid, err)
	}
	if err := h.params(r, &q); err != nil {
		return q, err
	}
	q.month = r.Form.Get("month")
	if q.month == "" {
		return q, fmt.Errorf("%w: month is required, for example month=%s", chargeback.ErrInvalid, h.now().UTC().Format("2006-01"))
	}
	start, end, err := chargeback.Month(q.month)
	if err != nil {
		return q, err
	}
	if now := h.now(); end.After(now) {
		end = now
	}
	if !end.After(start) {
		return q, fmt.Errorf("%w: month %s has not begun", chargeback.ErrInvalid, q.month)
	}
	q.start, q.end = start, end
	return q, nil
}

func (h *usageAPI) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, chargeback.ErrInvalid) {
		respondError(w, h.logger, errorBadData, err)
		return
	}
	respondError(w, h.logger, errorForContext(r, err), err)
}

// usageRow is a row as JSON: team or namespace only when grouped by it.
type usageRow struct {
	Tenant                 string  `json:"tenant"`
	Team                   *string `json:"team,omitempty"`
	Namespace              *string `json:"namespace,omitempty"`
	GPUHoursAllocated      float64 `json:"gpu_hours_allocated"`
	GPUHoursUsed           float64 `json:"gpu_hours_used"`
	Samples                int64   `json:"samples"`
	LogBytes               int64   `json:"log_bytes"`
	Spans                  int64   `json:"spans"`
	BytesStoredApportioned int64   `json:"bytes_stored_apportioned"`
}

// usageData is the report's data.
type usageData struct {
	Start string     `json:"start"`
	End   string     `json:"end"`
	By    string     `json:"by"`
	Rows  []usageRow `json:"rows"`
}

func (h *usageAPI) serve(w http.ResponseWriter, r *http.Request, q usageRequest) {
	o := h.opts
	o.Step = q.step
	rows, err := chargeback.Report(r.Context(), o, q.start, q.end, q.by)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if q.csv {
		h.writeCSV(w, q, rows)
		return
	}
	d := usageData{Start: q.start.UTC().Format(time.RFC3339Nano), End: q.end.UTC().Format(time.RFC3339Nano), By: string(q.by), Rows: make([]usageRow, len(rows))}
	for i, row := range rows {
		u := usageRow{Tenant: row.Tenant, GPUHoursAllocated: row.GPUHoursAllocated, GPUHoursUsed: row.GPUHoursUsed,
			Samples: row.Samples, LogBytes: row.LogBytes, Spans: row.Spans, BytesStoredApportioned: row.BytesStoredApportioned}
		switch q.by {
		case chargeback.ByTeam:
			u.Team = &rows[i].Team
		case chargeback.ByNamespace:
			u.Namespace = &rows[i].Namespace
		}
		d.Rows[i] = u
	}
	respond(w, h.logger, d)
}

// writeCSV answers the rows as text/csv with a header row.
func (h *usageAPI) writeCSV(w http.ResponseWriter, q usageRequest, rows []chargeback.Row) {
	header := []string{"tenant"}
	if q.by != chargeback.ByTenant {
		header = append(header, string(q.by))
	}
	header = append(header, "start", "end", "gpu_hours_allocated", "gpu_hours_used", "samples", "log_bytes", "spans", "bytes_stored_apportioned")
	name := "weft-usage.csv"
	if q.month != "" {
		name = "weft-usage-" + q.month + ".csv"
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	cw := csv.NewWriter(w)
	start, end := q.start.UTC().Format(time.RFC3339), q.end.UTC().Format(time.RFC3339)
	rec := make([]string, 0, len(header))
	_ = cw.Write(header)
	for _, row := range rows {
		rec = append(rec[:0], row.Tenant)
		switch q.by {
		case chargeback.ByTeam:
			rec = append(rec, row.Team)
		case chargeback.ByNamespace:
			rec = append(rec, row.Namespace)
		}
		rec = append(rec, start, end,
			strconv.FormatFloat(row.GPUHoursAllocated, 'f', -1, 64), strconv.FormatFloat(row.GPUHoursUsed, 'f', -1, 64),
			strconv.FormatInt(row.Samples, 10), strconv.FormatInt(row.LogBytes, 10), strconv.FormatInt(row.Spans, 10),
			strconv.FormatInt(row.BytesStoredApportioned, 10))
		_ = cw.Write(rec)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		h.logger.Warn("usage_csv_write_failed", "err", err)
	}
}

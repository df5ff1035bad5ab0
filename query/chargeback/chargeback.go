// Package chargeback computes the usage report of docs/chargeback.md: per
// tenant, team or namespace, the GPU-hours allocated and used from the GPU
// telemetry series and the samples, log bytes and spans ingested from the
// usage series that ingest/usage writes, all with the PromQL engine over a
// range, so that the recording rules of docs/deploy/rules/chargeback.yml
// and the API compute the same figures (Expr is both's source).
package chargeback

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/usageseries"
)

// ErrInvalid is wrapped by every error about the caller's parameters.
var ErrInvalid = errors.New("invalid usage request")

// By is what the report's rows are grouped by.
type By string

// The groupings of a report.
const (
	ByTeam      By = "team"
	ByNamespace By = "namespace"
	ByTenant    By = "tenant"
)

// ParseBy returns the grouping named s ("" is ByTeam).
func ParseBy(s string) (By, error) {
	switch By(s) {
	case "", ByTeam:
		return ByTeam, nil
	case ByNamespace, ByTenant:
		return By(s), nil
	}
	return "", fmt.Errorf("%w: by must be team, namespace or tenant, not %q", ErrInvalid, s)
}

// GPUUtilMetric is the GPU utilization series (0..100 per GPU) of weft-agent
// and dcgm-exporter (internal/gputelemetry), with the canonical gpu_uuid,
// team and namespace labels after the workload-context mapping.
const GPUUtilMetric = "DCGM_FI_DEV_GPU_UTIL"

// LabelGPU identifies a GPU: one GPU counts once however many series of it
// there are (weft-agent and dcgm-exporter both scraped).
const LabelGPU = "gpu_uuid"

// DefaultStep is the integration step of the GPU-hours: the scrape interval
// of weft-agent and dcgm-exporter's usual configuration.
const DefaultStep = time.Minute

// MaxPoints bounds range/step of one report (a 31-day month at one minute
// is 44,640), so that one request cannot ask the engine for millions of
// evaluation steps per GPU.
const MaxPoints = 100_000

// Figure is one column of the report that PromQL computes.
type Figure int

// The report's figures.
const (
	GPUHoursAllocated Figure = iota
	GPUHoursUsed
	Samples
	LogBytes
	Spans
	numFigures
)

// groupLabels are the labels a grouping keeps; a federated read keeps the
// tenant of each series too.
func groupLabels(by By, federated bool) []string {
	var g []string
	if federated {
		g = append(g, tenant.FederatedLabelName)
	}
	switch by {
	case ByTeam:
		g = append(g, usageseries.LabelTeam)
	case ByNamespace:
		g = append(g, usageseries.LabelNamespace)
	}
	return g
}

// promDuration renders d as a PromQL duration in milliseconds (exact for
// any range).
func promDuration(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// Expr is the PromQL expression of a figure over the window (t-rng, t] with
// the GPU series integrated at step. The recording rules of
// docs/deploy/rules/chargeback.yml are Expr(f, by, time.Hour, time.Minute)
// with the durations written as 1h and 1m (a test checks it).
//
//   - allocated: every step at which a GPU's series is present (within the
//     engine's lookback) with a team counts step seconds for that team;
//   - used: the same, weighted by the GPU's utilization / 100;
//   - samples, log bytes, spans: the sum of the usage series' deltas.
func Expr(f Figure, by By, rng, step time.Duration) string {
	return expr(f, groupLabels(by, false), rng, step)
}

// expr is Expr grouped by the labels g.
func expr(f Figure, g []string, rng, step time.Duration) string {
	outer := "sum "
	if len(g) > 0 {
		outer = "sum by (" + strings.Join(g, ", ") + ") "
	}
	gpu := strings.Join(append(slices.Clone(g), LabelGPU), ", ")
	r, s := promDuration(rng), promDuration(step)
	stepSec := strconv.FormatFloat(step.Seconds(), 'f', -1, 64)
	switch f {
	case GPUHoursAllocated:
		return fmt.Sprintf("%s(sum_over_time((group by (%s) (%s))[%s:%s])) * %s / 3600", outer, gpu, GPUUtilMetric, r, s, stepSec)
	case GPUHoursUsed:
		return fmt.Sprintf("%s(sum_over_time((avg by (%s) (clamp(%s, 0, 100)))[%s:%s])) * %s / 3600 / 100", outer, gpu, GPUUtilMetric, r, s, stepSec)
	case Samples:
		return fmt.Sprintf("%s(sum_over_time(%s[%s]))", outer, usageseries.Samples, r)
	case LogBytes:
		return fmt.Sprintf("%s(sum_over_time(%s[%s]))", outer, usageseries.LogBytes, r)
	case Spans:
		return fmt.Sprintf("%s(sum_over_time(%s[%s]))", outer, usageseries.Spans, r)
	}
	panic(fmt.Sprintf("BUG: unknown figure %d", f))
}

// Disk is the stores' bytes on disk, by signal keyspace.
type Disk struct {
	Metrics, Logs, Traces int64
}

// Options configures a report.
type Options struct {
	// Engine and Queryable evaluate the expressions (required).
	Engine    promql.QueryEngine
	Queryable promstorage.Queryable
	// Step is the GPU-hours integration step; default DefaultStep.
	Step time.Duration
	// Disk returns the stores' bytes on disk now; nil reports 0 bytes
	// stored.
	Disk func(ctx context.Context) (Disk, error)
}

// Row is one group of a report.
type Row struct {
	Tenant, Team, Namespace string

	GPUHoursAllocated, GPUHoursUsed float64
	Samples, LogBytes, Spans        int64
	// BytesStoredApportioned is each signal's bytes on disk now times the
	// group's share of that signal's ingest over the report's range, among
	// all tenants: weft does not attribute stored bytes per stream.
	BytesStoredApportioned int64
}

// Report computes the rows of the window (start, end] grouped by by, for
// the tenants ctx acts as (one row set per tenant of a federated read; the
// tenant anonymous without multi-tenancy). Rows are sorted by tenant and
// group.
func Report(ctx context.Context, opts Options, start, end time.Time, by By) ([]Row, error) {
	if opts.Step <= 0 {
		opts.Step = DefaultStep
	}
	rng := end.Sub(start)
	switch {
	case rng < time.Millisecond:
		return nil, fmt.Errorf("%w: end must be after start", ErrInvalid)
	case opts.Step < time.Second:
		return nil, fmt.Errorf("%w: step must be at least 1s", ErrInvalid)
	case rng/opts.Step > MaxPoints:
		return nil, fmt.Errorf("%w: the range is %d steps of %s, more than %d; use a larger step", ErrInvalid, rng/opts.Step, opts.Step, MaxPoints)
	}
	defTenant, federated := tenant.Anonymous, false
	if s, ok := tenant.FromContext(ctx); ok {
		id, one := s.Single()
		if one {
			defTenant = id
		}
		federated = !one
	}
	g := groupLabels(by, federated)
	type key struct{ tenant, group string }
	rows := map[key]*Row{}
	groupLabel := ""
	switch by {
	case ByTeam:
		groupLabel = usageseries.LabelTeam
	case ByNamespace:
		groupLabel = usageseries.LabelNamespace
	}
	for f := range numFigures {
		vec, err := instant(ctx, opts, expr(f, g, rng, opts.Step), end)
		if err != nil {
			return nil, err
		}
		for _, s := range vec {
			k := key{s.Metric.Get(tenant.FederatedLabelName), ""}
			if k.tenant == "" {
				k.tenant = defTenant
			}
			if groupLabel != "" {
				k.group = s.Metric.Get(groupLabel)
			}
			r := rows[k]
			if r == nil {
				r = &Row{Tenant: k.tenant}
				switch by {
				case ByTeam:
					r.Team = k.group
				case ByNamespace:
					r.Namespace = k.group
				}
				rows[k] = r
			}
			switch f {
			case GPUHoursAllocated:
				r.GPUHoursAllocated = s.F
			case GPUHoursUsed:
				r.GPUHoursUsed = s.F
			case Samples:
				r.Samples = int64(math.Round(s.F))
			case LogBytes:
				r.LogBytes = int64(math.Round(s.F))
			case Spans:
				r.Spans = int64(math.Round(s.F))
			}
		}
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Row) int {
		if a.Tenant != b.Tenant {
			return strings.Compare(a.Tenant, b.Tenant)
		}
		return strings.Compare(a.Team+"\xff"+a.Namespace, b.Team+"\xff"+b.Namespace)
	})
	if opts.Disk != nil && len(out) > 0 {
		if err := apportion(ctx, opts, out, start, end); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// apportion sets BytesStoredApportioned: each signal's bytes on disk times
// the row's share of the signal's ingest over the range among all tenants.
func apportion(ctx context.Context, opts Options, rows []Row, start, end time.Time) error {
	disk, err := opts.Disk(ctx)
	if err != nil {
		return fmt.Errorf("bytes on disk: %w", err)
	}
	var totals [numFigures]float64
	for f, metric := range map[Figure]string{Samples: usageseries.Samples, LogBytes: usageseries.LogBytes, Spans: usageseries.Spans} {
		if totals[f], err = totalOf(ctx, opts.Queryable, metric, start, end); err != nil {
			return err
		}
	}
	share := func(n int64, f Figure, bytes int64) float64 {
		if totals[f] <= 0 {
			return 0
		}
		return float64(n) / totals[f] * float64(bytes)
	}
	for i := range rows {
		r := &rows[i]
		r.BytesStoredApportioned = int64(math.Round(share(r.Samples, Samples, disk.Metrics) + share(r.LogBytes, LogBytes, disk.Logs) + share(r.Spans, Spans, disk.Traces)))
	}
	return nil
}

// totalOf sums the samples of a usage metric in (start, end] across every
// tenant: what sum_over_time does, read without the tenant restriction of
// ctx, where PromQL would refuse the equal label sets of two tenants. Only
// the total leaves this function.
func totalOf(ctx context.Context, qa promstorage.Queryable, metric string, start, end time.Time) (float64, error) {
	mint, maxt := start.UnixMilli()+1, end.UnixMilli()
	q, err := qa.Querier(mint, maxt)
	if err != nil {
		return 0, fmt.Errorf("total of %s: %w", metric, err)
	}
	defer q.Close()
	ss := q.Select(tenant.WithSet(ctx, tenant.Set{}), false, &promstorage.SelectHints{Start: mint, End: maxt},
		labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, metric))
	total := 0.0
	var it chunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		for vt := it.Seek(mint); vt != chunkenc.ValNone; vt = it.Next() {
			if t, v := it.At(); vt == chunkenc.ValFloat && t <= maxt {
				total += v
			} else if t > maxt {
				break
			}
		}
		if err := it.Err(); err != nil {
			return 0, fmt.Errorf("total of %s: %w", metric, err)
		}
	}
	if err := ss.Err(); err != nil {
		return 0, fmt.Errorf("total of %s: %w", metric, err)
	}
	return total, nil
}

// instant evaluates expr at t.
func instant(ctx context.Context, opts Options, expr string, t time.Time) (promql.Vector, error) {
	q, err := opts.Engine.NewInstantQuery(ctx, opts.Queryable, nil, expr, t)
	if err != nil {
		return nil, fmt.Errorf("usage query %s: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("usage query %s: %w", expr, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		return nil, fmt.Errorf("usage query %s: %w", expr, err)
	}
	return vec, nil
}

// Month returns the calendar month (UTC) named "2006-01": its first instant
// and the first instant of the next month.
func Month(s string) (start, end time.Time, err error) {
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: month must be YYYY-MM, not %q", ErrInvalid, s)
	}
	return t, t.AddDate(0, 1, 0), nil
}

// MonthStart returns the first instant (UTC) of t's calendar month.
func MonthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

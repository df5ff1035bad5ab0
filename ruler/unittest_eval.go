package ruler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// harness is a private weft store (metrics and logs) with a Ruler over it
// whose groups are evaluated at chosen times instead of on a ticker: what a
// rule unit test and a replay test need. Not safe for concurrent use.
type harness struct {
	dir    string
	sub    *storage.Substrate
	db     *storage.DB
	logs   *logstore.Store
	engine promql.QueryEngine
	ruler  *Ruler
	groups []*rules.Group
}

// newHarness opens a store under a new directory in tmp.
func newHarness(ctx context.Context, tmp string) (_ *harness, err error) {
	dir, err := os.MkdirTemp(tmp, "weft-rules-test-")
	if err != nil {
		return nil, err
	}
	h := &harness{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.close())
		}
	}()
	sopts := storage.DefaultOptions()
	sopts.Retention = -1 // test data starts at 1970; keep all of it
	sopts.RetentionInterval = -1
	sopts.Logs.MaintenanceInterval = -1
	sopts.DiskReserve = -1 // a scratch store per test: no ballast
	if h.sub, err = storage.OpenSubstrate(ctx, dir, sopts); err != nil {
		return nil, fmt.Errorf("open test store: %w", err)
	}
	h.db, h.logs = h.sub.Metrics(), h.sub.Logs()
	h.engine = serverEngine()
	r, err := New(Options{
		Appendable: h.db,
		Queryable:  h.db,
		Engine:     h.engine,
		Logs:       logql.NewEngine(h.logs, logql.DefaultEngineOptions()),
	})
	if err != nil {
		return nil, err
	}
	h.ruler = r
	return h, nil
}

// serverEngine is the PromQL engine weft's server runs (query.NewEngine:
// Prometheus' engine with weft's optimizations), so that rules are tested
// on the code paths they run on.
func serverEngine() promql.QueryEngine {
	return query.NewEngine(query.DefaultEngineOptions())
}

func (h *harness) close() error {
	var errs []error
	if h.ruler != nil {
		h.ruler.Stop()
	}
	if h.sub != nil {
		errs = append(errs, h.sub.Close())
	}
	errs = append(errs, os.RemoveAll(h.dir))
	return errors.Join(errs...)
}

// load loads the rule files into groups ordered by order (groups not named
// there first, then by file and name), marked restored as promtool does so
// that ALERTS is written from the first evaluation.
func (h *harness) load(interval time.Duration, files []string, lang map[string]Language, ext labels.Labels, extURL string, order map[string]int) error {
	var errs []error
	for _, f := range files {
		_, ferrs := checkFile(f, lang[f], h.ruler.opts.Logger)
		errs = append(errs, ferrs...)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	h.ruler.loader.lang = lang
	gm, errs := h.ruler.anonymousManager().LoadGroups(interval, ext, extURL, nil, false, files...)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	h.groups = h.groups[:0]
	for _, g := range gm {
		h.groups = append(h.groups, g)
	}
	slices.SortFunc(h.groups, func(a, b *rules.Group) int {
		if c := cmp.Compare(order[a.Name()], order[b.Name()]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.File(), b.File()); c != 0 {
			return c
		}
		return cmp.Compare(a.Name(), b.Name())
	})
	for _, g := range h.groups {
		for _, r := range g.Rules() {
			if ar, ok := r.(*rules.AlertingRule); ok {
				ar.SetRestored(true)
			}
		}
	}
	return nil
}

// eval evaluates every group at ts, in order, and returns the rules'
// evaluation errors.
func (h *harness) eval(ctx context.Context, ts time.Time) []error {
	var errs []error
	for _, g := range h.groups {
		g.Eval(withLanguage(ctx, g), ts)
		for _, r := range g.Rules() {
			if err := r.LastError(); err != nil {
				errs = append(errs, fmt.Errorf("rule %s, time %s: %w", r.Name(), ts.UTC().Format(time.RFC3339), err))
			}
		}
	}
	return errs
}

// evalDue evaluates, in order, the groups whose interval divides ts (as
// the manager's tickers would run them) and returns the rules' errors.
func (h *harness) evalDue(ctx context.Context, ts time.Time) []error {
	var errs []error
	for _, g := range h.groups {
		if ts.UnixNano()%int64(g.Interval()) != 0 {
			continue
		}
		g.Eval(withLanguage(ctx, g), ts)
		for _, r := range g.Rules() {
			if err := r.LastError(); err != nil {
				errs = append(errs, fmt.Errorf("rule %s, time %s: %w", r.Name(), ts.UTC().Format(time.RFC3339), err))
			}
		}
	}
	return errs
}

// firing returns the firing alerts of the alerting rules named name.
func (h *harness) firing(name string) alertSet {
	var out alertSet
	for _, g := range h.groups {
		for _, r := range g.Rules() {
			ar, ok := r.(*rules.AlertingRule)
			if !ok || ar.Name() != name {
				continue
			}
			for _, a := range ar.ActiveAlerts() {
				if a.State == rules.StateFiring {
					out = append(out, labelsAndAnnotations{a.Labels.Copy(), a.Annotations.Copy()})
				}
			}
		}
	}
	return out
}

// instantQuery evaluates a PromQL expression at t with the server's engine.
func (h *harness) instantQuery(ctx context.Context, q string, t time.Time) (promql.Vector, error) {
	return rules.EngineQueryFunc(h.engine, h.db)(ctx, q, t)
}

// seriesFeed appends parsed input series up to a time, in order.
type seriesFeed struct {
	start    time.Time
	interval time.Duration
	series   []feedSeries
}

type feedSeries struct {
	labels labels.Labels
	values []parser.SequenceValue
	times  []int64 // the values' timestamps (ms); nil: start + i × interval
	next   int     // index of the first value not appended yet
}

func newSeriesFeed(p parser.Parser, in []testSeries, start time.Time, interval time.Duration) (*seriesFeed, error) {
	f := &seriesFeed{start: start, interval: interval}
	for _, s := range in {
		ls, vs, err := p.ParseSeriesDesc(s.Series + " " + s.Values)
		if err != nil {
			return nil, fmt.Errorf("input series %s %q: %w", s.Series, s.Values, err)
		}
		f.series = append(f.series, feedSeries{labels: ls, values: vs})
	}
	return f, nil
}

// appendUntil appends every value at or before ts not appended yet.
func (f *seriesFeed) appendUntil(ctx context.Context, app promstorage.AppendableV2, ts time.Time) error {
	a := app.AppenderV2(ctx)
	for i := range f.series {
		s := &f.series[i]
		for ; s.next < len(s.values); s.next++ {
			t := f.start.Add(time.Duration(s.next) * f.interval)
			if s.times != nil {
				t = time.UnixMilli(s.times[s.next])
			}
			if t.After(ts) {
				break
			}
			v := s.values[s.next]
			if v.Omitted {
				continue
			}
			var err error
			if v.Histogram != nil {
				_, err = a.Append(0, s.labels, 0, timestamp.FromTime(t), 0, nil, v.Histogram, promstorage.AOptions{})
			} else {
				_, err = a.Append(0, s.labels, 0, timestamp.FromTime(t), v.Value, nil, nil, promstorage.AOptions{})
			}
			if err != nil {
				_ = a.Rollback()
				return fmt.Errorf("append %s at %s: %w", s.labels, t.UTC().Format(time.RFC3339), err)
			}
		}
	}
	return a.Commit()
}

// logFeed pushes input log lines up to a time, in order.
type logFeed struct {
	streams []feedStream
}

type feedStream struct {
	labels  labels.Labels
	entries []logentry.Entry // ascending timestamps
	next    int
}

func newLogFeed(in []testLogStream, start time.Time) (*logFeed, error) {
	f := &logFeed{}
	for _, s := range in {
		ms, err := logql.ParseMatchers(s.Stream)
		if err != nil {
			return nil, fmt.Errorf("input log stream %s: %w", s.Stream, err)
		}
		b := labels.NewBuilder(labels.EmptyLabels())
		for _, m := range ms {
			if m.Type != labels.MatchEqual {
				return nil, fmt.Errorf("input log stream %s: labels must be name=\"value\"", s.Stream)
			}
			b.Set(m.Name, m.Value)
		}
		fs := feedStream{labels: b.Labels()}
		for _, e := range s.Entries {
			at, every, until := time.Duration(e.At), time.Duration(e.Every), time.Duration(e.Until)
			if every < 0 || (every > 0) != (until > 0) || until < 0 || (every > 0 && until < at) {
				return nil, fmt.Errorf("input log stream %s: entry at %s: every and until go together, until not before at", s.Stream, e.At)
			}
			for t := at; ; t += every {
				fs.entries = append(fs.entries, logentry.Entry{Timestamp: start.Add(t).UnixNano(), Line: e.Line})
				if every == 0 || t+every > until {
					break
				}
			}
		}
		slices.SortStableFunc(fs.entries, func(a, b logentry.Entry) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
		f.streams = append(f.streams, fs)
	}
	return f, nil
}

func (f *logFeed) pushUntil(ctx context.Context, logs *logstore.Store, ts time.Time) error {
	var push []logstore.PushStream
	for i := range f.streams {
		s := &f.streams[i]
		j := s.next
		for j < len(s.entries) && s.entries[j].Timestamp <= ts.UnixNano() {
			j++
		}
		if j > s.next {
			push = append(push, logstore.PushStream{Labels: s.labels, Entries: s.entries[s.next:j]})
			s.next = j
		}
	}
	if len(push) == 0 {
		return nil
	}
	return logs.Push(ctx, push)
}

// runTestGroup runs one test group as promtool does: evaluate every group
// at each evaluation_interval step from the start to the latest eval_time,
// compare the firing alerts at the step that covers each alert test's
// eval_time, then run the PromQL expression tests.
func runTestGroup(ctx context.Context, tf *testFile, tg *testGroup, order map[string]int, tmp string) (errs []error) {
	h, err := newHarness(ctx, tmp)
	if err != nil {
		return []error{err}
	}
	defer func() {
		if err := h.close(); err != nil {
			errs = append(errs, err)
		}
	}()
	lang := map[string]Language{}
	files := slices.Clone(tf.RuleFiles)
	for _, f := range tf.LogQLRuleFiles {
		lang[f] = LogQL
		files = append(files, f)
	}
	if err := h.load(time.Duration(tg.Interval), files, lang, labels.FromMap(tg.ExternalLabels), tg.ExternalURL, order); err != nil {
		return []error{err}
	}
	start := time.Unix(0, 0).UTC()
	if !tg.StartTimestamp.IsZero() {
		start = tg.StartTimestamp.Time
	}
	p := query.NewParser()
	series, err := newSeriesFeed(p, tg.InputSeries, start, time.Duration(tg.Interval))
	if err != nil {
		return []error{err}
	}
	logs, err := newLogFeed(tg.InputLogs, start)
	if err != nil {
		return []error{err}
	}

	alertTests := map[time.Duration][]alertTestCase{}
	var evalTimes []time.Duration
	for _, at := range tg.AlertRuleTests {
		if at.Alertname == "" {
			return []error{fmt.Errorf("an alert_rule_test at eval_time %s has no alertname", at.EvalTime)}
		}
		d := time.Duration(at.EvalTime)
		if _, ok := alertTests[d]; !ok {
			evalTimes = append(evalTimes, d)
		}
		alertTests[d] = append(alertTests[d], at)
	}
	slices.Sort(evalTimes)

	step := time.Duration(tf.EvaluationInterval)
	end := start.Add(tg.maxEvalTime())
	next := 0
	for ts := start; !ts.After(end); ts = ts.Add(step) {
		if err := series.appendUntil(ctx, h.db, ts); err != nil {
			return append(errs, err)
		}
		if err := logs.pushUntil(ctx, h.logs, ts); err != nil {
			return append(errs, err)
		}
		if evalErrs := h.eval(ctx, ts); len(evalErrs) > 0 {
			return append(errs, evalErrs...)
		}
		for ; next < len(evalTimes) && ts.Sub(start) <= evalTimes[next] && evalTimes[next] < ts.Add(step).Sub(start); next++ {
			for _, at := range alertTests[evalTimes[next]] {
				var want alertSet
				for _, ea := range at.ExpAlerts {
					ls := labels.NewBuilder(labels.FromMap(ea.ExpLabels))
					ls.Set(labels.AlertName, at.Alertname)
					want = append(want, labelsAndAnnotations{ls.Labels(), labels.FromMap(ea.ExpAnnotations)})
				}
				if got := h.firing(at.Alertname); !got.equal(want) {
					errs = append(errs, fmt.Errorf("    alertname: %s, time: %s,\n    exp: %s,\n    got: %s", at.Alertname, at.EvalTime, want, got))
				}
			}
		}
	}

	for _, et := range tg.PromqlExprTests {
		if err := checkExpr(ctx, h, p, et, start, tf.FuzzyCompare); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkExpr runs one promql_expr_test.
func checkExpr(ctx context.Context, h *harness, p parser.Parser, et exprTestCase, start time.Time, fuzzy bool) error {
	got, err := h.instantQuery(ctx, et.Expr, start.Add(time.Duration(et.EvalTime)))
	if err != nil {
		return fmt.Errorf("    expr: %q, time: %s, err: %w", et.Expr, et.EvalTime, err)
	}
	type sample struct {
		ls labels.Labels
		v  float64
		h  string
	}
	var want, have []sample
	for _, s := range got {
		have = append(have, sample{s.Metric, s.F, histogramString(s.H)})
	}
	for _, s := range et.ExpSamples {
		ls, err := p.ParseMetric(s.Labels)
		if err != nil {
			return fmt.Errorf("    expr: %q, time: %s, labels %q: %w", et.Expr, et.EvalTime, s.Labels, err)
		}
		var hs string
		if s.Histogram != "" {
			_, vs, err := p.ParseSeriesDesc("{} " + s.Histogram)
			if err != nil || len(vs) != 1 || vs[0].Histogram == nil {
				return fmt.Errorf("    expr: %q, time: %s, histogram %q: not one histogram (%v)", et.Expr, et.EvalTime, s.Histogram, err)
			}
			hs = histogramString(vs[0].Histogram)
		}
		want = append(want, sample{ls, s.Value, hs})
	}
	byLabels := func(a, b sample) int { return labels.Compare(a.ls, b.ls) }
	slices.SortFunc(want, byLabels)
	slices.SortFunc(have, byLabels)
	same := len(want) == len(have)
	for i := 0; same && i < len(want); i++ {
		w, g := want[i], have[i]
		same = labels.Equal(w.ls, g.ls) && w.h == g.h && (w.h != "" || floatEqual(w.v, g.v, fuzzy))
	}
	if same {
		return nil
	}
	format := func(ss []sample) string {
		if len(ss) == 0 {
			return "nil"
		}
		out := ""
		for i, s := range ss {
			if i > 0 {
				out += ", "
			}
			if s.h != "" {
				out += s.ls.String() + " " + s.h
			} else {
				out += fmt.Sprintf("%s %s", s.ls, fmtFloat(s.v))
			}
		}
		return out
	}
	return fmt.Errorf("    expr: %q, time: %s,\n        exp: %s\n        got: %s", et.Expr, et.EvalTime, format(want), format(have))
}

// floatEqual compares as promtool does: exactly, or within one ULP with
// fuzzy_compare.
func floatEqual(a, b float64, fuzzy bool) bool {
	if a == b {
		return true
	}
	return fuzzy && (math.Nextafter(a, math.Inf(-1)) == b || math.Nextafter(a, math.Inf(1)) == b)
}

func fmtFloat(v float64) string { return fmt.Sprintf("%v", v) }

// histogramString is a histogram in the notation of promql tests; "" for
// none.
func histogramString(h *histogram.FloatHistogram) string {
	if h == nil {
		return ""
	}
	return h.TestExpression()
}

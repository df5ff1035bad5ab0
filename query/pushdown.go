package query

import (
	"context"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// PushdownOptions configures AggregationPushdown.
type PushdownOptions struct {
	// Timeout bounds the pushed-down part of one query; default
	// DefaultTimeout.
	Timeout time.Duration
	// MaxCells bounds groups × steps of one pushed-down aggregation; a
	// larger one is left to the engine. Default DefaultPushdownMaxCells.
	MaxCells int
	// Parallelism is how many goroutines evaluate the groups of one
	// aggregation; default GOMAXPROCS.
	Parallelism int
}

// DefaultPushdownMaxCells keeps a pushed-down aggregation's state under
// about 100 MiB.
const DefaultPushdownMaxCells = 2 << 20

// GroupQuerier is what the pushdown needs of a storage querier: the series
// of a selector grouped by label values without their label sets. weft's
// storage querier implements it; a querier that does not leaves every
// query to the engine.
type GroupQuerier interface {
	// SelectGroups returns the grouping labels of each group and the
	// series matching ms, group after group and in Select's order within
	// a group. The set implements GroupedSet. With hints.Step and
	// hints.Range 0 it may yield of a series only its latest sample at or
	// before hints.End.
	SelectGroups(ctx context.Context, hints *storage.SelectHints, by []string, ms ...*labels.Matcher) ([]labels.Labels, storage.SeriesSet, error)
}

// GroupedSet is the series set of GroupQuerier.SelectGroups.
type GroupedSet interface {
	// Group returns the index of the current series' group.
	Group() int
}

// sharder is implemented by a GroupedSet that splits into sets of whole
// groups that can be iterated concurrently.
type sharder interface {
	Shards(n int) []storage.SeriesSet
}

// latestSet is implemented by a GroupedSet that can hand out an instant
// select's only sample of a series without building it.
type latestSet interface {
	// Latest returns the current series' only sample, or ok false when
	// it must be read with At().Iterator.
	Latest() (t int64, v float64, ok bool)
}

// AggregationPushdown wraps engine so that the aggregations of a query that
// only need each series' values, not its labels, are evaluated next to the
// storage instead of by the engine:
//
//	sum|count|min|max|avg|group [by (...)] (selector)
//	sum|count|min|max|avg|group [by (...)] (rate|increase(selector[range]))
//
// with a plain selector (no @, offset, smoothed or anchored; rate and
// increase need the metric name as an equality matcher). The engine spends
// most of such a query building a label set per series and hashing it into
// its group; here the index groups the series by the grouping labels' value
// references and each series' samples go straight into per-group, per-step
// accumulators, with the engine's arithmetic (Kahan sums, the incremental
// mean, rate's extrapolation) in the engine's order, so results are the
// engine's, bit for bit. The aggregation's result then replaces it in the
// parsed query as a selector of precomputed series, one sample per step,
// and the engine evaluates the rest of the query as before.
//
// An aggregation that meets a histogram sample, a storage that cannot group
// (see GroupQuerier), too many groups × steps, or any error is left to the
// engine, which evaluates the query as written. Subqueries are not pushed
// down. The pushed-down part is not counted in the query's sample
// statistics or its sample limit.
func AggregationPushdown(engine promql.QueryEngine, opts PushdownOptions) promql.QueryEngine {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxCells <= 0 {
		opts.MaxCells = DefaultPushdownMaxCells
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = runtime.GOMAXPROCS(0)
	}
	return &pushdownEngine{QueryEngine: engine, opts: opts}
}

type pushdownEngine struct {
	promql.QueryEngine
	opts PushdownOptions
}

func (e *pushdownEngine) NewInstantQuery(ctx context.Context, q storage.Queryable, qo promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	if limitsOf(ctx).bounded() { // the engine's budget must see every sample (QueryLimits)
		return e.QueryEngine.NewInstantQuery(ctx, q, qo, qs, ts)
	}
	pq := &pushdownQueryable{Queryable: q, results: map[*labels.Matcher][]promql.Series{}}
	qry, err := e.QueryEngine.NewInstantQuery(ctx, pq, qo, qs, ts)
	if err != nil {
		return nil, err
	}
	return e.plan(qry, pq, q, qo), nil
}

func (e *pushdownEngine) NewRangeQuery(ctx context.Context, q storage.Queryable, qo promql.QueryOpts, qs string, start, end time.Time, interval time.Duration) (promql.Query, error) {
	if limitsOf(ctx).bounded() {
		return e.QueryEngine.NewRangeQuery(ctx, q, qo, qs, start, end, interval)
	}
	pq := &pushdownQueryable{Queryable: q, results: map[*labels.Matcher][]promql.Series{}}
	qry, err := e.QueryEngine.NewRangeQuery(ctx, pq, qo, qs, start, end, interval)
	if err != nil {
		return nil, err
	}
	return e.plan(qry, pq, q, qo), nil
}

// plan finds the aggregations of qry's statement that can be pushed down.
// Queriers are opened by Exec, so the statement can still be changed.
func (e *pushdownEngine) plan(qry promql.Query, pq *pushdownQueryable, src storage.Queryable, qo promql.QueryOpts) promql.Query {
	st, ok := qry.Statement().(*parser.EvalStmt)
	if !ok {
		return qry
	}
	// With start timestamps rate() may use them; the pushdown does not.
	rates := qo == nil || qo.UseStartTimestamps() == nil || !*qo.UseStartTimestamps()
	cands := findPushdowns(&st.Expr, rates, nil)
	if len(cands) == 0 {
		return qry
	}
	return &pushdownQuery{Query: qry, st: st, cands: cands, pq: pq, src: src, opts: e.opts}
}

// pushdown is one aggregation that can be evaluated next to the storage.
type pushdown struct {
	slot *parser.Expr // where the aggregation sits in the statement
	agg  *parser.AggregateExpr
	vs   *parser.VectorSelector
	call *parser.Call // rate or increase, or nil for a plain selector
	rng  time.Duration
	name string // the metric name (rate and increase)
}

// findPushdowns appends the aggregations under *slot that can be pushed
// down; it does not look inside subqueries or step-invariant expressions
// (those evaluate at other times than the statement's steps).
func findPushdowns(slot *parser.Expr, rates bool, out []pushdown) []pushdown {
	switch n := (*slot).(type) {
	case *parser.AggregateExpr:
		if p, ok := pushdownOf(n, rates); ok {
			p.slot = slot
			return append(out, p)
		}
		out = findPushdowns(&n.Expr, rates, out)
		if n.Param != nil {
			out = findPushdowns(&n.Param, rates, out)
		}
	case *parser.BinaryExpr:
		out = findPushdowns(&n.LHS, rates, out)
		out = findPushdowns(&n.RHS, rates, out)
	case *parser.Call:
		for i := range n.Args {
			out = findPushdowns(&n.Args[i], rates, out)
		}
	case *parser.ParenExpr:
		out = findPushdowns(&n.Expr, rates, out)
	case *parser.UnaryExpr:
		out = findPushdowns(&n.Expr, rates, out)
	}
	return out
}

func pushdownOf(agg *parser.AggregateExpr, rates bool) (pushdown, bool) {
	switch agg.Op {
	case parser.SUM, parser.COUNT, parser.MIN, parser.MAX, parser.AVG, parser.GROUP:
	default:
		return pushdown{}, false
	}
	if agg.Without || agg.Param != nil {
		return pushdown{}, false
	}
	in := agg.Expr
	for {
		p, ok := in.(*parser.ParenExpr)
		if !ok {
			break
		}
		in = p.Expr
	}
	switch n := in.(type) {
	case *parser.VectorSelector:
		if plainSelector(n) {
			return pushdown{agg: agg, vs: n}, true
		}
	case *parser.Call:
		if !rates || (n.Func.Name != "rate" && n.Func.Name != "increase") || len(n.Args) != 1 {
			break
		}
		ms, ok := n.Args[0].(*parser.MatrixSelector)
		if !ok {
			break
		}
		vs, ok := ms.VectorSelector.(*parser.VectorSelector)
		// rate drops the metric name, so "by (__name__)" groups by its
		// absence; and the engine may delay that drop. Leave it to it.
		if !ok || !plainSelector(vs) || ms.Range <= 0 || slices.Contains(agg.Grouping, labels.MetricName) {
			break
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual && m.Value != "" {
				return pushdown{agg: agg, vs: vs, call: n, rng: ms.Range, name: m.Value}, true
			}
		}
	}
	return pushdown{}, false
}

func plainSelector(vs *parser.VectorSelector) bool {
	return vs.Timestamp == nil && vs.StartOrEnd == 0 && vs.OriginalOffset == 0 && vs.Offset == 0 &&
		!vs.Smoothed && !vs.Anchored
}

// pushdownQuery evaluates its pushdowns, puts their results into the
// statement and runs the engine.
type pushdownQuery struct {
	promql.Query
	st    *parser.EvalStmt
	cands []pushdown
	pq    *pushdownQueryable
	src   storage.Queryable
	opts  PushdownOptions
}

func (x *pushdownQuery) Exec(ctx context.Context) *promql.Result {
	var annos annotations.Annotations
	pctx, cancel := context.WithTimeout(ctx, x.opts.Timeout)
	for i, c := range x.cands {
		series, a, ok := x.eval(pctx, c)
		if !ok {
			continue // the engine evaluates it as written
		}
		m := labels.MustNewMatcher(labels.MatchEqual, pushdownLabel, strconv.Itoa(i))
		x.pq.results[m] = series
		// In parentheses: the replacement is not a selector to functions
		// that look at their argument's selector, like absent().
		*c.slot = &parser.ParenExpr{
			Expr:     &parser.VectorSelector{LabelMatchers: []*labels.Matcher{m}, PosRange: c.agg.PosRange},
			PosRange: c.agg.PosRange,
		}
		annos.Merge(a)
	}
	cancel()
	res := x.Query.Exec(ctx)
	if res.Err == nil && len(annos) > 0 {
		res.Warnings = res.Warnings.Merge(annos)
	}
	return res
}

// pushdownLabel names the matcher of the selector that replaces a pushed
// down aggregation. The querier recognises the matcher by identity, so a
// user's selector with this label never reads a result.
const pushdownLabel = "__weft_pushdown__"

// eval evaluates c at the statement's steps; ok is false when it is left
// to the engine.
func (x *pushdownQuery) eval(ctx context.Context, c pushdown) (_ []promql.Series, _ annotations.Annotations, ok bool) {
	start, end := timestamp.FromTime(x.st.Start), timestamp.FromTime(x.st.End)
	interval := x.st.Interval.Milliseconds()
	steps := 1
	if interval > 0 {
		steps = int((end-start)/interval) + 1
	}
	window := x.st.LookbackDelta.Milliseconds()
	if c.call != nil {
		window = c.rng.Milliseconds()
	}
	mint := start - window + 1
	qr, err := x.src.Querier(mint, end)
	if err != nil {
		return nil, nil, false
	}
	defer qr.Close()
	gq, isGroup := qr.(GroupQuerier)
	if !isGroup {
		return nil, nil, false
	}
	hints := &storage.SelectHints{
		Start: mint, End: end, Step: interval, Range: c.rng.Milliseconds(),
		Func: c.agg.Op.String(), By: true, Grouping: c.agg.Grouping,
	}
	if c.call != nil {
		hints.Func = c.call.Func.Name
	}
	// With Step and Range 0 (an instant query's plain selector) the
	// storage may return only each series' latest sample: all it needs.
	groups, set, err := gq.SelectGroups(ctx, hints, c.agg.Grouping, c.vs.LabelMatchers...)
	if err != nil || len(groups)*steps > x.opts.MaxCells {
		return nil, nil, false
	}
	acc := aggregator{op: c.agg.Op, steps: steps, cells: make([]cell, len(groups)*steps)}
	ev := stepEval{start: start, interval: interval, steps: steps, window: window}
	if c.call != nil {
		ev.isRate = c.call.Func.Name == "rate"
	}
	// Groups are independent: shards of whole groups run in parallel and
	// each group's series still go into its cells in order. That pays for
	// decoding chunks (1.5x on two cores for a 1h rate); an instant query
	// reading the head's latest samples is bound by memory latency and
	// goes no faster split.
	shards := []storage.SeriesSet{set}
	decodes := c.call != nil || interval > 0
	if sh, ok := set.(sharder); ok && decodes && len(groups) > 1 && x.opts.Parallelism > 1 {
		shards = sh.Shards(x.opts.Parallelism)
	}
	type result struct{ output, ok bool }
	results := make([]result, len(shards))
	var wg sync.WaitGroup
	for i, sh := range shards {
		e := ev // each shard its own buffer
		if i == len(shards)-1 {
			results[i].output, results[i].ok = e.series(ctx, sh, c.call == nil, &acc)
			continue
		}
		wg.Go(func() {
			results[i].output, results[i].ok = e.series(ctx, sh, c.call == nil, &acc)
		})
	}
	wg.Wait()
	output := false
	for _, r := range results {
		if !r.ok {
			return nil, nil, false
		}
		output = output || r.output
	}
	var annos annotations.Annotations
	if c.call != nil && output && !counterName(c.name) {
		annos.Add(annotations.NewPossibleNonCounterInfo(c.name, c.call.Args[0].PositionRange()))
	}
	return acc.series(groups, start, interval), annos, true
}

// series adds the series of set (a GroupedSet) to acc: their values at the
// steps (instant selector) or their rates. It reports whether any step had
// a value, and false when the aggregation must be left to the engine.
func (e *stepEval) series(ctx context.Context, set storage.SeriesSet, instant bool, acc *aggregator) (output, ok bool) {
	gset, isGrouped := set.(GroupedSet)
	if !isGrouped {
		return false, false
	}
	lset, _ := set.(latestSet)
	var it chunkenc.Iterator
	for n := 0; set.Next(); n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return false, false
		}
		gi := gset.Group()
		g := acc.cells[gi*e.steps : (gi+1)*e.steps]
		if lset != nil && instant {
			if t, f, ok := lset.Latest(); ok {
				e.point(t, f, math.MaxInt64, acc.op, g)
				continue
			}
		}
		it = set.At().Iterator(it)
		if instant {
			ok = e.instant(it, acc.op, g)
		} else {
			var out bool
			out, ok = e.rate(it, acc.op, g)
			output = output || out
		}
		if !ok {
			return false, false
		}
	}
	return output, set.Err() == nil
}

// counterName reports whether a metric name has a suffix rate() expects of
// a counter (the engine's annotation check).
func counterName(n string) bool {
	return strings.HasSuffix(n, "_total") || strings.HasSuffix(n, "_sum") ||
		strings.HasSuffix(n, "_count") || strings.HasSuffix(n, "_bucket")
}

// stepEval evaluates one series at a statement's steps.
type stepEval struct {
	start, interval int64
	steps           int
	window          int64 // lookback, or the range of rate and increase (ms)
	isRate          bool
	buf             []fpoint
}

type fpoint struct {
	t int64
	f float64
}

// firstStep returns the first step at or after t (steps when none).
func (e *stepEval) firstStep(t int64) int {
	if t <= e.start {
		return 0
	}
	if e.interval == 0 {
		return e.steps
	}
	k := (t - e.start + e.interval - 1) / e.interval
	return int(min(k, int64(e.steps)))
}

// instant adds the series' value at each step to g, as an instant vector
// selector has it: its latest sample in (ts-lookback, ts], unless that is a
// stale marker. It reports false on a histogram sample.
func (e *stepEval) instant(it chunkenc.Iterator, op parser.ItemType, g []cell) bool {
	var (
		prev fpoint
		have bool
	)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat {
			return false
		}
		t, f := it.At()
		if have {
			e.point(prev.t, prev.f, t, op, g)
		}
		prev, have = fpoint{t, f}, true
	}
	if it.Err() != nil {
		return false
	}
	if have {
		e.point(prev.t, prev.f, math.MaxInt64, op, g)
	}
	return true
}

// point adds the sample (t, f), followed by the next one at next, to the
// steps it is an instant selector's value at: those in [t, min(next,
// t+lookback)), unless it is a stale marker.
func (e *stepEval) point(t int64, f float64, next int64, op parser.ItemType, g []cell) {
	if value.IsStaleNaN(f) {
		return
	}
	hi := e.firstStep(min(next, t+e.window))
	for k := e.firstStep(t); k < hi; k++ {
		g[k].add(op, f)
	}
}

// rate adds the series' rate (or increase) at each step to g, as the
// engine's extrapolatedRate computes it without start timestamps. It
// reports whether any step had a value, and false on a histogram sample.
func (e *stepEval) rate(it chunkenc.Iterator, op parser.ItemType, g []cell) (output, ok bool) {
	e.buf = e.buf[:0]
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat {
			return false, false
		}
		t, f := it.At()
		if !value.IsStaleNaN(f) {
			e.buf = append(e.buf, fpoint{t, f})
		}
	}
	if it.Err() != nil {
		return false, false
	}
	s := e.buf
	if len(s) < 2 {
		return false, true
	}
	lo, hi := 0, 0
	// A sample at t is in the windows (ts-range, ts] of the steps in
	// [t, t+range).
	last := e.firstStep(s[len(s)-1].t + e.window)
	for k := e.firstStep(s[0].t); k < last; k++ {
		ts := e.start + int64(k)*e.interval
		for hi < len(s) && s[hi].t <= ts {
			hi++
		}
		for lo < hi && s[lo].t <= ts-e.window {
			lo++
		}
		if hi-lo < 2 {
			continue
		}
		g[k].add(op, extrapolatedRate(s[lo:hi], ts-e.window, ts, e.window, e.isRate))
		output = true
	}
	return output, true
}

// extrapolatedRate is the engine's rate and increase of float samples s (at
// least two) in the window (rangeStart, rangeEnd] of length rng ms, without
// start timestamps; the operations are the engine's, in its order.
func extrapolatedRate(s []fpoint, rangeStart, rangeEnd, rng int64, isRate bool) float64 {
	first, lastp := s[0], s[len(s)-1]
	result := lastp.f - first.f
	for i := 1; i < len(s); i++ {
		if s[i].f < s[i-1].f {
			result += s[i-1].f
		}
	}
	numSamplesMinusOne := len(s) - 1
	durationToStart := float64(first.t-rangeStart) / 1000
	durationToEnd := float64(rangeEnd-lastp.t) / 1000
	sampledInterval := float64(lastp.t-first.t) / 1000
	averageDurationBetweenSamples := sampledInterval / float64(numSamplesMinusOne)
	extrapolationThreshold := averageDurationBetweenSamples * 1.1
	if durationToStart >= extrapolationThreshold {
		durationToStart = averageDurationBetweenSamples / 2
	}
	durationToZero := durationToStart
	if result > 0 && first.f >= 0 {
		durationToZero = sampledInterval * (first.f / result)
	}
	if durationToZero < durationToStart {
		durationToStart = durationToZero
	}
	if durationToEnd >= extrapolationThreshold {
		durationToEnd = averageDurationBetweenSamples / 2
	}
	factor := 1.0
	if sampledInterval != 0 {
		factor = (sampledInterval + durationToStart + durationToEnd) / sampledInterval
	}
	if isRate {
		factor /= (time.Duration(rng) * time.Millisecond).Seconds()
	}
	return result * factor
}

// pushdownQueryable answers the selectors that replace pushed-down
// aggregations and passes every other Select to the wrapped queryable.
type pushdownQueryable struct {
	storage.Queryable
	results map[*labels.Matcher][]promql.Series // filled by Exec before the engine runs
}

func (q *pushdownQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	qr, err := q.Queryable.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return &pushdownQuerier{Querier: qr, results: q.results}, nil
}

type pushdownQuerier struct {
	storage.Querier
	results map[*labels.Matcher][]promql.Series
}

func (q *pushdownQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	if len(ms) == 1 {
		if res, ok := q.results[ms[0]]; ok {
			return &resultSet{series: res, i: -1}
		}
	}
	return q.Querier.Select(ctx, sortSeries, hints, ms...)
}

// resultSet yields a pushed-down aggregation's series.
type resultSet struct {
	series []promql.Series
	i      int
}

func (s *resultSet) Next() bool {
	s.i++
	return s.i < len(s.series)
}

func (s *resultSet) At() storage.Series                { return promql.NewStorageSeries(s.series[s.i]) }
func (s *resultSet) Err() error                        { return nil }
func (s *resultSet) Warnings() annotations.Annotations { return nil }

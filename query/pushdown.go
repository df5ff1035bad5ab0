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
	"github.com/prometheus/prometheus/schema"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// PushdownOptions configures AggregationPushdown.
type PushdownOptions struct {
	// Timeout bounds the pushed-down part of one query; default
	// DefaultTimeout.
	Timeout time.Duration
	// MaxCells bounds groups × steps of one pushed-down aggregation, and
	// the points a pushed-down function of each series hands over; a
	// larger one is left to the engine. Default DefaultPushdownMaxCells.
	MaxCells int
	// Parallelism is how many goroutines evaluate the groups of one
	// aggregation; default GOMAXPROCS.
	Parallelism int
	// DelayedNameRemoval and StartTimestamps must be the wrapped engine's
	// EnableDelayedNameRemoval and UseStartTimestamps (promql.EngineOpts).
	// With the first, range functions of each series are left to the
	// engine (it keeps the metric name until the end of the query); with
	// the second, rate, increase and irate, unless a query's options turn
	// start timestamps off.
	DelayedNameRemoval, StartTimestamps bool
}

// DefaultPushdownMaxCells keeps a pushed-down expression's state under
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

// AggregationPushdown wraps engine so that the aggregations and range
// functions of a query that only need each series' values, not its labels,
// are evaluated next to the storage instead of by the engine:
//
//	sum|count|min|max|avg|group [by (...)] (selector)
//	sum|count|min|max|avg|group [by (...)] (f(selector[range]))
//	f(selector[range])
//
// with a plain selector (no @, offset, smoothed or anchored) and f one of
// rangeFns (rate, increase, delta, irate, idelta, avg|sum|min|max|count|
// present|stddev|stdvar_over_time, deriv, predict_linear), which needs the
// metric name as an equality matcher. The engine spends most of such a
// query building a label set per series and hashing it into its group, and
// reading samples into range windows one iterator step at a time; here the
// index groups the series by the grouping labels' value references and
// each series' samples go straight into per-group, per-step accumulators,
// or into the function's value per step, with the engine's arithmetic
// (Kahan sums, the incremental mean, rate's extrapolation, the least-squares
// fit) in the engine's order, so results are the engine's, bit for bit. The
// result then replaces the expression in the parsed query as a selector of
// precomputed series, one sample per step, and the engine evaluates the
// rest of the query as before. A function of each series whose result is
// compared with a number next drops the values the comparison drops.
//
// An expression that meets a histogram sample, a storage that cannot group
// (see GroupQuerier), too many groups (or series) × steps, or any error is
// left to the engine, which evaluates the query as written. Subqueries are
// not pushed down. The pushed-down part is not counted in the query's
// sample statistics or its sample limit.
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
	startTS := e.opts.StartTimestamps
	if qo != nil && qo.UseStartTimestamps() != nil {
		startTS = *qo.UseStartTimestamps()
	}
	cands := findPushdowns(&st.Expr, finder{rates: !startTS, perSeries: !e.opts.DelayedNameRemoval}, nil)
	if len(cands) == 0 {
		return qry
	}
	return &pushdownQuery{Query: qry, st: st, cands: cands, pq: pq, src: src, opts: e.opts}
}

// pushdown is one aggregation or range function call that can be
// evaluated next to the storage.
type pushdown struct {
	slot *parser.Expr          // where it sits in the statement
	agg  *parser.AggregateExpr // nil for a range function of each series
	vs   *parser.VectorSelector
	call *parser.Call // the range function, or nil for a plain selector
	fn   *rangeFn     // call's function
	// filter, for a range function of each series, is the comparison its
	// result is filtered by next: the values it drops are not handed to
	// the engine (which still applies it).
	filter *comparison
	rng    time.Duration
	name   string // the metric name (range functions)
}

// finder says what findPushdowns may take.
type finder struct {
	rates     bool // functions that read start timestamps (they are off)
	perSeries bool // range functions outside an aggregation
	// filter is the comparison with a number that the expression at the
	// slot is the left side of, or nil.
	filter *comparison
}

// findPushdowns appends the aggregations and range function calls under
// *slot that can be pushed down; it does not look inside subqueries or
// step-invariant expressions (those evaluate at other times than the
// statement's steps).
func findPushdowns(slot *parser.Expr, f finder, out []pushdown) []pushdown {
	filter := f.filter
	f.filter = nil // below a node other than parentheses
	switch n := (*slot).(type) {
	case *parser.AggregateExpr:
		if p, ok := pushdownOf(n, f.rates); ok {
			p.slot = slot
			return append(out, p)
		}
		out = findPushdowns(&n.Expr, f, out)
		if n.Param != nil {
			out = findPushdowns(&n.Param, f, out)
		}
	case *parser.BinaryExpr:
		lhs := f
		if k, ok := numberLiteral(n.RHS); ok && n.Op.IsComparisonOperator() && !n.ReturnBool {
			lhs.filter = &comparison{op: n.Op, k: k}
		}
		out = findPushdowns(&n.LHS, lhs, out)
		out = findPushdowns(&n.RHS, f, out)
	case *parser.Call:
		if p, ok := rangeCallOf(n, f.rates); ok && f.perSeries {
			p.slot, p.filter = slot, filter
			return append(out, p)
		}
		for i := range n.Args {
			out = findPushdowns(&n.Args[i], f, out)
		}
	case *parser.ParenExpr:
		f.filter = filter
		out = findPushdowns(&n.Expr, f, out)
	case *parser.UnaryExpr:
		out = findPushdowns(&n.Expr, f, out)
	}
	return out
}

// comparison is a filtering comparison with a number ("> 0.5", no bool).
type comparison struct {
	op parser.ItemType
	k  float64
}

// keeps reports whether the comparison keeps the value v, as the engine's
// vector-scalar comparison does (Go's float comparisons: NaN only !=).
func (c *comparison) keeps(v float64) bool {
	switch c.op {
	case parser.EQLC:
		return v == c.k
	case parser.NEQ:
		return v != c.k
	case parser.GTR:
		return v > c.k
	case parser.LSS:
		return v < c.k
	case parser.GTE:
		return v >= c.k
	case parser.LTE:
		return v <= c.k
	}
	return true
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
		// The functions drop the metric name, so "by (__name__)" groups
		// by its absence; and the engine may delay that drop. Leave it to
		// it.
		if p, ok := rangeCallOf(n, rates); ok && !slices.Contains(agg.Grouping, labels.MetricName) {
			p.agg = agg
			return p, true
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
		// that look at their argument's selector, like absent() and
		// timestamp().
		pos := (*c.slot).PositionRange()
		*c.slot = &parser.ParenExpr{
			Expr:     &parser.VectorSelector{LabelMatchers: []*labels.Matcher{m}, PosRange: pos},
			PosRange: pos,
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
	if c.fn != nil {
		window = c.rng.Milliseconds()
	}
	mint := start - window + 1
	qr, err := x.src.Querier(mint, end)
	if err != nil {
		return nil, nil, false
	}
	defer qr.Close()
	ev := stepEval{start: start, interval: interval, steps: steps, window: window, fn: c.fn}
	hints := &storage.SelectHints{Start: mint, End: end, Step: interval, Range: c.rng.Milliseconds()}
	if c.call != nil {
		hints.Func = c.call.Func.Name
	}
	var (
		series []promql.Series
		output bool
	)
	if c.agg == nil {
		series, output, ok = ev.eachSeries(ctx, qr.Select(ctx, false, hints, c.vs.LabelMatchers...), c.filter, x.opts.MaxCells)
	} else {
		series, output, ok = x.aggregate(ctx, qr, hints, c, ev)
	}
	if !ok {
		return nil, nil, false
	}
	var annos annotations.Annotations
	if output && (c.fn != nil && (c.fn.kind == fnRate || c.fn.kind == fnIncrease)) && !counterName(c.name) {
		annos.Add(annotations.NewPossibleNonCounterInfo(c.name, c.call.Args[0].PositionRange()))
	}
	return series, annos, true
}

// aggregate evaluates the aggregation c with ev over the groups qr (a
// GroupQuerier) selects; output reports whether any series had a value.
func (x *pushdownQuery) aggregate(ctx context.Context, qr storage.Querier, hints *storage.SelectHints, c pushdown, ev stepEval) (_ []promql.Series, output, ok bool) {
	gq, isGroup := qr.(GroupQuerier)
	if !isGroup {
		return nil, false, false
	}
	hints.By, hints.Grouping = true, c.agg.Grouping
	if c.call == nil {
		hints.Func = c.agg.Op.String()
	}
	// With Step and Range 0 (an instant query's plain selector) the
	// storage may return only each series' latest sample: all it needs.
	groups, set, err := gq.SelectGroups(ctx, hints, c.agg.Grouping, c.vs.LabelMatchers...)
	if err != nil || len(groups)*ev.steps > x.opts.MaxCells {
		return nil, false, false
	}
	acc := aggregator{op: c.agg.Op, steps: ev.steps, cells: make([]cell, len(groups)*ev.steps)}
	// Groups are independent: shards of whole groups run in parallel and
	// each group's series still go into its cells in order. That pays for
	// decoding chunks (1.5x on two cores for a 1h rate); an instant query
	// reading the head's latest samples is bound by memory latency and
	// goes no faster split.
	shards := []storage.SeriesSet{set}
	decodes := c.fn != nil || ev.interval > 0
	if sh, ok := set.(sharder); ok && decodes && len(groups) > 1 && x.opts.Parallelism > 1 {
		shards = sh.Shards(x.opts.Parallelism)
	}
	type result struct{ output, ok bool }
	results := make([]result, len(shards))
	var wg sync.WaitGroup
	for i, sh := range shards {
		e := ev // each shard its own buffers
		if i == len(shards)-1 {
			results[i].output, results[i].ok = e.series(ctx, sh, &acc)
			continue
		}
		wg.Go(func() {
			results[i].output, results[i].ok = e.series(ctx, sh, &acc)
		})
	}
	wg.Wait()
	for _, r := range results {
		if !r.ok {
			return nil, false, false
		}
		output = output || r.output
	}
	return acc.series(groups, ev.start, ev.interval), output, true
}

// series adds the series of set (a GroupedSet) to acc: their values at the
// steps (instant selector) or their function's values. It reports whether
// any step had a value, and false when the aggregation must be left to the
// engine.
func (e *stepEval) series(ctx context.Context, set storage.SeriesSet, acc *aggregator) (output, ok bool) {
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
		if lset != nil && e.fn == nil {
			if t, f, ok := lset.Latest(); ok {
				e.point(t, f, math.MaxInt64, acc.op, g)
				continue
			}
		}
		it = set.At().Iterator(it)
		if e.fn == nil {
			if !e.instant(it, acc.op, g) {
				return false, false
			}
			continue
		}
		if !e.windows(it) {
			return false, false
		}
		for _, v := range e.vals {
			g[v.k].add(acc.op, v.f)
		}
		output = output || len(e.vals) > 0
	}
	return output, set.Err() == nil
}

// eachSeries evaluates the range function of each series of set, as the
// engine does: the series' labels without the metric name, its value at
// each step that has one, of those only the values filter keeps (a nil
// filter keeps all). output reports whether any series had a value. It
// returns false when the call must be left to the engine: a histogram
// sample, a label the engine would drop besides the name, more than
// maxCells steps × series, or an error.
func (e *stepEval) eachSeries(ctx context.Context, set storage.SeriesSet, filter *comparison, maxCells int) (_ []promql.Series, output, ok bool) {
	var (
		out   []promql.Series
		it    chunkenc.Iterator
		cells int
	)
	stale := math.Float64frombits(value.StaleNaN)
	for n := 0; set.Next(); n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return nil, false, false
		}
		s := set.At()
		it = s.Iterator(it)
		if !e.windows(it) {
			return nil, false, false
		}
		output = output || len(e.vals) > 0
		if filter != nil {
			e.vals = slices.DeleteFunc(e.vals, func(v stepValue) bool { return !filter.keeps(v.f) })
		}
		if len(e.vals) == 0 {
			continue
		}
		ls := s.Labels()
		m := ls.DropReserved(schema.IsMetadataLabel)
		if m.Len() != ls.Len()-1 { // __type__ or __unit__ too: two series might merge
			return nil, false, false
		}
		// A value at each step that has one, and a stale marker at the
		// first step after each run of them, so that a selector over the
		// series (with any lookback) reads exactly the function's values.
		pts := make([]promql.FPoint, 0, len(e.vals)+1)
		for i, v := range e.vals {
			pts = append(pts, promql.FPoint{T: e.start + int64(v.k)*e.interval, F: v.f})
			if next := v.k + 1; next < e.steps && (i+1 == len(e.vals) || e.vals[i+1].k != next) {
				pts = append(pts, promql.FPoint{T: e.start + int64(next)*e.interval, F: stale})
			}
		}
		if cells += len(pts); cells > maxCells {
			return nil, false, false
		}
		out = append(out, promql.Series{Metric: m, Floats: pts})
	}
	return out, output, set.Err() == nil
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
	window          int64    // lookback, or the range of fn (ms)
	fn              *rangeFn // the range function, or nil for a selector
	buf             []fpoint
	vals            []stepValue // fn's values of the last series (windows)
}

type fpoint struct {
	t int64
	f float64
}

// stepValue is a value at the step of index k.
type stepValue struct {
	k int
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

// windows evaluates e.fn over the series' samples at each step, into
// e.vals: at the step ts over the float samples in (ts-window, ts], stale
// markers dropped, as the engine's range selector reads them. It reports
// false on a histogram sample or a read error.
func (e *stepEval) windows(it chunkenc.Iterator) bool {
	e.buf, e.vals = e.buf[:0], e.vals[:0]
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat {
			return false
		}
		t, f := it.At()
		if !value.IsStaleNaN(f) {
			e.buf = append(e.buf, fpoint{t, f})
		}
	}
	if it.Err() != nil {
		return false
	}
	s := e.buf
	if len(s) == 0 {
		return true
	}
	lo, hi := 0, 0
	// A sample at t is in the windows of the steps in [t, t+window).
	last := e.firstStep(s[len(s)-1].t + e.window)
	for k := e.firstStep(s[0].t); k < last; k++ {
		ts := e.start + int64(k)*e.interval
		for hi < len(s) && s[hi].t <= ts {
			hi++
		}
		for lo < hi && s[lo].t <= ts-e.window {
			lo++
		}
		if lo == hi {
			continue
		}
		if f, ok := e.fn.eval(s[lo:hi], ts, e.window); ok {
			e.vals = append(e.vals, stepValue{k, f})
		}
	}
	return true
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

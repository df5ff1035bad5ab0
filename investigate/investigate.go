package investigate

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/weftdb/weft/query"
)

// Symptom is what an investigation starts from: a workload (a selector, or
// the context keys of an alert's labels, a PromQL expression's or a log
// query's selectors) and a time. Query, when set, is the symptom itself
// (an alert's expression); without it weft picks the workload's step rate
// or latency.
type Symptom struct {
	Query    string            `json:"query,omitempty"`
	Selector string            `json:"selector,omitempty"`
	LogQuery string            `json:"log_query,omitempty"`
	Alert    map[string]string `json:"alert,omitempty"`
	Time     time.Time         `json:"time"`
}

// Report is the answer of Investigate: the causes, most probable first.
type Report struct {
	Symptom SymptomReport `json:"symptom"`
	Start   time.Time     `json:"start"`
	End     time.Time     `json:"end"`
	Scope   Scope         `json:"scope"`
	Causes  []Cause       `json:"causes"`
	// Seconds is how long the investigation took.
	Seconds float64 `json:"seconds"`
	// Incident is the ID the investigation is kept under as an incident
	// (Incidents); empty when none is kept.
	Incident string `json:"incident,omitempty"`
}

// SymptomReport is the symptom as weft understood it.
type SymptomReport struct {
	Selector string              `json:"selector"`
	Query    string              `json:"query,omitempty"`
	Class    SymptomClass        `json:"class"`
	Onset    time.Time           `json:"onset"`
	Found    bool                `json:"onset_found"`
	Context  map[string][]string `json:"context"`
}

// Scope is what the investigation read.
type Scope struct {
	Series  int      `json:"series"`
	Streams int      `json:"log_streams"`
	Lines   int      `json:"log_lines"`
	Nodes   []string `json:"nodes,omitempty"`
}

// Where locates a cause; empty fields do not apply.
type Where struct {
	Nodes           []string `json:"nodes,omitempty"`
	GPUUUIDs        []string `json:"gpu_uuids,omitempty"`
	Ranks           []string `json:"ranks,omitempty"`
	Pods            []string `json:"pods,omitempty"`
	RunID           string   `json:"run_id,omitempty"`
	Team            string   `json:"team,omitempty"`
	Service         string   `json:"service,omitempty"`
	Model           string   `json:"model,omitempty"`
	Version         string   `json:"version,omitempty"`
	PreviousVersion string   `json:"previous_version,omitempty"`
	Dependency      string   `json:"dependency,omitempty"`
}

// Cause is one probable cause.
type Cause struct {
	Rank    int    `json:"rank"`
	Kind    Kind   `json:"kind"`
	Summary string `json:"summary"`
	Where   Where  `json:"where"`
	// Onset is when the change began; OnsetOffset its distance to the
	// symptom's onset in seconds (negative: before it).
	Onset       time.Time `json:"onset"`
	OnsetOffset float64   `json:"onset_offset_seconds"`
	// Magnitude is the largest deviation from the series' own baseline,
	// in robust standard deviations (capped at 1,000); PeerDeviation how
	// far that change stands out among the same series of its peers
	// (median / MAD), Shared that the cause is one thing every consumer
	// shares (it has no peers).
	Magnitude     float64    `json:"magnitude"`
	PeerDeviation float64    `json:"peer_deviation"`
	Shared        bool       `json:"shared,omitempty"`
	Score         float64    `json:"score"`
	Evidence      []Evidence `json:"evidence"`
}

// Evidence is one series or log pattern that shows a cause, with the
// query that opens it.
type Evidence struct {
	Signal   string    `json:"signal"` // metrics, logs
	What     string    `json:"what"`
	Query    string    `json:"query"`
	Onset    time.Time `json:"onset"`
	Baseline float64   `json:"baseline"`
	Value    float64   `json:"value"`
	Z        float64   `json:"z"`
}

// workloadKeys are the context keys a workload selector is made of when
// it comes from an alert or a query, most specific first: the first
// present wins.
var workloadKeys = []string{"run_id", "service", "service_name", "pod", "gpu_uuid", "node", "host", "model", "team"}

// Investigate ranks the probable causes of s (docs/investigation.md).
func (iv *Investigator) Investigate(ctx context.Context, s Symptom) (*Report, error) {
	t0 := time.Now()
	if iv.opts.Metrics == nil {
		return nil, fmt.Errorf("investigate: %w: no metric store", ErrUnavailable)
	}
	sel, text, err := iv.symptomSelector(s)
	if err != nil {
		return nil, err
	}
	at := s.Time
	if at.IsZero() {
		at = iv.opts.Now()
	}
	at = at.UTC()
	step := iv.opts.Step.Milliseconds()
	rep := &Report{Symptom: SymptomReport{Selector: text, Query: s.Query}}

	wc, err := iv.Context(ctx, text, at.Add(-iv.opts.Lead-iv.opts.Baseline), at)
	if err != nil {
		return nil, err
	}
	rep.Symptom.Context = wc.Context
	if rep.Symptom.Query == "" {
		rep.Symptom.Query = defaultSymptom(sel, wc)
	}

	// 1. The symptom's onset.
	onset, class, found, err := iv.symptomOnset(ctx, rep.Symptom.Query, at)
	if err != nil {
		return nil, err
	}
	rep.Symptom.Onset, rep.Symptom.Class, rep.Symptom.Found = onset, class, found

	// 2. The grid: a baseline before the cause window, which opens Lead
	// before the symptom's onset.
	from := onset.Add(-iv.opts.Lead)
	start := from.Add(-iv.opts.Baseline)
	g := grid{Start: start.UnixMilli(), Step: step}
	g.N = int((at.UnixMilli()-g.Start)/step) + 1
	fromIdx := int((from.UnixMilli() - g.Start) / step)
	rep.Start, rep.End = start, at

	// 3. Scope: the workload's series and every series of its nodes.
	sc, err := iv.Context(ctx, text, start, at)
	if err != nil {
		return nil, err
	}
	nodes := sc.Context["node"]
	rep.Scope.Nodes = nodes
	alts := slices.Clone(sel.alts)
	if len(nodes) > 0 {
		re := regexOf(nodes)
		for _, k := range []string{"node", "host"} {
			alts = append(alts, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, k, re)})
		}
	}
	noBuckets := labels.MustNewMatcher(labels.MatchNotRegexp, labels.MetricName, ".+_bucket")
	for i := range alts {
		alts[i] = append(slices.Clone(alts[i]), noBuckets)
	}
	ss, err := readSeries(ctx, iv.opts.Metrics, g, iv.opts.MaxSeries, alts...)
	if err != nil {
		return nil, err
	}
	rep.Scope.Series = len(ss)

	a := &analysis{iv: iv, g: g, from: fromIdx, onset: onset, class: class, wc: sc, cands: map[string]*candidate{}}
	a.series(ss)
	if err := a.logs(ctx, sel, start, from, at, &rep.Scope); err != nil {
		return nil, err
	}
	rep.Causes = a.rank()
	if inc := iv.incidentOfReport(s, sel, rep); inc != nil && iv.opts.Incidents != nil {
		// The answer stands without its record: a failed write is logged.
		if err := iv.record(ctx, inc); err != nil {
			iv.opts.Logger.Warn("incident not kept", "incident", inc.ID, "err", err)
		} else {
			rep.Incident = inc.ID
		}
	}
	rep.Seconds = time.Since(t0).Seconds()
	return rep, nil
}

// symptomSelector finds the workload of s.
func (iv *Investigator) symptomSelector(s Symptom) (selector, string, error) {
	if s.Selector != "" {
		sel, err := iv.parseSelector(s.Selector)
		return sel, s.Selector, err
	}
	var ms []*labels.Matcher
	switch {
	case len(s.Alert) > 0:
		ms = workloadMatchers(func(k string) string { return s.Alert[k] }, iv)
	case s.Query != "":
		expr, err := query.NewParser().ParseExpr(s.Query)
		if err != nil {
			return selector{}, "", invalid("query %q: %v", s.Query, err)
		}
		found := map[string]string{}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				for _, m := range vs.LabelMatchers {
					if m.Type == labels.MatchEqual && m.Value != "" {
						found[m.Name] = m.Value
					}
				}
			}
			return nil
		})
		ms = workloadMatchers(func(k string) string { return found[k] }, iv)
	case s.LogQuery != "":
		i := strings.IndexByte(s.LogQuery, '}')
		if i < 0 {
			return selector{}, "", invalid("log query %q: no stream selector", s.LogQuery)
		}
		lms, err := query.NewParser().ParseMetricSelector(s.LogQuery[:i+1])
		if err != nil {
			return selector{}, "", invalid("log query %q: %v", s.LogQuery, err)
		}
		found := map[string]string{}
		for _, m := range lms {
			if m.Type == labels.MatchEqual {
				found[m.Name] = m.Value
			}
		}
		ms = workloadMatchers(func(k string) string { return found[k] }, iv)
	}
	if len(ms) == 0 {
		return selector{}, "", invalid("no workload: give selector, or an alert, query or log query with a context label (%s)", strings.Join(workloadKeys, ", "))
	}
	text := matchersString(ms, false)
	return iv.newSelector(ms), text, nil
}

// workloadMatchers is the matcher of the most specific context key get
// knows (aliases resolved).
func workloadMatchers(get func(string) string, iv *Investigator) []*labels.Matcher {
	byCanon := map[string]string{}
	for _, k := range append(slices.Clone(workloadKeys), aliasNames(iv)...) {
		if v := get(k); v != "" {
			c, ok := iv.opts.Workload.Canonical(k)
			if !ok {
				c = k
			}
			if _, set := byCanon[c]; !set {
				byCanon[c] = v
			}
		}
	}
	for _, k := range workloadKeys {
		if v, ok := byCanon[k]; ok {
			return []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, k, v)}
		}
	}
	return nil
}

func aliasNames(iv *Investigator) []string {
	var out []string
	for _, k := range workloadKeys {
		out = append(out, iv.opts.Workload.Aliases(k)...)
	}
	return out
}

// defaultSymptom is the symptom of a workload given without a query: a
// training run's step rate, a service's p99 latency.
func defaultSymptom(sel selector, wc *WorkloadContext) string {
	has := map[string]bool{}
	for _, n := range wc.Metrics.Names {
		has[n.Name] = true
	}
	m := matchersString(sel.alts[0], true)
	switch {
	case has["training_step_total"]:
		return "sum(rate(training_step_total" + m + "[1m]))"
	case has["http_request_duration_seconds_count"]:
		return "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket" + m + "[1m])))"
	case has["vllm:e2e_request_latency_seconds_count"]:
		return `histogram_quantile(0.99, sum by (le) (rate({__name__="vllm:e2e_request_latency_seconds_bucket", ` + strings.Trim(m, "{}") + `}[1m])))`
	}
	return ""
}

// symptomOnset evaluates the symptom over the Lead + Baseline before at
// and finds its onset: the earliest lasting change of any of its series
// in the last Lead. Without a query, or without a change, it is at.
func (iv *Investigator) symptomOnset(ctx context.Context, q string, at time.Time) (time.Time, SymptomClass, bool, error) {
	if q == "" || iv.opts.Engine == nil {
		return at, SymptomNone, false, nil
	}
	start := at.Add(-iv.opts.Lead - iv.opts.Baseline)
	q = alertValue(q)
	rq, err := iv.opts.Engine.NewRangeQuery(ctx, iv.opts.Metrics, nil, q, start, at, iv.opts.Step)
	if err != nil {
		return time.Time{}, "", false, invalid("symptom query %q: %v", q, err)
	}
	defer rq.Close()
	res := rq.Exec(ctx)
	if res.Err != nil {
		return time.Time{}, "", false, fmt.Errorf("symptom query: %w", res.Err)
	}
	var m promql.Matrix
	switch v := res.Value.(type) {
	case promql.Matrix:
		m = v
	default:
		return time.Time{}, "", false, invalid("symptom query %q: not a range vector expression", q)
	}
	g := grid{Start: start.UnixMilli(), Step: iv.opts.Step.Milliseconds()}
	g.N = int((at.UnixMilli()-g.Start)/g.Step) + 1
	from := int(iv.opts.Baseline.Milliseconds() / g.Step)
	best, bestC, bestLast := -1, change{}, math.NaN()
	for _, s := range m {
		v := make([]float64, g.N)
		for i := range v {
			v[i] = math.NaN()
		}
		for _, p := range s.Floats {
			if i := int((p.T - g.Start) / g.Step); i >= 0 && i < g.N {
				v[i] = p.F
			}
		}
		c := detect(v, from, 1e-9)
		if c.onset >= 0 && (best < 0 || c.onset < best) {
			best, bestC = c.onset, c
			if f := finite(v); len(f) > 0 {
				bestLast = f[len(f)-1]
			}
		}
	}
	if best < 0 {
		return at, SymptomNone, false, nil
	}
	// The class is where the symptom is now: a rate that has fallen to
	// nothing stalled, even while its window still averages the fall.
	class := SymptomRise
	if bestC.post < bestC.base {
		class = SymptomSlowdown
		if min(bestC.post, bestLast) <= 0.25*bestC.base {
			class = SymptomStall
		}
	}
	return time.UnixMilli(g.at(best)).UTC(), class, true, nil
}

// alertValue is the value an alert's condition compares: "x > 5" and
// "x == 0" filter x, whose course is what shows the onset.
func alertValue(q string) string {
	expr, err := query.NewParser().ParseExpr(q)
	if err != nil {
		return q
	}
	for {
		if p, ok := expr.(*parser.ParenExpr); ok {
			expr = p.Expr
			continue
		}
		break
	}
	b, ok := expr.(*parser.BinaryExpr)
	if !ok || !b.Op.IsComparisonOperator() || b.ReturnBool {
		return q
	}
	if _, ok := b.RHS.(*parser.NumberLiteral); ok {
		return b.LHS.String()
	}
	if _, ok := b.LHS.(*parser.NumberLiteral); ok {
		return b.RHS.String()
	}
	return q
}

// regexOf is an anchored alternation of literal values.
func regexOf(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = regexpQuote(v)
	}
	return strings.Join(q, "|")
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// selectorOf is the PromQL selector of a series by some of its labels.
func selectorOf(name string, ls labels.Labels, keys ...string) string {
	var parts []string
	for _, k := range keys {
		if v := ls.Get(k); v != "" {
			parts = append(parts, k+"="+strconv.Quote(v))
		}
	}
	if strings.ContainsAny(name, ":") || !strings.ContainsFunc(name, func(r rune) bool { return r != '_' }) {
		parts = append([]string{"__name__=" + strconv.Quote(name)}, parts...)
		name = ""
	}
	return name + "{" + strings.Join(parts, ", ") + "}"
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, naturalCompare)
	return out
}

func cmpCause(a, b Cause) int {
	return cmp.Or(cmp.Compare(b.Score, a.Score), a.Onset.Compare(b.Onset), cmp.Compare(a.Summary, b.Summary))
}

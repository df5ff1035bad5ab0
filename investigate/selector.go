package investigate

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/query"
)

// sameKeys are canonical keys that name one thing in different sources: a
// Kubernetes node is the host its GPUs report (weft-agent and dcgm-exporter
// say Hostname → host, trainers and kubelet say node), and a service is
// service_name on OTLP streams. A selector on one matches the others.
var sameKeys = map[string][]string{
	"node": {"node", "host"}, "host": {"host", "node"},
	"service": {"service", "service_name"}, "service_name": {"service_name", "service"},
}

// selector is a parsed workload selector: its alternatives (the selector
// with each same-key spelling) are OR-ed.
type selector struct {
	ms   []*labels.Matcher // canonical names
	alts [][]*labels.Matcher
}

// parseSelector parses a Prometheus selector ({run_id="r42"}, or
// name{...}) and resolves aliases to canonical keys.
func (iv *Investigator) parseSelector(s string) (selector, error) {
	if strings.TrimSpace(s) == "" {
		return selector{}, invalid("empty selector")
	}
	ms, err := query.NewParser().ParseMetricSelector(s)
	if err != nil {
		return selector{}, invalid("selector %q: %v", s, err)
	}
	return iv.newSelector(ms), nil
}

func (iv *Investigator) newSelector(ms []*labels.Matcher) selector {
	out := make([]*labels.Matcher, 0, len(ms))
	for _, m := range ms {
		if c, ok := iv.opts.Workload.Canonical(m.Name); ok && c != m.Name {
			nm, err := labels.NewMatcher(m.Type, c, m.Value)
			if err == nil {
				m = nm
			}
		}
		out = append(out, m)
	}
	alts := [][]*labels.Matcher{out}
	for i, m := range out {
		keys, ok := sameKeys[m.Name]
		if !ok || m.Matches("") {
			continue
		}
		var next [][]*labels.Matcher
		for _, a := range alts {
			for _, k := range keys {
				b := slices.Clone(a)
				nm, _ := labels.NewMatcher(m.Type, k, m.Value)
				b[i] = nm
				next = append(next, b)
			}
		}
		alts = next
	}
	return selector{ms: out, alts: alts}
}

// postings returns the streams of kind any alternative of sel matches in
// [mint, maxt] (ms).
func (iv *Investigator) postings(ctx context.Context, kind index.Kind, sel selector, mint, maxt int64) (*roaring64.Bitmap, error) {
	res := roaring64.New()
	for _, a := range sel.alts {
		bm, err := iv.opts.Index.Postings(ctx, kind, mint, maxt, a...)
		if err != nil {
			return nil, err
		}
		res.Or(bm)
	}
	return res, nil
}

// promQL is the PromQL selector of sel: one selector per alternative,
// joined with "or".
func (sel selector) promQL(name string) string {
	parts := make([]string, 0, len(sel.alts))
	for _, a := range sel.alts {
		parts = append(parts, name+matchersString(a, name != ""))
	}
	return strings.Join(parts, " or ")
}

// logQL is the LogQL stream selector of each alternative.
func (sel selector) logQL() []string {
	out := make([]string, 0, len(sel.alts))
	for _, a := range sel.alts {
		out = append(out, matchersString(a, true))
	}
	return out
}

func matchersString(ms []*labels.Matcher, dropName bool) string {
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for _, m := range ms {
		if dropName && m.Name == labels.MetricName {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.String())
		n++
	}
	b.WriteByte('}')
	return b.String()
}

// traceQL is the TraceQL spanset filter of sel: each key as the resource
// attribute OpenTelemetry names it (run_id → resource.ai.run.id).
func (iv *Investigator) traceQL(sel selector) string {
	var conds []string
	for _, m := range sel.ms {
		if m.Name == labels.MetricName {
			continue
		}
		conds = append(conds, iv.traceAttr(m.Name)+" "+traceOp(m.Type)+" "+strconv.Quote(m.Value))
	}
	if len(conds) == 0 {
		return "{ }"
	}
	return "{ " + strings.Join(conds, " && ") + " }"
}

func (iv *Investigator) traceAttr(name string) string {
	switch name {
	case "service", "service_name":
		return "resource.service.name"
	case "node":
		return "resource.k8s.node.name"
	}
	for _, a := range iv.opts.Workload.Aliases(name) {
		if strings.Contains(a, ".") {
			return "resource." + a
		}
	}
	return "resource." + name
}

func traceOp(t labels.MatchType) string {
	switch t {
	case labels.MatchNotEqual:
		return "!="
	case labels.MatchRegexp:
		return "=~"
	case labels.MatchNotRegexp:
		return "!~"
	}
	return "="
}

type vectorSelector = parser.VectorSelector

func newParser() parser.Parser { return query.NewParser() }

// addMatchers adds ms to every vector selector of expr that does not
// match their names already.
func addMatchers(expr parser.Expr, ms []*labels.Matcher) {
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, m := range ms {
			if m.Name == labels.MetricName {
				continue
			}
			dup := false
			for _, o := range vs.LabelMatchers {
				if o.Name == m.Name {
					dup = true
				}
			}
			if !dup {
				vs.LabelMatchers = append(vs.LabelMatchers, m)
			}
		}
		return nil
	})
}

// promDuration writes d as PromQL does (5m, 90s).
func promDuration(d time.Duration) string {
	return model.Duration(d).String()
}

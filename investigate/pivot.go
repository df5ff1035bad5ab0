package investigate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
)

// PivotRequest names one item of one signal: a series or a log stream (a
// selector), an alert (its labels) or a span (its resource attributes).
// Exactly one of Series, Stream, Alert and Resource is set.
type PivotRequest struct {
	Series   string
	Stream   string
	Alert    map[string]string
	Resource map[string]string
	Start    time.Time
	End      time.Time
}

// PivotAnswer is the item's workload context and, per context key it
// carries, the other signals of that workload in the window.
type PivotAnswer struct {
	From   map[string]string `json:"from"`
	Pivots []Pivot           `json:"pivots"`
}

// Pivot is the signals of one context key's value.
type Pivot struct {
	Key      string   `json:"key"`
	Value    string   `json:"value"`
	Selector string   `json:"selector"`
	Series   int      `json:"series"`
	Streams  int      `json:"log_streams"`
	Traces   int      `json:"trace_streams"`
	PromQL   string   `json:"promql"`
	LogQL    []string `json:"logql"`
	TraceQL  string   `json:"traceql"`
}

// pivotKeys are the keys pivoted on, most specific workload first.
var pivotKeys = []string{"run_id", "service", "pod", "gpu_uuid", "rank", "node", "model_version", "model", "dataset", "team", "namespace"}

// maxPivotStreams bounds the streams a selector's context is read from.
const maxPivotStreams = 1000

// Pivot answers r.
func (iv *Investigator) Pivot(ctx context.Context, r PivotRequest) (*PivotAnswer, error) {
	if r.End.Before(r.Start) {
		return nil, invalid("end before start")
	}
	n := 0
	for _, set := range []bool{r.Series != "", r.Stream != "", len(r.Alert) > 0, len(r.Resource) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, invalid("give exactly one of series, stream, alert, resource")
	}
	from := map[string]string{}
	switch {
	case r.Series != "" || r.Stream != "":
		kind, s := index.KindMetric, r.Series
		if r.Stream != "" {
			kind, s = index.KindLog, r.Stream
		}
		sel, err := iv.parseSelector(s)
		if err != nil {
			return nil, err
		}
		if err := iv.itemContext(ctx, kind, sel, r.Start, r.End, from); err != nil {
			return nil, err
		}
	default:
		src := r.Alert
		if len(src) == 0 {
			src = r.Resource
		}
		for k, v := range src {
			if v == "" {
				continue
			}
			c, ok := iv.opts.Workload.Canonical(k)
			switch {
			case k == "service.name" || k == "service_name":
				c, ok = "service", true
			case !ok:
				c, ok = k, isContextKey(k) || k == "host"
			}
			if c == "host" {
				c = "node"
			}
			if ok {
				from[c] = v
			}
		}
	}
	ans := &PivotAnswer{From: from, Pivots: []Pivot{}}
	for _, k := range pivotKeys {
		v, ok := from[k]
		if !ok {
			continue
		}
		text := "{" + k + "=" + strconv.Quote(v) + "}"
		wc, err := iv.Context(ctx, text, r.Start, r.End)
		if err != nil {
			return nil, err
		}
		ans.Pivots = append(ans.Pivots, Pivot{Key: k, Value: v, Selector: text, Series: wc.Metrics.Series, Streams: wc.Logs.Streams,
			Traces: wc.Traces.Streams, PromQL: wc.Metrics.Query, LogQL: wc.Logs.Queries, TraceQL: wc.Traces.Query})
	}
	return ans, nil
}

// itemContext records the context keys whose value is one and the same on
// every stream sel matches.
func (iv *Investigator) itemContext(ctx context.Context, kind index.Kind, sel selector, start, end time.Time, into map[string]string) error {
	bm, err := iv.postings(ctx, kind, sel, start.UnixMilli(), end.UnixMilli())
	if err != nil {
		return fmt.Errorf("pivot: %w", err)
	}
	if bm.IsEmpty() {
		return invalid("no %s matches %s in the window", kindWord(kind), matchersString(sel.ms, false))
	}
	vals := map[string]map[string]struct{}{}
	var b labels.ScratchBuilder
	it := bm.Iterator()
	for n := 0; it.HasNext() && n < maxPivotStreams; n++ {
		if ls, ok := iv.opts.Index.Labels(index.ID(it.Next()), &b); ok {
			addContext(vals, ls)
		}
	}
	for k, vs := range vals {
		if len(vs) == 1 && slices.Contains(pivotKeys, k) {
			for v := range vs {
				into[k] = v
			}
		}
	}
	return nil
}

func kindWord(k index.Kind) string {
	if k == index.KindLog {
		return "log stream"
	}
	return "series"
}

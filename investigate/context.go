package investigate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/logstore"
)

// ContextKeys are the keys a workload context reports, in order: the
// canonical workload keys, with node standing for node and host, and
// service for service and service_name.
var ContextKeys = []string{"run_id", "model", "model_version", "dataset", "team", "namespace", "service", "node", "gpu_uuid", "rank", "pod", "container", "cluster"}

// maxContextValues bounds the values reported per key.
const maxContextValues = 1000

// WorkloadContext is what the shared index knows of a selector's workload
// in a time range, across signals.
type WorkloadContext struct {
	Selector string    `json:"selector"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Context holds the values of each context key (ContextKeys) the
	// workload's series, streams and trace resources carry.
	Context map[string][]string `json:"context"`
	Metrics MetricsContext      `json:"metrics"`
	Logs    LogsContext         `json:"logs"`
	Traces  TracesContext       `json:"traces"`
	// Truncated says a key had more than 1,000 values and was cut.
	Truncated bool `json:"truncated,omitempty"`
}

// NameCount is one name and how many series or streams carry it.
type NameCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// MetricsContext is the workload's metric series.
type MetricsContext struct {
	Series int         `json:"series"`
	Names  []NameCount `json:"names"`
	Query  string      `json:"promql"`
}

// LogsContext is the workload's log streams and their volume in the range
// (counted from chunk headers, not by reading lines).
type LogsContext struct {
	Streams int         `json:"streams"`
	Entries uint64      `json:"entries"`
	Bytes   uint64      `json:"bytes"`
	ByJob   []LogVolume `json:"by_job,omitempty"`
	// Levels counts the streams' entries by their level label (level or
	// detected_level), where the streams carry one.
	Levels  map[string]uint64 `json:"levels,omitempty"`
	Queries []string          `json:"logql"`
}

// LogVolume is the volume of the streams of one job (or source).
type LogVolume struct {
	Job     string `json:"job"`
	Streams int    `json:"streams"`
	Entries uint64 `json:"entries"`
	Bytes   uint64 `json:"bytes"`
}

// TracesContext is the workload's trace streams (one per resource and
// partition) by service.
type TracesContext struct {
	Streams  int         `json:"streams"`
	Services []NameCount `json:"services"`
	Query    string      `json:"traceql"`
}

// Context answers what the index knows of the streams matching selector
// (aliases resolved) in [start, end].
func (iv *Investigator) Context(ctx context.Context, selector string, start, end time.Time) (*WorkloadContext, error) {
	if end.Before(start) {
		return nil, invalid("end %s before start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	sel, err := iv.parseSelector(selector)
	if err != nil {
		return nil, err
	}
	wc := &WorkloadContext{Selector: selector, Start: start.UTC(), End: end.UTC(), Context: map[string][]string{}}
	bm, err := iv.postings(ctx, index.KindAny, sel, start.UnixMilli(), end.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("context: %w", err)
	}
	vals := map[string]map[string]struct{}{}
	names := map[string]int{}
	services := map[string]int{}
	var b labels.ScratchBuilder
	it := bm.Iterator()
	for n := 0; it.HasNext(); n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		id := index.ID(it.Next())
		kind, ok := iv.opts.Index.StreamKind(id)
		if !ok {
			continue
		}
		ls, ok := iv.opts.Index.Labels(id, &b)
		if !ok {
			continue
		}
		addContext(vals, ls)
		switch kind {
		case index.KindMetric:
			wc.Metrics.Series++
			names[ls.Get(labels.MetricName)]++
		case index.KindTrace:
			wc.Traces.Streams++
			services[cmp.Or(ls.Get("service_name"), ls.Get("service"))]++
		}
	}
	for _, k := range ContextKeys {
		if len(vals[k]) == 0 {
			continue
		}
		vs := make([]string, 0, len(vals[k]))
		for v := range vals[k] {
			vs = append(vs, v)
		}
		slices.SortFunc(vs, naturalCompare)
		if len(vs) > maxContextValues {
			vs, wc.Truncated = vs[:maxContextValues], true
		}
		wc.Context[k] = vs
	}
	wc.Metrics.Names = sortedCounts(names)
	wc.Metrics.Query = sel.promQL("")
	wc.Traces.Services = sortedCounts(services)
	wc.Traces.Query = iv.traceQL(sel)
	wc.Logs.Queries = sel.logQL()
	if err := iv.logVolume(ctx, sel, start, end, &wc.Logs); err != nil {
		return nil, err
	}
	return wc, nil
}

// logVolume fills lc from the log store's chunk headers.
func (iv *Investigator) logVolume(ctx context.Context, sel selector, start, end time.Time, lc *LogsContext) error {
	if iv.opts.Logs == nil {
		return nil
	}
	jobs := map[string]*LogVolume{}
	seen := map[uint64]struct{}{}
	for _, a := range sel.alts {
		if !selectsStreams(a) {
			continue
		}
		err := iv.opts.Logs.EachStreamTotal(ctx, start.UnixNano(), end.UnixNano()+1, a, func(ls labels.Labels, t logstore.Stats) {
			h := ls.Hash()
			if _, dup := seen[h]; dup {
				return
			}
			seen[h] = struct{}{}
			lc.Streams++
			lc.Entries += t.Entries
			lc.Bytes += t.Bytes
			job := cmp.Or(ls.Get("job"), ls.Get("service_name"), ls.Get("source"))
			v := jobs[job]
			if v == nil {
				v = &LogVolume{Job: job}
				jobs[job] = v
			}
			v.Streams++
			v.Entries += t.Entries
			v.Bytes += t.Bytes
			if lvl := cmp.Or(ls.Get("level"), ls.Get("detected_level")); lvl != "" {
				if lc.Levels == nil {
					lc.Levels = map[string]uint64{}
				}
				lc.Levels[lvl] += t.Entries
			}
		})
		if err != nil {
			return fmt.Errorf("log volume: %w", err)
		}
	}
	for _, v := range jobs {
		lc.ByJob = append(lc.ByJob, *v)
	}
	slices.SortFunc(lc.ByJob, func(a, b LogVolume) int {
		return cmp.Or(cmp.Compare(b.Entries, a.Entries), cmp.Compare(a.Job, b.Job))
	})
	return nil
}

// selectsStreams reports whether ms is a valid log stream selector: at
// least one matcher that does not match the empty value.
func selectsStreams(ms []*labels.Matcher) bool {
	for _, m := range ms {
		if m.Name != labels.MetricName && !m.Matches("") {
			return true
		}
	}
	return false
}

// addContext records ls's context values.
func addContext(vals map[string]map[string]struct{}, ls labels.Labels) {
	ls.Range(func(l labels.Label) {
		k := l.Name
		switch k {
		case "host":
			k = "node"
		case "service_name":
			k = "service"
		}
		if !isContextKey(k) || l.Value == "" {
			return
		}
		m := vals[k]
		if m == nil {
			m = map[string]struct{}{}
			vals[k] = m
		}
		m[l.Value] = struct{}{}
	})
}

func isContextKey(k string) bool { return slices.Contains(ContextKeys, k) }

func sortedCounts(m map[string]int) []NameCount {
	out := make([]NameCount, 0, len(m))
	for n, c := range m {
		out = append(out, NameCount{Name: n, Count: c})
	}
	slices.SortFunc(out, func(a, b NameCount) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name)) })
	return out
}

// naturalCompare orders strings with their digit runs as numbers (node-2
// before node-10, rank 9 before 10).
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitsPrefix(a), digitsPrefix(b)
		if da > 0 && db > 0 {
			na, nb := trimZeros(a[:da]), trimZeros(b[:db])
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), cmp.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitsPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

package api

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage/logstore"
)

// labelsLookback is the default range of the label and series endpoints
// (Loki's: six hours).
const labelsLookback = 6 * time.Hour

func (a *lokiAPI) labelNames(w http.ResponseWriter, r *http.Request) {
	start, end, ms, ok := a.rangeAndSelector(w, r, labelsLookback)
	if !ok {
		return
	}
	names, err := a.store.LabelNames(r.Context(), start, end+1, ms...)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	writeJSON(w, appendStringList([]byte(`{"status":"success","data":`), names))
}

func (a *lokiAPI) labelValues(w http.ResponseWriter, r *http.Request) {
	start, end, ms, ok := a.rangeAndSelector(w, r, labelsLookback)
	if !ok {
		return
	}
	vals, err := a.store.LabelValues(r.Context(), r.PathValue("name"), start, end+1, ms...)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	writeJSON(w, appendStringList([]byte(`{"status":"success","data":`), vals))
}

func (a *lokiAPI) series(w http.ResponseWriter, r *http.Request) {
	start, end, err := a.rangeParams(r, labelsLookback)
	if err != nil {
		a.badRequest(w, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		a.badRequest(w, err)
		return
	}
	matches := append(r.Form["match[]"], r.Form["match"]...)
	if len(matches) == 0 {
		matches = []string{""}
	}
	seen := map[string]bool{}
	var out []labels.Labels
	for _, m := range matches {
		ms, err := selectorMatchers(m)
		if err != nil {
			a.queryError(w, r, err)
			return
		}
		ss, err := a.store.Series(r.Context(), start, end+1, ms...)
		if err != nil {
			a.queryError(w, r, err)
			return
		}
		for _, ls := range ss {
			if k := ls.String(); !seen[k] {
				seen[k] = true
				out = append(out, ls)
			}
		}
	}
	slices.SortFunc(out, labels.Compare)
	b := []byte(`{"status":"success","data":[`)
	for i, ls := range out {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLabelMap(b, ls)
	}
	writeJSON(w, append(b, "]}"...))
}

func (a *lokiAPI) indexStats(w http.ResponseWriter, r *http.Request) {
	start, end, ms, ok := a.rangeAndSelector(w, r, a.opts.DefaultLookback)
	if !ok {
		return
	}
	st, err := a.store.Stats(r.Context(), start, end+1, ms...)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	writeJSON(w, fmt.Appendf(nil, `{"streams":%d,"chunks":%d,"bytes":%d,"entries":%d}`, st.Streams, st.Chunks, st.Bytes, st.Entries))
}

// volumeParams are the parameters of index/volume and index/volume_range.
type volumeParams struct {
	start, end int64
	ms         []*labels.Matcher
	targets    []string
	byLabels   bool
	limit      int
}

func (a *lokiAPI) volumeParams(r *http.Request) (volumeParams, error) {
	var p volumeParams
	var err error
	if p.start, p.end, err = a.rangeParams(r, a.opts.DefaultLookback); err != nil {
		return p, err
	}
	if p.ms, err = selectorMatchers(r.FormValue("query")); err != nil {
		return p, err
	}
	if p.limit, err = a.limitParam(r, 100); err != nil {
		return p, err
	}
	if t := r.FormValue("targetLabels"); t != "" {
		for _, n := range strings.Split(t, ",") {
			if n = strings.TrimSpace(n); n != "" {
				p.targets = append(p.targets, n)
			}
		}
	} else {
		for _, m := range p.ms {
			if !slices.Contains(p.targets, m.Name) {
				p.targets = append(p.targets, m.Name)
			}
		}
	}
	switch r.FormValue("aggregateBy") {
	case "", "series":
	case "labels":
		p.byLabels = true
	default:
		return p, fmt.Errorf("%w: invalid aggregateBy %q", errBadParam, r.FormValue("aggregateBy"))
	}
	return p, nil
}

// volumeKeys returns the groups a stream's bytes count toward.
func (p volumeParams) volumeKeys(ls labels.Labels) []labels.Labels {
	if p.byLabels {
		var out []labels.Labels
		for _, n := range p.targets {
			if v := ls.Get(n); v != "" {
				out = append(out, labels.FromStrings(n, v))
			}
		}
		return out
	}
	b := labels.NewBuilder(labels.EmptyLabels())
	for _, n := range p.targets {
		if v := ls.Get(n); v != "" {
			b.Set(n, v)
		}
	}
	if len(p.targets) == 0 {
		return []labels.Labels{ls}
	}
	return []labels.Labels{b.Labels()}
}

func (a *lokiAPI) volume(w http.ResponseWriter, r *http.Request) {
	p, err := a.volumeParams(r)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	sums := map[string]*logql.Sample{}
	err = a.store.EachStreamTotal(r.Context(), p.start, p.end+1, p.ms, func(ls labels.Labels, t logstore.Stats) {
		for _, k := range p.volumeKeys(ls) {
			s := sums[k.String()]
			if s == nil {
				s = &logql.Sample{Labels: k, T: p.end}
				sums[k.String()] = s
			}
			s.V += float64(t.Bytes)
		}
	})
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	vec := make([]logql.Sample, 0, len(sums))
	for _, s := range sums {
		vec = append(vec, *s)
	}
	slices.SortFunc(vec, func(x, y logql.Sample) int {
		if c := cmp.Compare(y.V, x.V); c != 0 {
			return c
		}
		return labels.Compare(x.Labels, y.Labels)
	})
	if len(vec) > p.limit {
		vec = vec[:p.limit]
	}
	writeJSON(w, appendQueryResponse(nil, &logql.Result{Type: logql.ValueTypeVector, Vector: vec}, logql.Forward, false))
}

func (a *lokiAPI) volumeRange(w http.ResponseWriter, r *http.Request) {
	p, err := a.volumeParams(r)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	step := defaultStep(p.start, p.end)
	if v := r.FormValue("step"); v != "" {
		if step, err = lokiDuration(v); err != nil || step <= 0 {
			a.badRequest(w, fmt.Errorf("%w: invalid step %q", errBadParam, v))
			return
		}
	}
	st := int64(step)
	if (p.end-p.start)/st > 11000 {
		a.badRequest(w, fmt.Errorf("%w: exceeded maximum resolution of 11,000 points per timeseries", errBadParam))
		return
	}
	// Point t covers (t-step, t]; points at start, start+step, ... <= end.
	series := map[string]*logql.Series{}
	totals := map[string]float64{}
	var keys []labels.Labels
	err = a.store.EachEntry(r.Context(), logql.SelectParams{Start: p.start - st + 1, End: p.end + 1, Matchers: p.ms},
		func(ls labels.Labels, newStream bool, e logql.Entry) {
			if newStream {
				keys = p.volumeKeys(ls)
			}
			k := (e.Timestamp - p.start + st - 1) / st
			if e.Timestamp < p.start {
				k = 0
			}
			t := p.start + k*st
			for _, key := range keys {
				ks := key.String()
				s := series[ks]
				if s == nil {
					s = &logql.Series{Labels: key}
					series[ks] = s
				}
				if n := len(s.Points); n > 0 && s.Points[n-1].T == t {
					s.Points[n-1].V += float64(len(e.Line))
				} else {
					s.Points = append(s.Points, logql.Point{T: t, V: float64(len(e.Line))})
				}
				totals[ks] += float64(len(e.Line))
			}
		}, nil)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	mat := make([]logql.Series, 0, len(series))
	for _, s := range series {
		// Several streams feed one group: merge their points by time.
		slices.SortStableFunc(s.Points, func(x, y logql.Point) int { return cmp.Compare(x.T, y.T) })
		merged := s.Points[:0]
		for _, pt := range s.Points {
			if n := len(merged); n > 0 && merged[n-1].T == pt.T {
				merged[n-1].V += pt.V
			} else {
				merged = append(merged, pt)
			}
		}
		s.Points = merged
		mat = append(mat, *s)
	}
	slices.SortFunc(mat, func(x, y logql.Series) int {
		if c := cmp.Compare(totals[y.Labels.String()], totals[x.Labels.String()]); c != 0 {
			return c
		}
		return labels.Compare(x.Labels, y.Labels)
	})
	if len(mat) > p.limit {
		mat = mat[:p.limit]
	}
	slices.SortFunc(mat, func(x, y logql.Series) int { return labels.Compare(x.Labels, y.Labels) })
	writeJSON(w, appendQueryResponse(nil, &logql.Result{Type: logql.ValueTypeMatrix, Matrix: mat}, logql.Forward, false))
}

func appendStringList(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, "]}"...)
}

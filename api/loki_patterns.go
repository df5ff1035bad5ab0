package api

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/weftdb/weft/query/logpattern"
	"github.com/weftdb/weft/query/logql"
)

// patternLevelKey is the structured-metadata pair the ingesters set on
// every line; patterns are mined per level, as Loki does, so that each
// pattern has one level.
const patternLevelKey = "detected_level"

// maxPatternLevels bounds the miners of one request: ingest keeps level
// values it does not know as given, so a request could see many. Lines of
// further levels are mined as "unknown".
const maxPatternLevels = 32

// patterns serves /loki/api/v1/patterns: it reads the lines of the stream
// selector in query between start and end (at most PatternMaxLines, in the
// store's stream order), mines them per detected_level with a
// logpattern.Miner, and answers
//
//	{"status":"success","data":[{"pattern":"...","level":"info","samples":[[<unix s>,<count>],...]},...]}
//
// with the patterns that cover the most lines first (at most
// Patterns.MaxClusters), each sample the count of lines in [t, t+step),
// t a multiple of step (whole seconds, at least one).
func (a *lokiAPI) patterns(w http.ResponseWriter, r *http.Request) {
	start, end, ms, ok := a.rangeAndSelector(w, r, a.opts.DefaultLookback)
	if !ok {
		return
	}
	if len(ms) == 0 {
		a.badRequest(w, fmt.Errorf("%w: query must be a stream selector", errBadParam))
		return
	}
	step := defaultStep(start, end)
	if v := r.FormValue("step"); v != "" {
		d, err := lokiDuration(v)
		if err != nil {
			a.badRequest(w, err)
			return
		}
		if d <= 0 {
			a.badRequest(w, fmt.Errorf("%w: zero or negative query resolution step widths are not accepted. Try a positive integer", errBadParam))
			return
		}
		step = d
	}
	step = max(step.Round(time.Second), time.Second)
	if step < time.Duration(end-start)/11000 {
		a.badRequest(w, fmt.Errorf("%w: exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)", errBadParam))
		return
	}

	it, err := a.store.Select(r.Context(), logql.SelectParams{Start: start, End: end + 1, Matchers: ms, Direction: logql.Forward})
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	defer it.Close()
	miners := map[string]*logpattern.Miner{}
	stepNs := int64(step)
	read := 0
	for it.Next() {
		if read >= a.opts.PatternMaxLines {
			a.log.Debug("loki_patterns_line_limit", "limit", a.opts.PatternMaxLines)
			break
		}
		read++
		if read%4096 == 0 {
			if err := r.Context().Err(); err != nil {
				a.queryError(w, r, err)
				return
			}
		}
		_, e := it.At()
		level := e.Metadata.Get(patternLevelKey)
		if level == "" {
			level = "unknown"
		}
		m := miners[level]
		if m == nil && len(miners) >= maxPatternLevels {
			level = "unknown"
			m = miners[level]
		}
		if m == nil {
			m = logpattern.New(a.opts.Patterns)
			miners[level] = m
		}
		m.Add(e.Line, floorDiv(e.Timestamp, stepNs)*stepNs)
	}
	if err := it.Err(); err != nil {
		a.queryError(w, r, err)
		return
	}

	type levelPattern struct {
		level string
		logpattern.Pattern
	}
	var all []levelPattern
	for level, m := range miners {
		for _, p := range m.Patterns() {
			all = append(all, levelPattern{level, p})
		}
	}
	slices.SortFunc(all, func(x, y levelPattern) int {
		if c := cmp.Compare(y.Total, x.Total); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Text, y.Text); c != 0 {
			return c
		}
		return cmp.Compare(x.level, y.level)
	})
	if n := a.opts.Patterns.MaxClusters; len(all) > n {
		all = all[:n]
	}
	b := []byte(`{"status":"success","data":[`)
	for i, p := range all {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"pattern":`...)
		b = appendJSONString(b, p.Text)
		b = append(b, `,"level":`...)
		b = appendJSONString(b, p.level)
		b = append(b, `,"samples":[`...)
		for j, s := range p.Samples {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, s.T/int64(time.Second), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, s.Count, 10)
			b = append(b, ']')
		}
		b = append(b, "]}"...)
	}
	writeJSON(w, append(b, "]}"...))
}

// floorDiv is a/b rounded towards negative infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

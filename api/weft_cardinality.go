package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/query"
)

// Bounds of /weft/api/v1/cardinality.
const (
	// cardinalityDefaultLimit and cardinalityMaxLimit are status/tsdb's.
	cardinalityDefaultLimit = 10
	cardinalityMaxLimit     = 10000
	// cardinalityWindow is the default range, as status/tsdb's: the last day.
	cardinalityWindow = 24 * time.Hour
	// cardinalityMaxSeries bounds the series one request counts; beyond it
	// the answer says "truncated".
	cardinalityMaxSeries = 1_000_000
	// cardinalityCheckEvery is how many series are counted between checks
	// of the request's context.
	cardinalityCheckEvery = 4096
	// cardinalityFocusPairs is how many of the store's top label pairs a
	// whole-store focus label's values are taken from.
	cardinalityFocusPairs = 100_000
)

var errCardinalityParams = errors.New("invalid parameter")

// cardinalityHandler serves GET /weft/api/v1/cardinality: status/tsdb's top
// lists for the series of match[] selectors (a run, a team: the UI's
// cardinality drill-down), plus the series count per value of focusLabel.
// Without match[] it answers for the whole store from the index statistics,
// as status/tsdb does. Parameters: match[] (repeatable), limit (default 10,
// at most 10,000), focusLabel, start and end (unix seconds or RFC 3339;
// default the last day). It is safe for concurrent use.
type cardinalityHandler struct {
	store  Storage
	card   CardinalityReader
	logger *slog.Logger
	now    func() time.Time
}

// cardinalityAnswer is the data of a success envelope; the field names are
// status/tsdb's, so one client reads both.
type cardinalityAnswer struct {
	HeadStats                    cardinalityHead `json:"headStats"`
	SeriesCountByMetricName      []statJSON      `json:"seriesCountByMetricName"`
	LabelValueCountByLabelName   []statJSON      `json:"labelValueCountByLabelName"`
	MemoryInBytesByLabelName     []statJSON      `json:"memoryInBytesByLabelName"`
	SeriesCountByLabelValuePair  []statJSON      `json:"seriesCountByLabelValuePair"`
	SeriesCountByFocusLabelValue []statJSON      `json:"seriesCountByFocusLabelValue,omitempty"`
	// Truncated is set when more than cardinalityMaxSeries series matched
	// and only that many were counted.
	Truncated bool `json:"truncated,omitempty"`
}

type cardinalityHead struct {
	NumSeries     uint64 `json:"numSeries"`
	NumLabelPairs int    `json:"numLabelPairs"`
	MinTime       int64  `json:"minTime"`
	MaxTime       int64  `json:"maxTime"`
}

type statJSON struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

func (h *cardinalityHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		respondError(w, h.logger, errorBadData, fmt.Errorf("parse form: %w", err))
		return
	}
	limit := cardinalityDefaultLimit
	if s := r.Form.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > cardinalityMaxLimit {
			respondError(w, h.logger, errorBadData, fmt.Errorf("%w: limit must be a number between 1 and %d", errCardinalityParams, cardinalityMaxLimit))
			return
		}
		limit = n
	}
	focus := r.Form.Get("focusLabel")
	sets, start, end, err := selectorRange(r, h.now(), cardinalityWindow)
	if err != nil {
		respondError(w, h.logger, errorBadData, err)
		return
	}

	var ans cardinalityAnswer
	if len(sets) == 0 {
		ans, err = h.whole(r.Context(), limit, focus)
	} else {
		ans, err = h.selected(r.Context(), sets, start.UnixMilli(), end.UnixMilli(), limit, focus)
	}
	if err != nil {
		respondError(w, h.logger, errorForContext(r, err), err)
		return
	}
	respond(w, h.logger, ans)
}

// selectorRange reads the match[] selectors (repeatable; none: every
// series) and the start and end (unix seconds or RFC 3339; default the
// window before now) of a request of weft's own cardinality API.
func selectorRange(r *http.Request, now time.Time, window time.Duration) (sets [][]*labels.Matcher, start, end time.Time, err error) {
	for _, s := range r.Form["match[]"] {
		ms, err := query.NewParser().ParseMetricSelector(s)
		if err != nil {
			return nil, start, end, fmt.Errorf("%w: match[] %q: %w", errCardinalityParams, s, err)
		}
		sets = append(sets, ms)
	}
	end = now
	if s := r.Form.Get("end"); s != "" {
		if end, err = parseAPITime(s); err != nil {
			return nil, start, end, fmt.Errorf("%w: end: %w", errCardinalityParams, err)
		}
	}
	start = end.Add(-window)
	if s := r.Form.Get("start"); s != "" {
		if start, err = parseAPITime(s); err != nil {
			return nil, start, end, fmt.Errorf("%w: start: %w", errCardinalityParams, err)
		}
	}
	if end.Before(start) {
		return nil, start, end, fmt.Errorf("%w: end is before start", errCardinalityParams)
	}
	return sets, start, end, nil
}

// whole answers from the index statistics (status/tsdb's source).
func (h *cardinalityHandler) whole(ctx context.Context, limit int, focus string) (cardinalityAnswer, error) {
	if h.card == nil {
		return cardinalityAnswer{}, errNoCardinality
	}
	n := limit
	if focus != "" {
		n = cardinalityFocusPairs // the focus label's values are among the pairs
	}
	c, err := h.card.Cardinality(ctx, n)
	if err != nil {
		return cardinalityAnswer{}, fmt.Errorf("cardinality: %w", err)
	}
	conv := func(in []CardinalityStat) []statJSON {
		out := make([]statJSON, 0, min(len(in), limit))
		for _, s := range in[:min(len(in), limit)] {
			out = append(out, statJSON{Name: s.Name, Value: s.Value})
		}
		return out
	}
	ans := cardinalityAnswer{
		HeadStats:                   cardinalityHead{NumSeries: c.NumSeries, NumLabelPairs: c.NumLabelPairs, MinTime: c.MinTime, MaxTime: c.MaxTime},
		SeriesCountByMetricName:     conv(c.SeriesCountByMetricName),
		LabelValueCountByLabelName:  conv(c.LabelValueCountByLabelName),
		MemoryInBytesByLabelName:    conv(c.MemoryInBytesByLabelName),
		SeriesCountByLabelValuePair: conv(c.SeriesCountByLabelValuePair),
	}
	if focus != "" {
		prefix := focus + "="
		var fs []statJSON
		for _, s := range c.SeriesCountByLabelValuePair {
			if v, ok := strings.CutPrefix(s.Name, prefix); ok {
				fs = append(fs, statJSON{Name: v, Value: s.Value})
			}
		}
		ans.SeriesCountByFocusLabelValue = topJSON(fs, limit)
	}
	return ans, nil
}

// selected counts the series of the selectors (their union) in [mint, maxt].
func (h *cardinalityHandler) selected(ctx context.Context, sets [][]*labels.Matcher, mint, maxt int64, limit int, focus string) (cardinalityAnswer, error) {
	q, err := h.store.Querier(mint, maxt)
	if err != nil {
		return cardinalityAnswer{}, fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	var (
		ans       cardinalityAnswer
		names     = map[string]uint64{}
		pairs     = map[string]uint64{}
		bytesOf   = map[string]uint64{}
		valuesOf  = map[string]int{}
		focusVals = map[string]uint64{}
		seen      map[uint64]struct{} // dedupes series across several selectors
		n         uint64
	)
	if len(sets) > 1 {
		seen = map[uint64]struct{}{}
	}
	hints := &storage.SelectHints{Start: mint, End: maxt, Func: "series"}
outer:
	for _, ms := range sets {
		ss := q.Select(ctx, false, hints, ms...)
		for ss.Next() {
			ls := ss.At().Labels()
			if seen != nil {
				hsh := ls.Hash()
				if _, dup := seen[hsh]; dup {
					continue
				}
				seen[hsh] = struct{}{}
			}
			if n >= cardinalityMaxSeries {
				ans.Truncated = true
				break outer
			}
			n++
			if n%cardinalityCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return cardinalityAnswer{}, err
				}
			}
			ls.Range(func(l labels.Label) {
				if l.Name == labels.MetricName {
					names[l.Value]++
				}
				if l.Name == focus {
					focusVals[l.Value]++
				}
				k := l.Name + "=" + l.Value
				if pairs[k] == 0 {
					valuesOf[l.Name]++
				}
				pairs[k]++
				bytesOf[l.Name] += uint64(labelBytes(l.Name) + labelBytes(l.Value))
			})
		}
		if err := ss.Err(); err != nil {
			return cardinalityAnswer{}, fmt.Errorf("select series: %w", err)
		}
	}
	ans.HeadStats = cardinalityHead{NumSeries: n, NumLabelPairs: len(pairs), MinTime: mint, MaxTime: maxt}
	ans.SeriesCountByMetricName = topMap(names, limit)
	ans.SeriesCountByLabelValuePair = topMap(pairs, limit)
	ans.MemoryInBytesByLabelName = topMap(bytesOf, limit)
	vc := make(map[string]uint64, len(valuesOf))
	for k, v := range valuesOf {
		vc[k] = uint64(v)
	}
	ans.LabelValueCountByLabelName = topMap(vc, limit)
	if focus != "" {
		ans.SeriesCountByFocusLabelValue = topMap(focusVals, limit)
	}
	return ans, nil
}

// labelBytes is one string's size in Prometheus' stringlabels layout, as
// index.Stats estimates it.
func labelBytes(s string) int {
	if len(s) < 255 {
		return 1 + len(s)
	}
	return 4 + len(s)
}

func topMap(m map[string]uint64, limit int) []statJSON {
	out := make([]statJSON, 0, len(m))
	for k, v := range m {
		out = append(out, statJSON{Name: k, Value: v})
	}
	return topJSON(out, limit)
}

// topJSON sorts by value descending, then name, and keeps limit entries.
func topJSON(s []statJSON, limit int) []statJSON {
	slices.SortFunc(s, func(a, b statJSON) int {
		if c := cmp.Compare(b.Value, a.Value); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(s) > limit {
		s = s[:limit]
	}
	if s == nil {
		s = []statJSON{}
	}
	return s
}

// parseAPITime reads a Prometheus API time: unix seconds (with a fraction)
// or RFC 3339.
func parseAPITime(s string) (time.Time, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
	}
	return t, nil
}

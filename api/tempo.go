package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftdb/weft/proto/tempopb"
	"github.com/weftdb/weft/query/traceql"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// TraceReader is what the Tempo API reads: the trace store. Safe for
// concurrent use.
type TraceReader interface {
	traceentry.Source
	FindTraceByID(ctx context.Context, id traceentry.TraceID, start, end int64) (*traceentry.Trace, error)
	TagNames(ctx context.Context, start, end int64) (span, resource []string, err error)
}

// TempoOptions configure the Tempo HTTP API.
type TempoOptions struct {
	// Engine configures the TraceQL engine.
	Engine traceql.Options
	// RecentWindow is what searches and tag lookups without start and end
	// cover, back from now (Tempo searches its ingesters' recent data
	// then). Default 1 hour.
	RecentWindow time.Duration
	// MaxTagValueTraces bounds the traces a tag-values request reads (most
	// recent first). Default 5000.
	MaxTagValueTraces int
	// Logger receives failed requests; nil discards them.
	Logger *slog.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// DefaultTempoOptions returns the documented defaults (docs/traces.md).
func DefaultTempoOptions() TempoOptions {
	return TempoOptions{Engine: traceql.DefaultOptions(), RecentWindow: time.Hour, MaxTagValueTraces: 5000}
}

// tempoAPI serves Grafana's Tempo datasource. Safe for concurrent use.
type tempoAPI struct {
	tr    TraceReader
	eng   *traceql.Engine
	opts  TempoOptions
	log   *slog.Logger
	build BuildInfo
}

func newTempoAPI(tr TraceReader, opts TempoOptions, build BuildInfo) *tempoAPI {
	d := DefaultTempoOptions()
	if opts.RecentWindow <= 0 {
		opts.RecentWindow = d.RecentWindow
	}
	if opts.MaxTagValueTraces <= 0 {
		opts.MaxTagValueTraces = d.MaxTagValueTraces
	}
	if opts.Engine.Parse.MaxLength == 0 {
		opts.Engine = d.Engine
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &tempoAPI{tr: tr, eng: traceql.NewEngine(opts.Engine), opts: opts, log: opts.Logger, build: build}
}

// routes are the Tempo API's routes on the main port.
func (t *tempoAPI) routes() []route {
	r := func(pattern string, h http.HandlerFunc) route {
		return route{pattern: pattern, name: strings.TrimPrefix(pattern, "GET "), h: h, ready: true}
	}
	return []route{
		r("GET /api/echo", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "echo", http.StatusOK) }),
		r("GET /api/status/buildinfo", t.buildInfo),
		r("GET /api/traces/{id}", t.traceV1),
		r("GET /api/v2/traces/{id}", t.traceV2),
		r("GET /api/search", t.search),
		r("GET /api/search/tags", t.tagsV1),
		r("GET /api/v2/search/tags", t.tagsV2),
		r("GET /api/search/tag/{tag}/values", t.tagValuesV1),
		r("GET /api/v2/search/tag/{tag}/values", t.tagValuesV2),
	}
}

// tempoError answers an error as Tempo does: plain text with the status.
func (t *tempoAPI) error(w http.ResponseWriter, r *http.Request, code int, err error) {
	if code >= 500 {
		t.log.Warn("tempo_request_failed", "path", r.URL.Path, "err", err)
	}
	http.Error(w, err.Error(), code)
}

// statusOf maps an error to its status: bad queries and parameters 400,
// cancelled requests 499, everything else retryable 503.
func statusOf(r *http.Request, err error) int {
	switch {
	case errors.Is(err, traceql.ErrParse), errors.Is(err, traceql.ErrBadRequest), errors.Is(err, errTempoBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, context.Canceled) || r.Context().Err() != nil:
		return 499
	}
	return http.StatusServiceUnavailable
}

var errTempoBadRequest = errors.New("bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errTempoBadRequest, fmt.Sprintf(format, args...))
}

func writeBody(w http.ResponseWriter, ct string, b []byte) {
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func (t *tempoAPI) buildInfo(w http.ResponseWriter, _ *http.Request) {
	b, _ := json.Marshal(map[string]string{
		"version": t.build.Version, "revision": t.build.Revision, "branch": t.build.Branch,
		"buildDate": t.build.BuildDate, "buildUser": t.build.BuildUser, "goVersion": t.build.GoVersion,
	})
	writeBody(w, "application/json", b)
}

// parseTempoTime reads a trace-by-ID time bound as Tempo does: a value
// with a '.' is float seconds, an integer of at most 10 digits seconds,
// a longer one nanoseconds, anything else RFC 3339. It returns unix ns.
func parseTempoTime(s string) (int64, error) {
	if strings.Contains(s, ".") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.Abs(f) > 9e9 {
			return 0, badRequest("invalid time %q", s)
		}
		return int64(f * 1e9), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if len(strings.TrimPrefix(s, "-")) <= 10 {
			return n * 1e9, nil
		}
		return n, nil
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, badRequest("invalid time %q", s)
	}
	return tm.UnixNano(), nil
}

// traceRequest is a parsed trace-by-ID request.
func (t *tempoAPI) findTrace(w http.ResponseWriter, r *http.Request) (*traceentry.Trace, bool) {
	id, err := traceentry.ParseTraceID(r.PathValue("id"))
	if err != nil {
		t.error(w, r, http.StatusBadRequest, fmt.Errorf("invalid trace id %q: must be 1 to 32 hex digits", r.PathValue("id")))
		return nil, false
	}
	var start, end int64
	q := r.URL.Query()
	if s := q.Get("start"); s != "" {
		if start, err = parseTempoTime(s); err != nil {
			t.error(w, r, http.StatusBadRequest, err)
			return nil, false
		}
	}
	if s := q.Get("end"); s != "" {
		if end, err = parseTempoTime(s); err != nil {
			t.error(w, r, http.StatusBadRequest, err)
			return nil, false
		}
	}
	if start != 0 && end != 0 && end < start {
		t.error(w, r, http.StatusBadRequest, errors.New("invalid start and end: end must not be before start"))
		return nil, false
	}
	tr, err := t.tr.FindTraceByID(r.Context(), id, start, end)
	if err != nil {
		t.error(w, r, statusOf(r, err), fmt.Errorf("find trace: %w", err))
		return nil, false
	}
	if tr == nil {
		w.WriteHeader(http.StatusNotFound) // Tempo: 404, empty body
		return nil, false
	}
	return tr, true
}

func wantsProto(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/protobuf")
}

func (t *tempoAPI) traceV1(w http.ResponseWriter, r *http.Request) {
	tr, ok := t.findTrace(w, r)
	if !ok {
		return
	}
	b, err := traceProto(tr)
	if err == nil && !wantsProto(r) {
		b, err = traceV1JSON(b)
	}
	if err != nil {
		t.error(w, r, http.StatusInternalServerError, fmt.Errorf("encode trace: %w", err))
		return
	}
	if wantsProto(r) {
		writeBody(w, "application/protobuf", b)
		return
	}
	writeBody(w, "application/json", b)
}

func (t *tempoAPI) traceV2(w http.ResponseWriter, r *http.Request) {
	tr, ok := t.findTrace(w, r)
	if !ok {
		return
	}
	partial := false
	if q := r.URL.Query().Get("q"); q != "" {
		query, err := t.eng.Parse(q)
		if err != nil {
			t.error(w, r, http.StatusBadRequest, err)
			return
		}
		keep := map[*traceentry.Span]bool{}
		for _, m := range query.EvalTrace(tr) {
			for _, sp := range m.Spans {
				keep[sp] = true
			}
		}
		var spans []traceentry.Span
		for i := range tr.Spans {
			if keep[&tr.Spans[i]] {
				spans = append(spans, tr.Spans[i])
			}
		}
		partial = len(spans) < len(tr.Spans)
		tr = &traceentry.Trace{TraceID: tr.TraceID, Spans: spans}
	}
	b, err := traceProto(tr)
	if err != nil {
		t.error(w, r, http.StatusInternalServerError, fmt.Errorf("encode trace: %w", err))
		return
	}
	if wantsProto(r) {
		writeBody(w, "application/protobuf", traceByIDProto(b, partial))
		return
	}
	b, err = traceByIDJSON(b, partial)
	if err != nil {
		t.error(w, r, http.StatusInternalServerError, fmt.Errorf("encode trace: %w", err))
		return
	}
	writeBody(w, "application/json", b)
}

// searchRange reads the uint32-second start and end of the search
// endpoints; neither means the recent window.
func (t *tempoAPI) searchRange(r *http.Request) (start, end int64, err error) {
	q := r.URL.Query()
	parse := func(name string) (int64, bool, error) {
		s := q.Get(name)
		if s == "" {
			return 0, false, nil
		}
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return 0, false, badRequest("invalid %s %q: must be unix seconds", name, s)
		}
		return int64(v) * 1e9, true, nil
	}
	start, hasStart, err := parse("start")
	if err != nil {
		return 0, 0, err
	}
	end, hasEnd, err := parse("end")
	if err != nil {
		return 0, 0, err
	}
	switch {
	case !hasStart && !hasEnd:
		now := t.opts.Now()
		return now.Add(-t.opts.RecentWindow).UnixNano(), now.UnixNano() + 1, nil
	case hasStart && hasEnd && end <= start:
		return 0, 0, badRequest("invalid start %d and end %d: end must be after start", start/1e9, end/1e9)
	case !hasEnd:
		end = t.opts.Now().UnixNano() + 1
	}
	return start, end, nil
}

// statsSource records the iterators a search opens, for its metrics.
type statsSource struct {
	src traceentry.Source
	mu  sync.Mutex
	its []tracestore.StatsIterator
}

func (s *statsSource) Fetch(ctx context.Context, req traceentry.FetchRequest) (traceentry.Iterator, error) {
	it, err := s.src.Fetch(ctx, req)
	if si, ok := it.(tracestore.StatsIterator); ok && err == nil {
		s.mu.Lock()
		s.its = append(s.its, si)
		s.mu.Unlock()
	}
	return it, err
}

func (s *statsSource) stats() tracestore.ReadStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out tracestore.ReadStats
	for _, it := range s.its {
		st := it.Stats()
		out.Blocks += st.Blocks
		out.InspectedBytes += st.InspectedBytes
	}
	return out
}

// legacyQuery turns the pre-TraceQL search parameters (tags in logfmt,
// minDuration, maxDuration) into TraceQL, as Tempo migrates them.
func legacyQuery(tags, minDur, maxDur string) (string, error) {
	var conds []string
	if tags != "" {
		pairs, err := parseLogfmt(tags)
		if err != nil {
			return "", badRequest("invalid tags %q: %v", tags, err)
		}
		for _, p := range pairs {
			k, v := p[0], p[1]
			switch k {
			case "name":
				conds = append(conds, "name = "+strconv.Quote(v))
			case "status.code":
				conds = append(conds, "status = "+v)
			default:
				conds = append(conds, "."+quoteAttr(k)+" = "+strconv.Quote(v))
			}
		}
	}
	for _, p := range []struct{ v, op string }{{minDur, ">="}, {maxDur, "<="}} {
		if p.v == "" {
			continue
		}
		d, err := time.ParseDuration(p.v)
		if err != nil {
			return "", badRequest("invalid duration %q: %v", p.v, err)
		}
		conds = append(conds, "duration "+p.op+" "+strconv.FormatInt(d.Nanoseconds(), 10)+"ns")
	}
	return "{ " + strings.Join(conds, " && ") + " }", nil
}

// quoteAttr quotes an attribute name when TraceQL needs it.
func quoteAttr(name string) string {
	for _, c := range name {
		if !(c == '.' || c == '_' || c == '-' || c == '/' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return strconv.Quote(name)
		}
	}
	return name
}

func (t *tempoAPI) search(w http.ResponseWriter, r *http.Request) {
	resp, err := t.runSearch(r)
	if err != nil {
		t.error(w, r, statusOf(r, err), err)
		return
	}
	writeBody(w, "application/json", resp)
}

func (t *tempoAPI) runSearch(r *http.Request) ([]byte, error) {
	q := r.URL.Query()
	query := q.Get("q")
	legacy := q.Get("tags") != "" || q.Get("minDuration") != "" || q.Get("maxDuration") != ""
	switch {
	case query != "" && q.Get("tags") != "":
		return nil, badRequest("invalid request: q and tags cannot both be set")
	case query == "" && legacy:
		var err error
		if query, err = legacyQuery(q.Get("tags"), q.Get("minDuration"), q.Get("maxDuration")); err != nil {
			return nil, err
		}
	case query != "" && legacy:
		// minDuration and maxDuration narrow a TraceQL query too.
		extra, err := legacyQuery("", q.Get("minDuration"), q.Get("maxDuration"))
		if err != nil {
			return nil, err
		}
		query = "(" + query + ") && " + extra
	case query == "":
		query = "{}"
	}
	limit, spss := traceql.DefaultLimit, traceql.DefaultSpansPerSpanSet
	for _, p := range []struct {
		name string
		dst  *int
	}{{"limit", &limit}, {"spss", &spss}} {
		if s := q.Get(p.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return nil, badRequest("invalid %s %q: must be a positive integer", p.name, s)
			}
			*p.dst = n
		}
	}
	start, end, err := t.searchRange(r)
	if err != nil {
		return nil, err
	}
	src := &statsSource{src: t.tr}
	res, err := t.eng.Search(r.Context(), src, traceql.SearchRequest{Query: query, Start: start, End: end, Limit: limit, SpansPerSpanSet: spss})
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	st := src.stats()
	m := &tempopb.SearchMetrics{
		InspectedTraces: res.Metrics.InspectedTraces,
		InspectedSpans:  res.Metrics.InspectedSpans,
		InspectedBytes:  uint64(st.InspectedBytes),
		TotalBlocks:     uint32(st.Blocks),
		CompletedJobs:   1,
		TotalJobs:       1,
	}
	return searchJSON(res, m)
}

// parseLogfmt splits "k=v k2=\"v 2\"" into pairs; values may be quoted
// (Go string syntax).
func parseLogfmt(s string) ([][2]string, error) {
	var out [][2]string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || strings.ContainsAny(s[:eq], " \t\"") {
			return nil, fmt.Errorf("expected key=value at %q", s)
		}
		k, rest := s[:eq], s[eq+1:]
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for end < len(rest) && (rest[end] != '"' || rest[end-1] == '\\') {
				end++
			}
			if end == len(rest) {
				return nil, fmt.Errorf("unterminated quote at %q", rest)
			}
			u, err := strconv.Unquote(rest[:end+1])
			if err != nil {
				return nil, fmt.Errorf("bad quoted value %q", rest[:end+1])
			}
			v, s = u, rest[end+1:]
		} else {
			sp := strings.IndexAny(rest, " \t")
			if sp < 0 {
				sp = len(rest)
			}
			v, s = rest[:sp], rest[sp:]
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/query/logql"
)

// The LogQL limits answer 400 with Loki's wording and the limit's name,
// as Loki answers every per-query limit.
func TestLokiQueryLimitsStatus(t *testing.T) {
	e := newLokiEnvWith(t, nil)
	t0 := pushSample(t, e)
	rng := func(q string, extra ...string) url.Values {
		v := url.Values{"query": {q}, "start": {ns(t0.Add(-time.Minute))}, "end": {ns(lokiNow)}}
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return v
	}
	for _, c := range []struct {
		name, path string
		params     url.Values
		want       string
	}{
		{"template (issue 14)", "/loki/api/v1/query_range", rng(`{app="api"} | line_format "{{ repeat 1000 (repeat 1000 (repeat 1000 \"x\")) }}"`), "max_template_bytes"},
		{"template range", "/loki/api/v1/query_range", rng(`{app="api"} | line_format "{{ range 1000000000 }}{{ end }}"`), "iterations per entry"},
		{"template metric", "/loki/api/v1/query", url.Values{"query": {`count_over_time({app="api"} | label_format x="{{ repeat 1000 (repeat 1000 (repeat 1000 \"x\")) }}" [1h])`}, "time": {ns(lokiNow)}}, "max_template_bytes"},
		{"template detected_fields", "/loki/api/v1/detected_fields", rng(`{app="api"} | line_format "{{ repeat 1000 (repeat 1000 (repeat 1000 \"x\")) }}"`), "max_template_bytes"},
		{"template define", "/loki/api/v1/query_range", rng(`{app="api"} | line_format "{{ template \"\" }}"`), "not supported"},
		{"entries", "/loki/api/v1/query_range", rng(`{app="api"}`, "limit", "5001"), "max entries limit per query exceeded, limit > max_entries_limit_per_query (5001 > 5000)"},
		{"detected_fields line_limit", "/loki/api/v1/detected_fields", rng(`{app="api"}`, "line_limit", "100000"), "max_entries_limit_per_query"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := e.get(t, c.path, c.params, nil)
			if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
				t.Fatalf("%d %s, want 400 with %q", code, body, c.want)
			}
		})
	}
}

// Memory, series and bytes-read limits come from the engine's options and
// answer 400 too.
func TestLokiQueryLimitsOptions(t *testing.T) {
	for _, c := range []struct {
		q, want string
		set     func(*logql.EngineOptions)
	}{
		{`{app="api"} | line_format "{{ repeat 100 __line__ }}"`, "max_query_memory_bytes", func(o *logql.EngineOptions) { o.MaxQueryMemory = 1 << 10 }},
		{`count_over_time({app=~".+"}[1h])`, "maximum number of series (1) reached for a single query", func(o *logql.EngineOptions) { o.MaxSeries = 1 }},
		{`{app=~".+"} |~ "nothing"`, "the query would read too many bytes (query: more than 100 B, limit: 100 B)", func(o *logql.EngineOptions) { o.MaxQueryBytesRead = 100 }},
	} {
		t.Run(c.want, func(t *testing.T) {
			opts := logql.DefaultEngineOptions()
			c.set(&opts)
			e := newLokiEnvEngine(t, opts, nil)
			t0 := pushSample(t, e)
			p := url.Values{"query": {c.q}, "start": {ns(t0.Add(-time.Minute))}, "end": {ns(lokiNow)}, "step": {"1m"}}
			code, body := e.get(t, "/loki/api/v1/query_range", p, nil)
			if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
				t.Errorf("%d %s, want 400 with %q", code, body, c.want)
			}
		})
	}
}

// detected_fields flattens JSON lines: a deeply nested object costs
// memory linear in its size (it cloned the key path at every level, which
// made a 50 kB line of 10,000 levels hold 800 MB of paths).
func TestLokiDetectedFieldsDeepJSON(t *testing.T) {
	e := newLokiEnv(t)
	const depth = 10_000
	line := strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth)
	b, err := json.Marshal(line)
	if err != nil {
		t.Fatal(err)
	}
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"deep"},"values":[["%s",%s],["%s","{\"b\":{\"c\":2}}"]]}]}`,
		ns(lokiNow.Add(-time.Minute)), b, ns(lokiNow.Add(-time.Second))))
	h := e.srv.Config.Handler
	q := url.Values{"query": {`{app="deep"}`}, "start": {ns(lokiNow.Add(-time.Hour))}, "end": {ns(lokiNow)}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/loki/api/v1/detected_fields?"+q.Encode(), nil))
	runtime.ReadMemStats(&after)
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes for a %d-byte line", alloc, len(line))
	if alloc > 64<<20 {
		t.Fatalf("allocated %d bytes for a %d-byte line", alloc, len(line))
	}
	// The shallow line's field is reported with its path; the deep one's
	// beyond the depth bound is not.
	if !strings.Contains(rec.Body.String(), `{"label":"b_c","type":"int","cardinality":1,"parsers":["json"],"jsonPath":["b","c"]}`) {
		t.Fatalf("fields %s", rec.Body)
	}
}

package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

type patternsAnswer struct {
	Status string `json:"status"`
	Data   []struct {
		Pattern string     `json:"pattern"`
		Level   string     `json:"level"`
		Samples [][2]int64 `json:"samples"`
	} `json:"data"`
}

func getPatterns(tb testing.TB, e *lokiEnv, params url.Values) patternsAnswer {
	tb.Helper()
	code, body := e.get(tb, "/loki/api/v1/patterns", params, nil)
	if code != 200 {
		tb.Fatalf("patterns: %d %s", code, body)
	}
	var a patternsAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil || a.Status != "success" {
		tb.Fatalf("patterns answer %s: %v", body, err)
	}
	return a
}

// pushPatternLines pushes, per minute for three minutes from t0, 4 request
// lines (info) and 1 failure line (error) of service "api", and one line
// of service "db".
func pushPatternLines(tb testing.TB, e *lokiEnv, t0 time.Time) {
	tb.Helper()
	var api, db []string
	for m := range 3 {
		for i := range 5 {
			ts := t0.Add(time.Duration(m)*time.Minute + time.Duration(i)*time.Second)
			line := fmt.Sprintf(`level=info msg=\"request served\" path=/api/users/%d duration=%dms`, m*10+i, 3+i*7)
			if i == 4 {
				line = fmt.Sprintf(`level=error msg=\"upstream failed\" host=10.0.0.%d attempt=%d`, m, i)
			}
			api = append(api, fmt.Sprintf(`["%s","%s"]`, ns(ts), line))
		}
		db = append(db, fmt.Sprintf(`["%s","checkpoint complete in %dms"]`, ns(t0.Add(time.Duration(m)*time.Minute)), 100+m))
	}
	e.pushJSON(tb, `{"streams":[{"stream":{"app":"api"},"values":[`+strings.Join(api, ",")+`]},
		{"stream":{"app":"db"},"values":[`+strings.Join(db, ",")+`]}]}`)
}

func TestLokiPatterns(t *testing.T) {
	e := newLokiEnv(t)
	t0 := lokiNow.Add(-10 * time.Minute).Truncate(time.Minute)
	pushPatternLines(t, e, t0)
	a := getPatterns(t, e, url.Values{"query": {`{app="api"}`}, "start": {ns(t0)}, "end": {ns(lokiNow)}, "step": {"1m"}})
	s0 := t0.Unix()
	type want struct {
		pattern, level string
		samples        [][2]int64
	}
	wants := []want{
		{`level=info msg="request served" path=<_> duration=<_>`, "info", [][2]int64{{s0, 4}, {s0 + 60, 4}, {s0 + 120, 4}}},
		{`level=error msg="upstream failed" host=<_> attempt=<_>`, "error", [][2]int64{{s0, 1}, {s0 + 60, 1}, {s0 + 120, 1}}},
	}
	if len(a.Data) != len(wants) {
		t.Fatalf("patterns %+v", a.Data)
	}
	for i, w := range wants {
		p := a.Data[i]
		if p.Pattern != w.pattern || p.Level != w.level || fmt.Sprint(p.Samples) != fmt.Sprint(w.samples) {
			t.Errorf("pattern %d: %+v, want %+v", i, p, w)
		}
	}

	// A pattern works as a LogQL pattern filter over the same lines.
	code, body := e.get(t, "/loki/api/v1/query_range", url.Values{
		"query": {`count_over_time({app="api"} |> ` + strconv.Quote(wants[0].pattern) + ` [1h])`},
		"start": {ns(lokiNow)}, "end": {ns(lokiNow)}, "step": {"1m"}}, nil)
	if code != 200 || !strings.Contains(body, `"12"`) {
		t.Errorf("pattern as filter: %d %s", code, body)
	}

	// The range bounds the lines: the last minute only.
	a = getPatterns(t, e, url.Values{"query": {`{app=~"api|db"}`}, "start": {ns(t0.Add(2 * time.Minute))}, "end": {ns(lokiNow)}, "step": {"60"}})
	total := map[string]int64{}
	for _, p := range a.Data {
		for _, s := range p.Samples {
			if s[0] != s0+120 {
				t.Errorf("sample %v outside the range", s)
			}
			total[p.Level] += s[1]
		}
	}
	if total["info"] != 4 || total["error"] != 1 || total["unknown"] != 1 {
		t.Errorf("lines per level %v", total)
	}
}

func TestLokiPatternsBounds(t *testing.T) {
	e := newLokiEnvWith(t, func(o *LokiOptions) {
		o.PatternMaxLines = 7
		o.Patterns.MaxClusters = 1
	})
	t0 := lokiNow.Add(-10 * time.Minute).Truncate(time.Minute)
	pushPatternLines(t, e, t0)
	a := getPatterns(t, e, url.Values{"query": {`{app="api"}`}, "start": {ns(t0)}, "end": {ns(lokiNow)}})
	if len(a.Data) != 1 {
		t.Fatalf("%d patterns, want 1 (MaxClusters)", len(a.Data))
	}
	// At most 7 lines are read, so no pattern counts more.
	var n int64
	for _, s := range a.Data[0].Samples {
		n += s[1]
	}
	if n == 0 || n > 7 {
		t.Errorf("pattern counts %d lines, read at most 7", n)
	}
}

func TestLokiPatternsBadRequests(t *testing.T) {
	e := newLokiEnv(t)
	for name, params := range map[string]url.Values{
		"no query":      {},
		"metric query":  {"query": {`rate({app="a"}[1m])`}},
		"bad selector":  {"query": {`{app=}`}},
		"negative step": {"query": {`{app="a"}`}, "step": {"-1s"}},
		"too many steps": {"query": {`{app="a"}`}, "step": {"1s"},
			"start": {ns(lokiNow.Add(-24 * time.Hour))}, "end": {ns(lokiNow)}},
		"end before start": {"query": {`{app="a"}`}, "start": {ns(lokiNow)}, "end": {ns(lokiNow.Add(-time.Hour))}},
	} {
		t.Run(name, func(t *testing.T) {
			if code, body := e.get(t, "/loki/api/v1/patterns", params, nil); code != 400 {
				t.Errorf("%d %s, want 400", code, body)
			}
		})
	}
	// No lines: an empty list.
	if a := getPatterns(t, e, url.Values{"query": {`{app="none"}`}}); len(a.Data) != 0 {
		t.Errorf("patterns without lines: %+v", a.Data)
	}
}

// Ingest keeps unknown level values as given; a request mines at most
// maxPatternLevels of them apart and the rest as "unknown", counting every
// line.
func TestLokiPatternsManyLevels(t *testing.T) {
	e := newLokiEnv(t)
	var vals []string
	for i := range 40 {
		vals = append(vals, fmt.Sprintf(`["%s","job %d done",{"detected_level":"lvl%02d"}]`, ns(lokiNow.Add(-time.Duration(i+1)*time.Second)), i, i))
	}
	e.pushJSON(t, `{"streams":[{"stream":{"app":"lv"},"values":[`+strings.Join(vals, ",")+`]}]}`)
	a := getPatterns(t, e, url.Values{"query": {`{app="lv"}`}})
	levels := map[string]bool{}
	var n int64
	for _, p := range a.Data {
		if p.Pattern != "job <_> done" {
			t.Errorf("pattern %q", p.Pattern)
		}
		levels[p.Level] = true
		for _, s := range p.Samples {
			n += s[1]
		}
	}
	if len(levels) > maxPatternLevels+1 || !levels["unknown"] || n != 40 {
		t.Errorf("%d levels (unknown: %v), %d lines; want at most %d levels and 40 lines", len(levels), levels["unknown"], n, maxPatternLevels+1)
	}
}

package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/klauspost/compress/s2"
	"google.golang.org/protobuf/encoding/protowire"
)

// pushSample pushes three lines of service "api" and one of "db", ten
// minutes before lokiNow, one second apart.
func pushSample(tb testing.TB, e *lokiEnv) time.Time {
	tb.Helper()
	t0 := lokiNow.Add(-10 * time.Minute)
	e.pushJSON(tb, fmt.Sprintf(`{"streams":[
		{"stream":{"app":"api","env":"prod"},"values":[
			["%s","level=info msg=\"request done\" trace_id=0af7651916cd43dd8448eb211c80319c"],
			["%s","level=error msg=\"request failed\" status=500",{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}],
			["%s","{\"level\":\"warn\",\"msg\":\"slow\",\"latency\":\"1.5s\"}"]]},
		{"stream":{"app":"db"},"values":[["%s","checkpoint complete"]]}]}`,
		ns(t0), ns(t0.Add(time.Second)), ns(t0.Add(2*time.Second)), ns(t0.Add(3*time.Second))))
	return t0
}

func TestLokiQueryRangeStreams(t *testing.T) {
	e := newLokiEnv(t)
	t0 := pushSample(t, e)
	base := url.Values{"query": {`{app="api"} |= "request"`}, "start": {ns(t0.Add(-time.Minute))}, "end": {ns(lokiNow)}}
	ts := func(d time.Duration) string { return ns(t0.Add(d)) }
	// Classic: grouped by all labels of the entry (stream, structured
	// metadata), the stream with the newest entry first for backward.
	// categorize-labels: grouped by stream labels.
	line1 := `level=info msg=\"request done\" trace_id=0af7651916cd43dd8448eb211c80319c`
	line2 := `level=error msg=\"request failed\" status=500`
	cases := []struct {
		name   string
		params url.Values
		hdr    map[string]string
		want   string
	}{
		{"backward", url.Values{}, nil,
			`{"status":"success","data":{"resultType":"streams","result":[` +
				`{"stream":{"app":"api","detected_level":"error","env":"prod","service_name":"api","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"},"values":[["` + ts(time.Second) + `","` + line2 + `"]]},` +
				`{"stream":{"app":"api","detected_level":"info","env":"prod","service_name":"api"},"values":[["` + ts(0) + `","` + line1 + `"]]}]}}`},
		{"categorize-labels", url.Values{"direction": {"forward"}}, map[string]string{"X-Loki-Response-Encoding-Flags": "categorize-labels"},
			`{"status":"success","data":{"resultType":"streams","encodingFlags":["categorize-labels"],"result":[` +
				`{"stream":{"app":"api","env":"prod","service_name":"api"},"values":[` +
				`["` + ts(0) + `","` + line1 + `",{"structuredMetadata":{"detected_level":"info"}}],` +
				`["` + ts(time.Second) + `","` + line2 + `",{"structuredMetadata":{"detected_level":"error","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}}]]}]}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := url.Values{}
			for k, v := range base {
				p[k] = v
			}
			for k, v := range c.params {
				p[k] = v
			}
			code, body := e.get(t, "/loki/api/v1/query_range", p, c.hdr)
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			if got := withoutStats(t, body); got != c.want {
				t.Fatalf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// Backward returns each stream newest first, and limit keeps the newest.
func TestLokiDirectionAndLimit(t *testing.T) {
	e := newLokiEnv(t)
	t0 := lokiNow.Add(-time.Minute)
	var vals []string
	for i := range 5 {
		vals = append(vals, fmt.Sprintf(`["%s","line %d"]`, ns(t0.Add(time.Duration(i)*time.Second)), i))
	}
	e.pushJSON(t, `{"streams":[{"stream":{"app":"x"},"values":[`+strings.Join(vals, ",")+`]}]}`)
	for _, c := range []struct {
		dir, limit string
		want       []string
	}{
		{"backward", "3", []string{"line 4", "line 3", "line 2"}},
		{"forward", "2", []string{"line 0", "line 1"}},
	} {
		t.Run(c.dir, func(t *testing.T) {
			code, body := e.get(t, "/loki/api/v1/query_range", url.Values{"query": {`{app="x"}`}, "direction": {c.dir}, "limit": {c.limit},
				"start": {lokiNow.Add(-time.Hour).Format(time.RFC3339)}, "end": {fmt.Sprint(lokiNow.Unix())}}, nil)
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			idx := -1
			for _, l := range c.want {
				i := strings.Index(body, `"`+l+`"`)
				if i < 0 || i < idx {
					t.Fatalf("%q missing or out of order in %s", l, body)
				}
				idx = i
			}
			if n := strings.Count(body, `"line `); n != len(c.want) {
				t.Fatalf("%d lines, want %d: %s", n, len(c.want), body)
			}
		})
	}
}

// Grafana's data source health check.
func TestLokiVectorHealthCheck(t *testing.T) {
	e := newLokiEnv(t)
	code, body := e.get(t, "/loki/api/v1/query", url.Values{"query": {"vector(1)+vector(1)"}, "time": {"1700000000"}}, nil)
	want := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"2"]}]}}`
	if code != 200 || withoutStats(t, body) != want {
		t.Fatalf("%d\n%s\nwant\n%s", code, body, want)
	}
}

// The log volume query Grafana's Explore sends for the histogram.
func TestLokiGrafanaLogVolume(t *testing.T) {
	e := newLokiEnv(t)
	t0 := pushSample(t, e)
	start := t0.Truncate(time.Minute)
	code, body := e.get(t, "/loki/api/v1/query_range", url.Values{
		"query": {`sum by (level, detected_level) (count_over_time({app=~".+"} | drop __error__ [1m]))`},
		"start": {ns(start)}, "end": {ns(start.Add(2 * time.Minute))}, "step": {"60000ms"}}, nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	// Ranges are (t-1m, t]: the info line at start counts at start, the
	// three lines a few seconds later at start+1m. No parser runs, so the
	// groups are by detected_level alone.
	at := func(d time.Duration) string { return fmt.Sprint(start.Add(d).Unix()) }
	want := `{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"detected_level":"error"},"values":[[` + at(time.Minute) + `,"1"]]},` +
		`{"metric":{"detected_level":"info"},"values":[[` + at(0) + `,"1"]]},` +
		`{"metric":{"detected_level":"unknown"},"values":[[` + at(time.Minute) + `,"1"]]},` +
		`{"metric":{"detected_level":"warn"},"values":[[` + at(time.Minute) + `,"1"]]}]}}`
	if got := withoutStats(t, body); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// The trace-to-logs query Grafana generates from a span: the trace ID in the
// line or in structured metadata.
func TestLokiTraceToLogs(t *testing.T) {
	e := newLokiEnv(t)
	t0 := pushSample(t, e)
	for _, c := range []struct{ id, wantLine string }{
		{"0af7651916cd43dd8448eb211c80319c", "request done"},   // in the line
		{"4bf92f3577b34da6a3ce929d0e0e4736", "request failed"}, // in metadata
	} {
		t.Run(c.id, func(t *testing.T) {
			q := fmt.Sprintf("{service_name=\"api\"} | label_format log_line_contains_trace_id=`{{ contains %q __line__ }}` | log_line_contains_trace_id=\"true\" or trace_id=%q", c.id, c.id)
			code, body := e.get(t, "/loki/api/v1/query_range", url.Values{"query": {q}, "start": {ns(t0.Add(-time.Minute))}, "end": {ns(lokiNow)}, "limit": {"1000"}}, nil)
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			if n := strings.Count(withoutStats(t, body), `","level=`); n != 1 || !strings.Contains(body, c.wantLine) {
				t.Fatalf("want only %q: %s", c.wantLine, body)
			}
			if !strings.HasPrefix(body, `{"status":"success","data":{"resultType":"streams","result":[{"stream":{`) {
				t.Fatalf("shape: %s", body)
			}
		})
	}
}

func TestLokiMetadataEndpoints(t *testing.T) {
	e := newLokiEnv(t)
	t0 := pushSample(t, e)
	rng := url.Values{"start": {ns(t0.Add(-time.Minute))}, "end": {ns(lokiNow)}}
	with := func(kv ...string) url.Values {
		v := url.Values{}
		for k, x := range rng {
			v[k] = x
		}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	cases := []struct {
		name, path string
		params     url.Values
		want       string
	}{
		{"labels", "/loki/api/v1/labels", with(), `{"status":"success","data":["app","env","service_name"]}`},
		{"labels query", "/loki/api/v1/labels", with("query", `{app="db"}`), `{"status":"success","data":["app","service_name"]}`},
		{"values", "/loki/api/v1/label/app/values", with(), `{"status":"success","data":["api","db"]}`},
		{"series", "/loki/api/v1/series", with("match[]", `{app=~".+"}`), `{"status":"success","data":[{"app":"api","env":"prod","service_name":"api"},{"app":"db","service_name":"db"}]}`},
		{"index stats", "/loki/api/v1/index/stats", with("query", `{app="api"}`), `{"streams":1,"chunks":0,"bytes":160,"entries":3}`},
		{"volume", "/loki/api/v1/index/volume", with("query", `{app=~".+"}`),
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"app":"api"},"value":[` + fmt.Sprint(lokiNow.Unix()) + `,"160"]},{"metric":{"app":"db"},"value":[` + fmt.Sprint(lokiNow.Unix()) + `,"19"]}]}}`},
		{"volume_range", "/loki/api/v1/index/volume_range", url.Values{"query": {`{app="db"}`}, "start": {ns(t0)}, "end": {ns(t0.Add(10 * time.Second))}, "step": {"5"}},
			`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"app":"db"},"values":[[` + fmt.Sprint(t0.Add(5*time.Second).Unix()) + `,"19"]]}]}}`},
		{"detected_labels", "/loki/api/v1/detected_labels", with("query", `{app=~".+"}`),
			`{"detectedLabels":[{"label":"app","cardinality":2},{"label":"env","cardinality":1},{"label":"service_name","cardinality":2}]}`},
		{"detected_fields", "/loki/api/v1/detected_fields", with("query", `{app="api"}`),
			`{"fields":[{"label":"detected_level","type":"string","cardinality":3,"parsers":null},` +
				`{"label":"latency","type":"duration","cardinality":1,"parsers":["json"],"jsonPath":["latency"]},` +
				`{"label":"level","type":"string","cardinality":3,"parsers":["logfmt","json"]},` +
				`{"label":"msg","type":"string","cardinality":3,"parsers":["logfmt","json"]},` +
				`{"label":"status","type":"int","cardinality":1,"parsers":["logfmt"]},` +
				`{"label":"trace_id","type":"string","cardinality":2,"parsers":["logfmt"]}],"limit":1000}`},
		{"detected_field values", "/loki/api/v1/detected_field/level/values", with("query", `{app="api"}`), `{"values":["error","info","warn"],"limit":1000}`},
		// One line per level, each its own pattern; numbers and IDs are variable.
		{"patterns", "/loki/api/v1/patterns", with("query", `{app="api"}`), `{"status":"success","data":[` +
			`{"pattern":"level=error msg=\"request failed\" status=<_>","level":"error","samples":[[1796039400,1]]},` +
			`{"pattern":"level=info msg=\"request done\" trace_id=<_>","level":"info","samples":[[1796039400,1]]},` +
			`{"pattern":"{\"level\":\"warn\",\"msg\":\"slow\",\"latency\":<_>","level":"warn","samples":[[1796039400,1]]}]}`},
		{"format_query", "/loki/api/v1/format_query", url.Values{"query": {`{app="api"}|="x"`}}, `{"status":"success","data":"{app=\"api\"} |= \"x\""}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := e.get(t, c.path, c.params, nil)
			if strings.Contains(body, `"stats":`) {
				body = withoutStats(t, body)
			}
			if code != 200 || body != c.want {
				t.Fatalf("%d\n%s\nwant\n%s", code, body, c.want)
			}
		})
	}
}

func TestLokiBuildInfoAndReady(t *testing.T) {
	e := newLokiEnvWith(t, func(o *LokiOptions) {
		o.BuildInfo = BuildInfo{Version: "1.2.3", Revision: "abc123", BuildDate: "2026-11-30T12:00:00Z"}
	})
	code, body := e.get(t, "/loki/api/v1/status/buildinfo", nil, nil)
	if code != 200 || !strings.HasPrefix(body, `{"version":"1.2.3","revision":"abc123","branch":"unknown","buildUser":"unknown","buildDate":"2026-11-30T12:00:00Z","goVersion":"go`) {
		t.Fatalf("%d %s", code, body)
	}
	if code, body := e.get(t, "/ready", nil, nil); code != 200 || body != "ready\n" {
		t.Fatalf("%d %q", code, body)
	}
}

func TestLokiPushEncodings(t *testing.T) {
	e := newLokiEnv(t)
	ts := lokiNow.Add(-time.Minute)
	// protobuf + snappy
	var ent, tsb, st, req []byte
	tsb = protowire.AppendTag(tsb, 1, protowire.VarintType)
	tsb = protowire.AppendVarint(tsb, uint64(ts.Unix()))
	ent = protowire.AppendTag(ent, 1, protowire.BytesType)
	ent = protowire.AppendBytes(ent, tsb)
	ent = protowire.AppendTag(ent, 2, protowire.BytesType)
	ent = protowire.AppendString(ent, "from protobuf")
	st = protowire.AppendTag(st, 1, protowire.BytesType)
	st = protowire.AppendString(st, `{app="pb"}`)
	st = protowire.AppendTag(st, 2, protowire.BytesType)
	st = protowire.AppendBytes(st, ent)
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, st)
	code, body := e.do(t, http.MethodPost, "/loki/api/v1/push", bytes.NewReader(s2.EncodeSnappy(nil, req)), map[string]string{"Content-Type": "application/x-protobuf"})
	if code != http.StatusNoContent {
		t.Fatalf("protobuf push: %d %s", code, body)
	}
	// Some clients also say Content-Encoding: snappy; Loki accepts it.
	code, body = e.do(t, http.MethodPost, "/loki/api/v1/push", bytes.NewReader(s2.EncodeSnappy(nil, req)), map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"})
	if code != http.StatusNoContent {
		t.Fatalf("protobuf push with Content-Encoding snappy: %d %s", code, body)
	}
	// gzip JSON
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	fmt.Fprintf(zw, `{"streams":[{"stream":{"app":"gz"},"values":[["%s","from gzip"]]}]}`, ns(ts))
	zw.Close()
	code, body = e.do(t, http.MethodPost, "/loki/api/v1/push", &gz, map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"})
	if code != http.StatusNoContent {
		t.Fatalf("gzip push: %d %s", code, body)
	}
	code, body = e.get(t, "/loki/api/v1/query_range", url.Values{"query": {`{app=~"pb|gz"}`}}, nil)
	if code != 200 || !strings.Contains(body, `"from protobuf"`) || !strings.Contains(body, `"from gzip"`) {
		t.Fatalf("%d %s", code, body)
	}
}

func TestLokiPushErrors(t *testing.T) {
	e := newLokiEnv(t)
	ts := ns(lokiNow.Add(-time.Minute))
	cases := []struct {
		name, ct, body string
		code           int
		reason         string
	}{
		{"bad json", "application/json", `{"streams":[`, 400, "malformed push request"},
		{"bad snappy", "application/x-protobuf", "\xff\xff\xff", 400, "snappy"},
		{"line too long", "application/json", `{"streams":[{"stream":{"app":"big"},"values":[["` + ts + `","` + strings.Repeat("x", 256<<10+1) + `"]]},{"stream":{"app":"ok"},"values":[["` + ts + `","kept"]]}]}`, 400, "max entry size '262144' bytes exceeded"},
		{"no labels", "application/json", `{"streams":[{"stream":{},"values":[["` + ts + `","x"]]}]}`, 400, "at least one label pair"},
		{"bad label", "application/json", `{"streams":[{"stream":{"a.b":"c"},"values":[["` + ts + `","x"]]}]}`, 400, `invalid label name "a.b"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := e.do(t, http.MethodPost, "/loki/api/v1/push", strings.NewReader(c.body), map[string]string{"Content-Type": c.ct})
			if code != c.code || !strings.Contains(body, c.reason) {
				t.Fatalf("%d %q, want %d containing %q", code, body, c.code, c.reason)
			}
		})
	}
	// The valid stream of the rejected request was written.
	code, body := e.get(t, "/loki/api/v1/query_range", url.Values{"query": {`{app="ok"}`}}, nil)
	if code != 200 || !strings.Contains(body, `"kept"`) {
		t.Fatalf("%d %s", code, body)
	}
}

func TestLokiQueryErrors(t *testing.T) {
	e := newLokiEnv(t)
	cases := []struct {
		name   string
		params url.Values
		code   int
	}{
		{"parse", url.Values{"query": {`{app=`}}, 400},
		{"empty", url.Values{}, 400},
		{"bad time", url.Values{"query": {`{a="b"}`}, "start": {"yesterday"}}, 400},
		{"end before start", url.Values{"query": {`{a="b"}`}, "start": {"200"}, "end": {"100"}}, 400},
		{"bad step", url.Values{"query": {`count_over_time({a="b"}[1m])`}, "step": {"0"}}, 400},
		{"bad direction", url.Values{"query": {`{a="b"}`}, "direction": {"up"}}, 400},
		{"limit too big", url.Values{"query": {`{a="b"}`}, "limit": {"100000"}}, 400},
	}
	code, body := e.get(t, "/loki/api/v1/query", url.Values{"query": {`{a="b"}`}}, nil)
	if code != 400 || !strings.Contains(body, "not supported as an instant query") {
		t.Fatalf("instant log query: %d %s", code, body)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := e.get(t, "/loki/api/v1/query_range", c.params, nil)
			if code != c.code {
				t.Fatalf("%d %s, want %d", code, body, c.code)
			}
		})
	}
}

func TestLokiTimeParams(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1700000000", 1700000000e9, true},
		{"1700000000123456789", 1700000000123456789, true},
		{"1700000000.5", 1700000000500000000, true},
		{"2023-11-14T22:13:20Z", 1700000000e9, true},
		{"2023-11-14T22:13:20.25+00:00", 1700000000250000000, true},
		{"", 42, true},
		{"nope", 0, false},
		{"NaN", 0, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := lokiTime(c.in, 42)
			if (err == nil) != c.ok || (c.ok && got != c.want) {
				t.Fatalf("lokiTime(%q) = %d, %v; want %d", c.in, got, err, c.want)
			}
		})
	}
	for in, want := range map[string]time.Duration{"15": 15 * time.Second, "0.5": 500 * time.Millisecond, "1m": time.Minute, "1h30m": 90 * time.Minute, "60000ms": time.Minute} {
		if got, err := lokiDuration(in); err != nil || got != want {
			t.Fatalf("lokiDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestLokiTail(t *testing.T) {
	e := newLokiEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/loki/api/v1/tail?" + url.Values{"query": {`{app="tail"}`}}.Encode()
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	ts := lokiNow.Add(-time.Second)
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"tail"},"values":[["%s","one"],["%s","two"]]}]}`, ns(ts), ns(ts.Add(time.Millisecond))))
	var got []string
	for len(got) < 2 {
		_, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (got %q)", err, got)
		}
		s := string(msg)
		if !strings.HasPrefix(s, `{"streams":[{"stream":{"app":"tail","detected_level":"unknown","service_name":"tail"},"values":[`) {
			t.Fatalf("message shape: %s", s)
		}
		for _, l := range []string{"one", "two"} {
			if strings.Contains(s, `"`+l+`"`) {
				got = append(got, l)
			}
		}
	}
	if strings.Join(got, ",") != "one,two" {
		t.Fatalf("tail sent %q", got)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// Entries without metadata still get the third element with
// categorize-labels; lines are HTML-escaped as Loki writes them, labels are
// not; metric results carry encodingFlags too.
func TestLokiEncodingDetails(t *testing.T) {
	e := newLokiEnv(t)
	ts := lokiNow.Add(-time.Minute)
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"a<b>","detected_level":"x"},"values":[["%s","<html> & co"]]}]}`, ns(ts)))
	code, body := e.get(t, "/loki/api/v1/query_range", url.Values{"query": {`{app="a<b>"} | drop detected_level`}},
		map[string]string{"X-Loki-Response-Encoding-Flags": "categorize-labels"})
	want := `{"status":"success","data":{"resultType":"streams","encodingFlags":["categorize-labels"],"result":[` +
		`{"stream":{"app":"a<b>","service_name":"a<b>"},"values":[["` + ns(ts) + `","\u003chtml\u003e \u0026 co",{}]]}]}}`
	if code != 200 || withoutStats(t, body) != want {
		t.Fatalf("%d\n%s\nwant\n%s", code, body, want)
	}
	code, body = e.get(t, "/loki/api/v1/query", url.Values{"query": {`vector(3)`}, "time": {"1700000000.25"}},
		map[string]string{"X-Loki-Response-Encoding-Flags": "categorize-labels"})
	want = `{"status":"success","data":{"resultType":"vector","encodingFlags":["categorize-labels"],"result":[{"metric":{},"value":[1700000000.25,"3"]}]}}`
	if code != 200 || withoutStats(t, body) != want {
		t.Fatalf("%d\n%s\nwant\n%s", code, body, want)
	}
}

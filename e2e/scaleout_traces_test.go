package e2e

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/proto/tempopb"
)

// tempoStrong is a Tempo API GET with read-after-write asked of a querier
// (a single node ignores the header).
func tempoStrong(base, path string, params url.Values, accept string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, base+path+"?"+params.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Weft-Read-Consistency", "strong")
	req.Header.Set("Accept", accept)
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", path, resp.StatusCode, b)
	}
	return b, nil
}

// spanRows are a trace's spans as sortable rows: IDs, name, times and
// service, so that two answers compare whatever order their batches come in.
func spanRows(td ptrace.Traces) []string {
	var rows []string
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		svc, _ := rs.Resource().Attributes().Get("service.name")
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				sp := ss.At(k)
				rows = append(rows, fmt.Sprintf("%s %s<-%s %s %d-%d %s %s attrs=%d", sp.TraceID(), sp.SpanID(), sp.ParentSpanID(), sp.Name(),
					sp.StartTimestamp(), sp.EndTimestamp(), sp.Status().Code(), svc.AsString(), sp.Attributes().Len()))
			}
		}
	}
	slices.Sort(rows)
	return rows
}

// compareTempo checks that the querier answers Grafana's Tempo requests
// (TraceQL searches, traces by ID, tag names and values) as the single
// node does for telemetrygen's traces in [start, end], and that there are
// wantTraces of them.
func compareTempo(t *testing.T, single, querier string, start, end time.Time, wantTraces int) {
	t.Helper()
	rng := url.Values{"start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix()+1, 10)}}
	with := func(kv ...string) url.Values {
		p := url.Values{}
		for k, v := range rng {
			p[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			p.Set(kv[i], kv[i+1])
		}
		return p
	}
	search := func(base string, p url.Values) (*tempopb.SearchResponse, error) {
		b, err := tempoStrong(base, "/api/search", p, "application/json")
		if err != nil {
			return nil, err
		}
		var resp tempopb.SearchResponse
		if err := protojson.Unmarshal(b, &resp); err != nil {
			return nil, fmt.Errorf("search: strict decode: %w", err)
		}
		return &resp, nil
	}
	var all *tempopb.SearchResponse
	for _, q := range []string{`{ resource.service.name = "telemetrygen" }`, `{ kind = server && duration > 0s }`, `{ resource.service.name = "telemetrygen" } | count() > 1`, `{ name =~ "okey.*" }`} {
		p := with("q", q, "limit", "10000", "spss", "1000")
		want, err1 := search(single, p)
		got, err2 := search(querier, p)
		if err1 != nil || err2 != nil {
			t.Fatalf("search %s: single %v, querier %v", q, err1, err2)
		}
		if len(want.Traces) == 0 {
			t.Fatalf("search %s: the single node found nothing", q)
		}
		if len(want.Traces) != len(got.Traces) {
			t.Errorf("search %s: single %d traces, querier %d", q, len(want.Traces), len(got.Traces))
			continue
		}
		for i := range want.Traces {
			if !proto.Equal(want.Traces[i], got.Traces[i]) {
				t.Errorf("search %s: trace %d:\nsingle  %v\nquerier %v", q, i, want.Traces[i], got.Traces[i])
				break
			}
		}
		if all == nil {
			all = want
		}
	}
	if all != nil && len(all.Traces) != wantTraces {
		t.Errorf("%d telemetrygen traces stored, want %d", len(all.Traces), wantTraces)
	}
	for i, tr := range all.Traces {
		if i%7 != 0 {
			continue
		}
		var td [2]ptrace.Traces
		for j, base := range []string{single, querier} {
			b, err := tempoStrong(base, "/api/v2/traces/"+tr.TraceID, nil, "application/protobuf")
			if err != nil {
				t.Fatalf("trace %s: %v", tr.TraceID, err)
			}
			var resp tempopb.TraceByIDResponse
			if err := proto.Unmarshal(b, &resp); err != nil {
				t.Fatal(err)
			}
			inner, _ := proto.Marshal(resp.Trace)
			if td[j], err = (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(inner); err != nil {
				t.Fatal(err)
			}
		}
		if w, g := spanRows(td[0]), spanRows(td[1]); len(w) == 0 || !slices.Equal(w, g) {
			t.Errorf("trace %s:\nsingle  %v\nquerier %v", tr.TraceID, w, g)
		}
	}
	// An ID nobody stored is a 404 on both.
	missing := hex.EncodeToString(make([]byte, 15)) + "01"
	for _, base := range []string{single, querier} {
		if _, err := tempoStrong(base, "/api/v2/traces/"+missing, nil, "application/protobuf"); err == nil {
			t.Errorf("%s: an unknown trace was found", base)
		}
	}
	for _, path := range []string{"/api/v2/search/tags", "/api/v2/search/tag/resource.service.name/values", "/api/search/tags"} {
		want, err1 := tempoStrong(single, path, rng, "application/json")
		got, err2 := tempoStrong(querier, path, rng, "application/json")
		if err1 != nil || err2 != nil || string(want) != string(got) {
			t.Errorf("%s: single %s %v\nquerier %s %v", path, want, err1, got, err2)
		}
	}
}

// oldTraces is how many traces writeOldTraces writes; trace 0's spans go
// in two exports a block-builder window apart, so that its spans lie in
// two blocks.
const oldTraces = 6

// writeOldTraces exports oldTraces traces of three spans each, on the
// services e2e-old and e2e-old-db, starting at old, to every target's
// OTLP/HTTP route.
func writeOldTraces(t *testing.T, old time.Time, window time.Duration, targets ...string) {
	t.Helper()
	build := func(late bool) ptrace.Traces {
		td := ptrace.NewTraces()
		for _, svc := range []string{"e2e-old", "e2e-old-db"} {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", svc)
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("e2e")
			for i := range oldTraces {
				for n := 1; n <= 3; n++ {
					// Span 1 is the root on e2e-old; 2 and 3 its children,
					// 3 on the database. Trace 0's span 3 comes late.
					if (n == 3) != (svc == "e2e-old-db") || (i == 0 && n == 3) != late {
						continue
					}
					start := old.Add(time.Duration(i)*5*time.Second + time.Duration(n)*100*time.Millisecond)
					sp := ss.Spans().AppendEmpty()
					sp.SetTraceID(pcommon.TraceID{0: 0xe2, 1: 0xe0, 15: byte(i + 1)})
					sp.SetSpanID(pcommon.SpanID{6: byte(i + 1), 7: byte(n)})
					if n > 1 {
						sp.SetParentSpanID(pcommon.SpanID{6: byte(i + 1), 7: 1})
					}
					sp.SetName([]string{"", "old-request", "old-compute", "old-query"}[n])
					sp.SetKind(ptrace.SpanKindServer)
					sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
					sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(n*150+i) * time.Millisecond)))
					sp.Attributes().PutInt("old.step", int64(i))
					if i%3 == 0 && n == 3 {
						sp.Status().SetCode(ptrace.StatusCodeError)
					}
				}
			}
		}
		return td
	}
	for k, late := range []bool{false, true} {
		if k > 0 {
			time.Sleep(window + time.Second) // the late span's record is in a later window
		}
		td := build(late)
		for _, target := range targets {
			code, _, err := exportHTTP(target+"/otlp/v1/traces", td)
			if err != nil || code != http.StatusOK {
				t.Fatalf("export old traces to %s: %d %v", target, code, err)
			}
		}
	}
}

// compareOldTempo returns how the querier's Tempo answers for
// writeOldTraces' traces differ from the single node's ("" when they do
// not): searches over [old, old+1m], and each trace by ID, with that range
// and without.
func compareOldTempo(single, querier string, old time.Time) string {
	rng := url.Values{"start": {strconv.FormatInt(old.Unix(), 10)}, "end": {strconv.FormatInt(old.Add(time.Minute).Unix(), 10)}}
	for _, q := range []string{`{ resource.service.name = "e2e-old" }`, `{ name = "old-query" }`, `{ status = error } && { span.old.step >= 0 }`,
		`{ resource.service.name = "e2e-old-db" } | count() > 0`} {
		p := url.Values{"q": {q}, "limit": {"100"}, "spss": {"100"}, "start": rng["start"], "end": rng["end"]}
		var resp [2]tempopb.SearchResponse
		for j, base := range []string{single, querier} {
			b, err := tempoStrong(base, "/api/search", p, "application/json")
			if err != nil {
				return fmt.Sprintf("search %s: %v", q, err)
			}
			if err := protojson.Unmarshal(b, &resp[j]); err != nil {
				return fmt.Sprintf("search %s: %v", q, err)
			}
		}
		if len(resp[0].Traces) == 0 {
			return "search " + q + ": the single node found nothing"
		}
		if len(resp[0].Traces) != len(resp[1].Traces) {
			return fmt.Sprintf("search %s: single %d traces, querier %d", q, len(resp[0].Traces), len(resp[1].Traces))
		}
		for i := range resp[0].Traces {
			if !proto.Equal(resp[0].Traces[i], resp[1].Traces[i]) {
				return fmt.Sprintf("search %s: trace %d:\nsingle  %v\nquerier %v", q, i, resp[0].Traces[i], resp[1].Traces[i])
			}
		}
	}
	for i := range oldTraces {
		id := hex.EncodeToString([]byte{0xe2, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(i + 1)})
		for _, p := range []url.Values{rng, nil} {
			var rows [2][]string
			for j, base := range []string{single, querier} {
				b, err := tempoStrong(base, "/api/v2/traces/"+id, p, "application/protobuf")
				if err != nil {
					return fmt.Sprintf("trace %s: %v", id, err)
				}
				var resp tempopb.TraceByIDResponse
				if err := proto.Unmarshal(b, &resp); err != nil {
					return fmt.Sprintf("trace %s: %v", id, err)
				}
				inner, _ := proto.Marshal(resp.Trace)
				td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(inner)
				if err != nil {
					return fmt.Sprintf("trace %s: %v", id, err)
				}
				rows[j] = spanRows(td)
			}
			if len(rows[0]) != 3 || !slices.Equal(rows[0], rows[1]) {
				return fmt.Sprintf("trace %s (range %v):\nsingle  %v\nquerier %v", id, p, rows[0], rows[1])
			}
		}
	}
	return ""
}

package api

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/weftdb/weft/storage/tracestore"
)

// countingPusher accepts every push, counts its spans and stores nothing
// (no fsync per fuzz input; the decoding, mapping and validation under
// test are the same; TestOTLPTracesPartialSuccess runs over a real store).
type countingPusher struct{ spans int }

func (p *countingPusher) Push(_ context.Context, batch []tracestore.ResourceSpans) (tracestore.PushResult, error) {
	n := 0
	for _, rs := range batch {
		if rs.Labels.IsEmpty() {
			return tracestore.PushResult{}, tracestore.ErrEmptyLabels
		}
		n += len(rs.Spans)
	}
	p.spans += n
	return tracestore.PushResult{Accepted: n}, nil
}

// fuzzOTLPTraces posts arbitrary bodies to the traces receiver: it must
// never panic, answer 200 or 400 (the store is healthy), and store a valid
// request afterwards.
func fuzzOTLPTraces(f *testing.F, json bool) {
	ct := otlpContentProto
	if json {
		ct = otlpContentJSON
	}
	body := func(tb testing.TB) []byte {
		req := ptraceotlp.NewExportRequestFromTraces(testTraces())
		var b []byte
		var err error
		if json {
			b, err = req.MarshalJSON()
		} else {
			b, err = req.MarshalProto()
		}
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	good := body(f)
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte("{}"))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00","spanId":"01"}]}]}]}`))
	p := &countingPusher{}
	h := newTracesSignal(p, DefaultOTLPTracesOptions())
	post := func(b []byte) int {
		req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(b))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if code := post(b); code != http.StatusOK && code != http.StatusBadRequest {
			t.Fatalf("status %d for %q", code, b)
		}
		before := p.spans
		if code := post(good); code != http.StatusOK || p.spans != before+3 {
			t.Fatalf("valid request after fuzz input: status %d, %d spans", code, p.spans-before)
		}
	})
}

func FuzzOTLPTracesHTTPProtobuf(f *testing.F) { fuzzOTLPTraces(f, false) }

func FuzzOTLPTracesHTTPJSON(f *testing.F) { fuzzOTLPTraces(f, true) }

// FuzzParseLogfmt: the legacy tags parser never panics, and what it
// accepts becomes a TraceQL query that parses.
func FuzzParseLogfmt(f *testing.F) {
	for _, s := range []string{`service.name=a`, `a="b c" d=e`, `x="\"q\""`, `=`, `a=`, `"`, `a="unterminated`} {
		f.Add(s)
	}
	eng := newTempoAPI(nil, DefaultTempoOptions(), BuildInfo{}).eng
	f.Fuzz(func(t *testing.T, s string) {
		q, err := legacyQuery(s, "", "")
		if err != nil {
			return
		}
		if _, err := eng.Parse(q); err != nil {
			t.Fatalf("tags %q gave query %q: %v", s, q, err)
		}
	})
}

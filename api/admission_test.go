package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdb/weft/storage/logstore"
)

func TestTicketCharge(t *testing.T) {
	a := newAdmission(100, time.Second, nil)
	t1, t2 := a.ticket(), a.ticket()
	if err := t1.charge(80); err != nil {
		t.Fatal(err)
	}
	if err := t2.charge(30); !errors.Is(err, errOverBudget) {
		t.Fatalf("second request over the budget: err = %v", err)
	}
	if err := t1.charge(500); err != nil {
		t.Fatalf("a request alone is always admitted: %v", err)
	}
	t1.release()
	if a.inflight.Load() != 0 {
		t.Fatalf("in flight after release = %d", a.inflight.Load())
	}
	if err := t2.charge(30); err != nil {
		t.Fatalf("after the first request: %v", err)
	}
	t2.release()
}

// blockingBody yields its first bytes, then blocks until released: a
// client that stalls after sending part of its body.
type blockingBody struct {
	first        []byte
	sent         chan struct{}
	release      chan struct{}
	once, closed sync.Once
}

func (b *blockingBody) unblock() { b.closed.Do(func() { close(b.release) }) }

func newBlockingBody(first []byte) *blockingBody {
	return &blockingBody{first: first, sent: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if len(b.first) > 0 {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	b.once.Do(func() { close(b.sent) })
	<-b.release
	return 0, io.ErrUnexpectedEOF
}

// TestStalledBodiesDoNotStarveRemoteWrite: 64 clients that stall after one
// byte hold at most one charge chunk each of the budget (not their declared
// 30 MiB), so a normal remote write still gets through.
func TestStalledBodiesDoNotStarveRemoteWrite(t *testing.T) {
	adm := newAdmission(8<<20, time.Second, nil)
	opts := DefaultRemoteWriteOptions()
	opts.admission = adm
	app := &rwFakeAppendable{}
	h := NewRemoteWriteHandler(app, opts)
	var wg sync.WaitGroup
	var bodies []*blockingBody
	t.Cleanup(func() {
		for _, b := range bodies {
			b.unblock()
		}
		wg.Wait()
	})
	for range 64 {
		b := newBlockingBody([]byte{0})
		bodies = append(bodies, b)
		req := httptest.NewRequest(http.MethodPost, "/api/v1/write", b)
		req.ContentLength = 30 << 20 // declared, never sent
		req.Header.Set("Content-Type", rwCTV1)
		req.Header.Set("Content-Encoding", "snappy")
		done := make(chan int, 1)
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			done <- rec.Code
		})
		select {
		case <-b.sent:
		case code := <-done:
			t.Fatalf("stalled body %d answered %d before it stalled: it was charged more than it sent", len(bodies), code)
		}
	}
	if rec := rwPost(t, h, rwCTV1, rwValidV1(t)); rec.Code != http.StatusNoContent {
		t.Fatalf("remote write beside 64 stalled bodies: %d %q", rec.Code, rec.Body.String())
	}
	for _, b := range bodies {
		b.unblock()
	}
	wg.Wait()
	if n := adm.inflight.Load(); n != 0 {
		t.Fatalf("budget not given back: %d bytes in flight", n)
	}
}

// TestLokiPushAdmission: a push that would take the shared budget past its
// bound answers 429 with Retry-After while another holds it, counted in
// decompressed bytes (a small gzip body that inflates is charged inflated).
func TestLokiPushAdmission(t *testing.T) {
	adm := newAdmission(1<<20, 3*time.Second, nil)
	env := newLokiEnvWith(t, func(o *LokiOptions) { o.admission = adm })

	// The first push holds 900 KiB of the 1 MiB budget while it stalls.
	line := strings.Repeat("x", 1000)
	var first bytes.Buffer
	first.WriteString(`{"streams":[{"stream":{"app":"a"},"values":[`)
	for i := range 900 {
		if i > 0 {
			first.WriteString(",")
		}
		fmt.Fprintf(&first, `["%d","%s"]`, lokiNow.UnixNano(), line)
	}
	body := newBlockingBody(first.Bytes()[:900<<10])
	done := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, env.srv.URL+"/loki/api/v1/push", body)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-body.sent
	t.Cleanup(body.unblock)

	// A gzip body of a few KiB that inflates to 400 KiB does not fit.
	var raw bytes.Buffer
	raw.WriteString(`{"streams":[{"stream":{"app":"b"},"values":[`)
	for i := range 400 {
		if i > 0 {
			raw.WriteString(",")
		}
		fmt.Fprintf(&raw, `["%d","%s"]`, lokiNow.UnixNano(), line)
	}
	raw.WriteString(`]}]}`)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw.Bytes())
	_ = zw.Close()
	req, _ := http.NewRequest(http.MethodPost, env.srv.URL+"/loki/api/v1/push", bytes.NewReader(gz.Bytes()))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" || !strings.Contains(string(msg), "ingest") {
		t.Fatalf("push over the budget: %d Retry-After %q %q (gzip body of %d bytes)", resp.StatusCode, resp.Header.Get("Retry-After"), msg, gz.Len())
	}
	body.unblock()
	<-done
	// The client may see its body fail before the server's handler is done
	// with it: wait (bounded) for the server to give the budget back.
	for deadline := time.Now().Add(5 * time.Second); adm.inflight.Load() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("budget not given back after the stalled push ended: %d bytes", adm.inflight.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// With the budget free again the same push is stored.
	req, _ = http.NewRequest(http.MethodPost, env.srv.URL+"/loki/api/v1/push", bytes.NewReader(gz.Bytes()))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("push after the budget was given back: %d", resp.StatusCode)
	}
}

// TestOTLPAdmission: OTLP/HTTP answers 429 + Retry-After in its own
// encoding and gRPC RESOURCE_EXHAUSTED with RetryInfo while the budget is
// held; both store the same request once it is free.
func TestOTLPAdmission(t *testing.T) {
	adm := newAdmission(1<<20, 2*time.Second, nil)
	opts := DefaultOTLPLogsOptions()
	opts.admission = adm
	var pushed int
	sig := newLogsSignal(pusherFunc(func(_ context.Context, ss []logstore.PushStream) error {
		pushed += len(ss)
		return nil
	}), opts)

	ld := plog.NewLogs()
	rec := ld.ResourceLogs().AppendEmpty()
	rec.Resource().Attributes().PutStr("service.name", "trainer")
	lr := rec.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	lr.Body().SetStr(strings.Repeat("y", 200<<10)) // 200 KiB, x3 decoded: 600 KiB
	body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	hold := adm.ticket()
	if err := hold.charge(600 << 10); err != nil {
		t.Fatal(err)
	}

	req := httptest.NewRequest(http.MethodPost, "/v1/logs", bytes.NewReader(body))
	req.Header.Set("Content-Type", otlpContentProto)
	w := httptest.NewRecorder()
	sig.ServeHTTP(w, req)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("HTTP over the budget: %d Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	_, err = sig.grpcExport(context.Background(), &otlpRawMessage{b: body})
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("gRPC over the budget: %v", err)
	}
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if retry == nil || retry.GetRetryDelay().AsDuration() != 2*time.Second {
		t.Fatalf("RESOURCE_EXHAUSTED without RetryInfo of 2s: %v", st.Details())
	}
	hold.release()
	if _, err := sig.grpcExport(context.Background(), &otlpRawMessage{b: body}); err != nil {
		t.Fatalf("gRPC with the budget free: %v", err)
	}
	w = httptest.NewRecorder()
	req = httptest.NewRequest(http.MethodPost, "/v1/logs", bytes.NewReader(body))
	req.Header.Set("Content-Type", otlpContentProto)
	sig.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("HTTP with the budget free: %d %q", w.Code, w.Body.String())
	}
	if pushed != 2 || adm.inflight.Load() != 0 {
		t.Fatalf("pushed %d streams, %d bytes still in flight", pushed, adm.inflight.Load())
	}
}

type pusherFunc func(context.Context, []logstore.PushStream) error

func (f pusherFunc) Push(ctx context.Context, ss []logstore.PushStream) error { return f(ctx, ss) }

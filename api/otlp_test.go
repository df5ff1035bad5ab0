package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/api"
)

// otlpRich is the shared golden payload (9 data points, 14 series).
func otlpRich(tb testing.TB) pmetric.Metrics {
	tb.Helper()
	b, err := os.ReadFile("../ingest/otlp/testdata/rich.json")
	if err != nil {
		tb.Fatal(err)
	}
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(b)
	if err != nil {
		tb.Fatal(err)
	}
	return md
}

// otlpMixed has one valid gauge point and one with an empty attribute key.
func otlpMixed() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	g := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	g.SetName("mixed")
	dps := g.SetEmptyGauge().DataPoints()
	ok := dps.AppendEmpty()
	ok.SetTimestamp(1_700_000_000_000_000_000)
	ok.SetDoubleValue(1)
	bad := dps.AppendEmpty()
	bad.SetTimestamp(1_700_000_000_000_000_000)
	bad.Attributes().PutStr("", "x")
	return md
}

// otlpGauge has one gauge point of the given name.
func otlpGauge(name string) pmetric.Metrics {
	md := otlpMixed()
	m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0)
	m.SetName(name)
	m.Gauge().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool { return p.Attributes().Len() > 0 })
	return md
}

// otlpAllBad has only a point with an empty attribute key.
func otlpAllBad() pmetric.Metrics {
	md := otlpMixed()
	md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().RemoveIf(
		func(p pmetric.NumberDataPoint) bool { return p.Attributes().Len() == 0 })
	return md
}

// otlpManyLabels has one gauge point with n attributes.
func otlpManyLabels(n int) pmetric.Metrics {
	md := otlpGauge("wide")
	attrs := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).Attributes()
	raw := make(map[string]any, n)
	for i := range n {
		raw[fmt.Sprintf("attr_%d", i)] = "v"
	}
	_ = attrs.FromRaw(raw)
	return md
}

func otlpBody(tb testing.TB, md pmetric.Metrics, ct string) []byte {
	tb.Helper()
	req := pmetricotlp.NewExportRequestFromMetrics(md)
	var (
		b   []byte
		err error
	)
	if ct == "application/json" {
		b, err = req.MarshalJSON()
	} else {
		b, err = req.MarshalProto()
	}
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func gz(tb testing.TB, b []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func countSeries(tb testing.TB, q promstorage.Queryable) int {
	tb.Helper()
	qr, err := q.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		tb.Fatal(err)
	}
	defer qr.Close()
	ss := qr.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	n := 0
	for ss.Next() {
		n++
	}
	return n
}

// flakyAppendable fails every append while fail is set.
type flakyAppendable struct {
	promstorage.AppendableV2
	fail bool
}

func (f *flakyAppendable) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	return &flakyAppender{AppenderV2: f.AppendableV2.AppenderV2(ctx), fail: f.fail}
}

type flakyAppender struct {
	promstorage.AppenderV2
	fail bool
}

func (f *flakyAppender) Append(ref promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AOptions) (promstorage.SeriesRef, error) {
	if f.fail {
		return 0, errors.New("wal: no space left on device")
	}
	return f.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
}

type otlpHTTPResult struct {
	code   int
	header http.Header
	// resp is set for 200, st for error answers in an OTLP content type.
	resp pmetricotlp.ExportResponse
	st   *spb.Status
	body []byte
}

func postOTLP(tb testing.TB, url, ct, enc string, body []byte) otlpHTTPResult {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := otlpHTTPResult{code: res.StatusCode, header: res.Header, body: b}
	ct, _, _ = strings.Cut(ct, ";")
	if got := res.Header.Get("Content-Type"); got != ct {
		return out
	}
	json := ct == "application/json"
	if res.StatusCode == http.StatusOK {
		out.resp = pmetricotlp.NewExportResponse()
		if json {
			err = out.resp.UnmarshalJSON(b)
		} else {
			err = out.resp.UnmarshalProto(b)
		}
	} else {
		out.st = &spb.Status{}
		if json {
			err = protojson.Unmarshal(b, out.st)
		} else {
			err = proto.Unmarshal(b, out.st)
		}
	}
	if err != nil {
		tb.Fatalf("decode %d answer %q: %v", res.StatusCode, b, err)
	}
	return out
}

func TestOTLPHTTP(t *testing.T) {
	const (
		pb   = "application/x-protobuf"
		json = "application/json"
	)
	db := teststorage.New(t)
	flaky := &flakyAppendable{AppendableV2: db}
	opts := api.DefaultOTLPOptions()
	opts.MaxRequestBytes = 64 << 10 // small, so the 413 case stays cheap
	srv := httptest.NewServer(api.NewOTLPHandler(flaky, opts))
	defer srv.Close()
	url := srv.URL + "/v1/metrics"

	cases := []struct {
		name       string
		ct, enc    string
		body       []byte
		fail       bool
		code       int
		rejected   int64
		msg        string // substring of partial-success or status message
		series     int    // series stored in total after this case
		retryAfter string
	}{
		{name: "protobuf", ct: pb, body: otlpBody(t, otlpRich(t), pb), code: 200, series: 14},
		// Re-sent points older than their series' newest sample are out of
		// order (gauge t0 and t15, counter t0); the newest are duplicates of
		// the same value and accepted.
		{name: "json gzip, same data again", ct: json, enc: "gzip", body: gz(t, otlpBody(t, otlpRich(t), json)), code: 200, rejected: 3, msg: "out of order", series: 14},
		{name: "json with charset", ct: json + "; charset=utf-8", body: otlpBody(t, otlpMixed(), json), code: 200, rejected: 1, msg: "invalid label name", series: 15},
		{name: "protobuf partial success", ct: pb, body: otlpBody(t, otlpMixed(), pb), code: 200, rejected: 1, msg: "invalid label name", series: 15},
		{name: "all points invalid", ct: pb, body: otlpBody(t, otlpAllBad(), pb), code: 400, msg: "invalid label name", series: 15},
		{name: "too many labels", ct: pb, body: otlpBody(t, otlpManyLabels(1000), pb), code: 400, msg: "more than the limit of 1000 (limits.remote_write.max_labels_per_series)", series: 15},
		{name: "garbage protobuf", ct: pb, body: []byte("\xff\xff\xff not protobuf"), code: 400, msg: "decode OTLP metrics", series: 15},
		{name: "garbage json", ct: json, body: []byte(`{"resourceMetrics": [{"resource": 7}]}`), code: 400, msg: "decode OTLP metrics", series: 15},
		{name: "bad gzip", ct: json, enc: "gzip", body: []byte("not gzip"), code: 400, msg: "gzip", series: 15},
		{name: "too large after decompression", ct: pb, enc: "gzip", body: gz(t, make([]byte, 65<<10)), code: 413, msg: "exceeds 65536 bytes", series: 15},
		{name: "unsupported encoding", ct: pb, enc: "br", body: []byte("x"), code: 415, msg: "content encoding", series: 15},
		{name: "unsupported content type", ct: "text/plain", body: []byte("x"), code: 415, series: 15},
		{name: "storage unavailable", ct: json, body: otlpBody(t, otlpRich(t), json), fail: true, code: 503, msg: "no space left", series: 15, retryAfter: "5"},
		{name: "recovered", ct: pb, body: otlpBody(t, otlpGauge("recovered"), pb), code: 200, series: 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flaky.fail = c.fail
			ct, _, _ := strings.Cut(c.ct, ";")
			got := postOTLP(t, url, c.ct, c.enc, c.body)
			if got.code != c.code {
				t.Fatalf("status %d, want %d: %q", got.code, c.code, got.body)
			}
			if c.ct == "text/plain" {
				return
			}
			if h := got.header.Get("Content-Type"); h != ct {
				t.Fatalf("content type %q, want %q", h, ct)
			}
			if c.code == 200 {
				ps := got.resp.PartialSuccess()
				if ps.RejectedDataPoints() != c.rejected || !strings.Contains(ps.ErrorMessage(), c.msg) || (c.msg == "") != (ps.ErrorMessage() == "") {
					t.Fatalf("partial success %d %q, want %d %q", ps.RejectedDataPoints(), ps.ErrorMessage(), c.rejected, c.msg)
				}
			} else if got.st == nil || !strings.Contains(got.st.GetMessage(), c.msg) {
				t.Fatalf("status %v, want message with %q", got.st, c.msg)
			}
			if ra := got.header.Get("Retry-After"); ra != c.retryAfter {
				t.Fatalf("Retry-After %q, want %q", ra, c.retryAfter)
			}
			if n := countSeries(t, db); n != c.series {
				t.Fatalf("%d series stored, want %d", n, c.series)
			}
		})
	}

	t.Run("GET", func(t *testing.T) {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
			t.Fatalf("status %d allow %q", res.StatusCode, res.Header.Get("Allow"))
		}
	})
}

func TestOTLPHandlerInvalidOptions(t *testing.T) {
	opts := api.DefaultOTLPOptions()
	opts.Ingest.TranslationStrategy = "Bogus"
	if _, err := api.NewOTLPIngester(teststorage.New(t), opts); err == nil {
		t.Fatal("NewOTLPIngester accepted a bogus translation strategy")
	}
	srv := httptest.NewServer(api.NewOTLPHandler(teststorage.New(t), opts))
	defer srv.Close()
	got := postOTLP(t, srv.URL, "application/json", "", otlpBody(t, otlpRich(t), "application/json"))
	if got.code != 500 || !strings.Contains(got.st.GetMessage(), "Bogus") {
		t.Fatalf("status %d %v", got.code, got.st)
	}
}

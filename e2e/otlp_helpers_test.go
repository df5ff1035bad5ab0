package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/jsonutil"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/storage"
)

// otlpPeerBin returns the path of a pinned peer binary (make peers).
func otlpPeerBin(tb testing.TB, name string) string {
	tb.Helper()
	dir := os.Getenv("WEFT_PEER_BIN")
	if dir == "" {
		dir = "../.build/bin"
	}
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("peer binary %s missing: run `make peers` (%v)", name, err)
	}
	return p
}

func otlpFreePort(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// weftOTLP is weft's OTLP receiver running in-process on loopback ports over
// weft's storage (cmd/weft mounts the same handlers).
type weftOTLP struct {
	db       *storage.DB
	httpURL  string // base URL; POST /v1/metrics
	grpcAddr string
}

func startWeftOTLP(tb testing.TB, opts api.OTLPOptions) *weftOTLP {
	tb.Helper()
	db, err := storage.Open(context.Background(), tb.TempDir(), storage.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	ing, err := api.NewOTLPIngester(db, opts, storage.ErrInvalidLabels)
	if err != nil {
		tb.Fatal(err)
	}
	opts.Ingester = ing
	mux := http.NewServeMux()
	mux.Handle("/v1/metrics", api.NewOTLPHandler(db, opts))
	hs := httptest.NewServer(mux)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	gs := grpc.NewServer(api.OTLPGRPCServerOptions(opts)...)
	api.RegisterOTLPGRPC(gs, db, opts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	tb.Cleanup(func() {
		gs.Stop()
		<-done
		hs.Close()
		if err := db.Close(); err != nil {
			tb.Errorf("close weft storage: %v", err)
		}
	})
	return &weftOTLP{db: db, httpURL: hs.URL, grpcAddr: lis.Addr().String()}
}

// otlpPrometheusPeer is the pinned Prometheus with its OTLP receiver enabled.
type otlpPrometheusPeer struct {
	url string
}

func startOTLPPrometheus(tb testing.TB, strategy string) *otlpPrometheusPeer {
	tb.Helper()
	bin := otlpPeerBin(tb, "prometheus")
	dir := tb.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global: {}\notlp:\n  translation_strategy: "+strategy+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	addr := otlpFreePort(tb)
	var logs bytes.Buffer
	cmd := exec.Command(bin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--web.enable-otlp-receiver",
		"--enable-feature=otlp-deltatocumulative,exemplar-storage",
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if tb.Failed() {
			tb.Logf("prometheus log:\n%s", logs.String())
		}
	})
	p := &otlpPrometheusPeer{url: "http://" + addr}
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(p.url + "/-/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("prometheus not ready after 60s: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// postOTLPProto sends md as OTLP/HTTP protobuf and returns the status and body.
func postOTLPProto(tb testing.TB, endpoint string, md pmetric.Metrics) (int, []byte) {
	tb.Helper()
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		tb.Fatal(err)
	}
	res, err := http.Post(endpoint, "application/x-protobuf", bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, body
}

// otlpSample is one stored sample in a comparable form: labels, timestamp and
// the value as Prometheus' JSON API writes it (float string or histogram
// object).
type otlpSample struct {
	Labels string
	T      int64
	V      string
}

func (s otlpSample) String() string { return fmt.Sprintf("%s @%d %s", s.Labels, s.T, s.V) }

func sortOTLPSamples(ss []otlpSample) {
	slices.SortFunc(ss, func(a, b otlpSample) int {
		if c := strings.Compare(a.Labels, b.Labels); c != 0 {
			return c
		}
		return int(a.T - b.T)
	})
}

// queryOTLPPeer runs the instant query q (a range selector) at t and
// returns its raw samples.
func queryOTLPPeer(tb testing.TB, p *otlpPrometheusPeer, q string, t time.Time) []otlpSample {
	tb.Helper()
	u := p.url + "/api/v1/query?" + url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)}}.Encode()
	res, err := http.Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric     map[string]string    `json:"metric"`
				Values     [][2]json.RawMessage `json:"values"`
				Histograms [][2]json.RawMessage `json:"histograms"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		tb.Fatal(err)
	}
	if out.Status != "success" || out.Data.ResultType != "matrix" {
		tb.Fatalf("prometheus query %q: %s %s %s", q, out.Status, out.Data.ResultType, out.Error)
	}
	var ss []otlpSample
	for _, r := range out.Data.Result {
		ls := labels.FromMap(r.Metric).String()
		add := func(pairs [][2]json.RawMessage, isHist bool) {
			for _, p := range pairs {
				var ts float64
				if err := json.Unmarshal(p[0], &ts); err != nil {
					tb.Fatal(err)
				}
				v := string(p[1])
				if !isHist {
					if err := json.Unmarshal(p[1], &v); err != nil {
						tb.Fatal(err)
					}
				} else {
					var buf bytes.Buffer
					if err := json.Compact(&buf, p[1]); err != nil {
						tb.Fatal(err)
					}
					v = buf.String()
				}
				ss = append(ss, otlpSample{Labels: ls, T: int64(math.Round(ts * 1000)), V: v})
			}
		}
		add(r.Values, false)
		add(r.Histograms, true)
	}
	sortOTLPSamples(ss)
	return ss
}

// weftOTLPSamples returns the samples of weft's storage in [mint, maxt] matching
// ms, formatted as Prometheus' JSON API would write them. Staleness markers
// are left out, as PromQL leaves them out.
func weftOTLPSamples(tb testing.TB, q promstorage.Queryable, mint, maxt int64, ms ...*labels.Matcher) []otlpSample {
	tb.Helper()
	qr, err := q.Querier(mint, maxt)
	if err != nil {
		tb.Fatal(err)
	}
	defer qr.Close()
	set := qr.Select(context.Background(), false, nil, ms...)
	var (
		out []otlpSample
		it  chunkenc.Iterator
	)
	for set.Next() {
		s := set.At()
		ls := s.Labels().String()
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			var (
				t  int64
				fh *histogram.FloatHistogram
			)
			switch vt {
			case chunkenc.ValFloat:
				var v float64
				t, v = it.At()
				if value.IsStaleNaN(v) {
					continue
				}
				out = append(out, otlpSample{Labels: ls, T: t, V: strconv.FormatFloat(v, 'f', -1, 64)})
				continue
			case chunkenc.ValHistogram:
				var h *histogram.Histogram
				t, h = it.AtHistogram(nil)
				if value.IsStaleNaN(h.Sum) {
					continue
				}
				fh = h.ToFloat(nil)
			case chunkenc.ValFloatHistogram:
				t, fh = it.AtFloatHistogram(nil)
				if value.IsStaleNaN(fh.Sum) {
					continue
				}
			}
			if t < mint || t > maxt {
				continue
			}
			stream := jsoniter.ConfigCompatibleWithStandardLibrary.BorrowStream(nil)
			jsonutil.MarshalHistogram(fh, stream)
			out = append(out, otlpSample{Labels: ls, T: t, V: string(stream.Buffer())})
			jsoniter.ConfigCompatibleWithStandardLibrary.ReturnStream(stream)
		}
		if err := it.Err(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := set.Err(); err != nil {
		tb.Fatal(err)
	}
	sortOTLPSamples(out)
	return out
}

// diffOTLPSamples describes how got differs from want, or returns "".
func diffOTLPSamples(got, want []otlpSample) string {
	var b strings.Builder
	g := map[string]bool{}
	for _, s := range got {
		g[s.String()] = true
	}
	w := map[string]bool{}
	for _, s := range want {
		w[s.String()] = true
	}
	for _, s := range want {
		if !g[s.String()] {
			fmt.Fprintf(&b, "  missing: %s\n", s)
		}
	}
	for _, s := range got {
		if !w[s.String()] {
			fmt.Fprintf(&b, "  extra:   %s\n", s)
		}
	}
	return b.String()
}

// parseOTLPLabels parses labels.Labels.String output back.
func parseOTLPLabels(s string) (labels.Labels, error) {
	return parser.NewParser(parser.Options{}).ParseMetric(s)
}

// queryOTLPPeerExemplars returns Prometheus' exemplars for q in [start,
// end] as sorted "series exemplar-labels value timestamp" lines.
func queryOTLPPeerExemplars(tb testing.TB, p *otlpPrometheusPeer, q string, start, end time.Time) []string {
	tb.Helper()
	u := p.url + "/api/v1/query_exemplars?" + url.Values{
		"query": {q},
		"start": {strconv.FormatFloat(float64(start.UnixMilli())/1000, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)},
	}.Encode()
	res, err := http.Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Status string `json:"status"`
		Data   []struct {
			SeriesLabels map[string]string `json:"seriesLabels"`
			Exemplars    []struct {
				Labels    map[string]string `json:"labels"`
				Value     string            `json:"value"`
				Timestamp float64           `json:"timestamp"`
			} `json:"exemplars"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		tb.Fatal(err)
	}
	if out.Status != "success" {
		tb.Fatalf("query_exemplars: %s", out.Status)
	}
	var lines []string
	for _, d := range out.Data {
		for _, e := range d.Exemplars {
			lines = append(lines, fmt.Sprintf("%s %s %s %d", labels.FromMap(d.SeriesLabels), labels.FromMap(e.Labels), e.Value, int64(math.Round(e.Timestamp*1000))))
		}
	}
	slices.Sort(lines)
	return lines
}

// weftOTLPExemplars returns weft's exemplars in the same form.
func weftOTLPExemplars(tb testing.TB, db *storage.DB, mint, maxt int64, ms ...*labels.Matcher) []string {
	tb.Helper()
	eq, err := db.ExemplarQuerier(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	res, err := eq.Select(mint, maxt, ms)
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for _, r := range res {
		for _, e := range r.Exemplars {
			lines = append(lines, fmt.Sprintf("%s %s %s %d", r.SeriesLabels, e.Labels, strconv.FormatFloat(e.Value, 'f', -1, 64), e.Ts))
		}
	}
	slices.Sort(lines)
	return lines
}

// queryWeftOTLP evaluates the instant query q (a range selector) at t with
// Prometheus' PromQL engine over weft's storage and returns its samples in
// the form queryOTLPPeer returns Prometheus' answer.
func queryWeftOTLP(tb testing.TB, db *storage.DB, q string, t time.Time) []otlpSample {
	tb.Helper()
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 10_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	qry, err := eng.NewInstantQuery(context.Background(), db, nil, q, t)
	if err != nil {
		tb.Fatal(err)
	}
	defer qry.Close()
	res := qry.Exec(context.Background())
	if res.Err != nil {
		tb.Fatal(res.Err)
	}
	m, err := res.Matrix()
	if err != nil {
		tb.Fatal(err)
	}
	var out []otlpSample
	for _, s := range m {
		ls := s.Metric.String()
		for _, p := range s.Floats {
			out = append(out, otlpSample{Labels: ls, T: p.T, V: strconv.FormatFloat(p.F, 'f', -1, 64)})
		}
		for _, p := range s.Histograms {
			stream := jsoniter.ConfigCompatibleWithStandardLibrary.BorrowStream(nil)
			jsonutil.MarshalHistogram(p.H, stream)
			out = append(out, otlpSample{Labels: ls, T: p.T, V: string(stream.Buffer())})
			jsoniter.ConfigCompatibleWithStandardLibrary.ReturnStream(stream)
		}
	}
	sortOTLPSamples(out)
	return out
}

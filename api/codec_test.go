package api

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// nastyStrings are label values and annotations that exercise every
// escaping rule.
var nastyStrings = []string{
	"", "plain", `quo"te`, `back\slash`, "new\nline", "tab\t", "cr\r", "\x00\x01\x1f\x7f",
	"<b>&amp;</b>", "ünïcödé", "日本", "\u2028\u2029", "bad\xffutf8\xc3", "emoji 🚀",
}

func randString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return nastyStrings[r.IntN(len(nastyStrings))]
	}
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return string(b)
}

func randLabels(r *rand.Rand) labels.Labels {
	b := labels.NewScratchBuilder(4)
	for range r.IntN(5) {
		b.Add(randString(r), randString(r))
	}
	b.Sort()
	return b.Labels()
}

func randFloat(r *rand.Rand) float64 {
	switch r.IntN(10) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1 - 2*r.IntN(2))
	case 2:
		return math.Float64frombits(value.StaleNaN)
	case 3:
		return math.Copysign(0, -1)
	case 4:
		return r.Float64() * 1e-9
	case 5:
		return r.Float64() * 1e25
	case 6:
		return float64(r.IntN(1000))
	}
	return r.NormFloat64() * 1e3
}

func randTime(r *rand.Rand) int64 { return r.Int64N(4e12) - 1e12 }

// randResponse returns a success response of a random kind, sometimes one
// weft's codec hands to v1.JSONCodec (histograms, scalars, strings).
func randResponse(r *rand.Rand) *v1.Response {
	resp := &v1.Response{Status: "success"}
	for range r.IntN(3) {
		resp.Warnings = append(resp.Warnings, randString(r))
	}
	for range r.IntN(3) {
		resp.Infos = append(resp.Infos, randString(r))
	}
	switch r.IntN(5) {
	case 0:
		v := promql.Vector{}
		for range r.IntN(5) {
			s := promql.Sample{Metric: randLabels(r), T: randTime(r), F: randFloat(r)}
			if r.IntN(20) == 0 {
				s.H = &histogram.FloatHistogram{Count: 3, Sum: 1}
			}
			v = append(v, s)
		}
		resp.Data = &v1.QueryData{ResultType: parser.ValueTypeVector, Result: v}
	case 1:
		m := promql.Matrix{}
		for range r.IntN(4) {
			s := promql.Series{Metric: randLabels(r)}
			for range r.IntN(4) {
				s.Floats = append(s.Floats, promql.FPoint{T: randTime(r), F: randFloat(r)})
			}
			m = append(m, s)
		}
		resp.Data = &v1.QueryData{ResultType: parser.ValueTypeMatrix, Result: m}
	case 2:
		ls := []labels.Labels{}
		for range r.IntN(5) {
			ls = append(ls, randLabels(r))
		}
		resp.Data = ls
	case 3:
		resp.Data = &v1.QueryData{ResultType: parser.ValueTypeScalar, Result: promql.Scalar{T: randTime(r), V: randFloat(r)}}
	default:
		resp.Data = []string{randString(r), randString(r)}
	}
	return resp
}

// TestJSONCodecMatchesUpstream requires weft's codec to write exactly the
// bytes of Prometheus' JSON codec.
func TestJSONCodecMatchesUpstream(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		resp := randResponse(r)
		want, err := v1.JSONCodec{}.Encode(resp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := jsonCodec{}.Encode(resp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("response %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// FuzzJSONCodec compares weft's codec with Prometheus' on responses built
// from fuzzed label strings, values and annotations.
func FuzzJSONCodec(f *testing.F) {
	for _, s := range nastyStrings {
		f.Add(s, s, 1.5, int64(1700000000123), s)
	}
	f.Fuzz(func(t *testing.T, name, val string, v float64, ts int64, warn string) {
		ls := labels.FromStrings(name, val, "job", val)
		for _, resp := range []*v1.Response{
			{Status: "success", Data: &v1.QueryData{ResultType: parser.ValueTypeVector, Result: promql.Vector{{Metric: ls, T: ts, F: v}}}, Warnings: []string{warn}},
			{Status: "success", Data: &v1.QueryData{ResultType: parser.ValueTypeMatrix, Result: promql.Matrix{{Metric: ls, Floats: []promql.FPoint{{T: ts, F: v}, {T: ts + 1, F: -v}}}}}, Infos: []string{warn}},
			{Status: "success", Data: []labels.Labels{ls, labels.EmptyLabels()}},
		} {
			want, werr := v1.JSONCodec{}.Encode(resp)
			got, gerr := jsonCodec{}.Encode(resp)
			if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("got %s (%v)\nwant %s (%v)", got, gerr, want, werr)
			}
		}
	})
}

// BenchmarkJSONCodec encodes benchAnswer with each codec.
func BenchmarkJSONCodec(b *testing.B) {
	resp := benchAnswer()
	for _, c := range []struct {
		name  string
		codec v1.Codec
	}{{"prometheus", v1.JSONCodec{}}, {"weft", jsonCodec{}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				out, err := c.codec.Encode(resp)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(out)))
			}
		})
	}
}

// BenchmarkAnswerGzip compresses that answer at Prometheus' level
// (gzip's default) and at weft's (BestSpeed, fastGzip), reporting the
// compressed size beside the time.
func BenchmarkAnswerGzip(b *testing.B) {
	answer, err := jsonCodec{}.Encode(benchAnswer())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		level int
	}{{"default", gzip.DefaultCompression}, {"best_speed", gzip.BestSpeed}} {
		b.Run(c.name, func(b *testing.B) {
			var out bytes.Buffer
			zw, err := gzip.NewWriterLevel(&out, c.level)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				out.Reset()
				zw.Reset(&out)
				if _, err := zw.Write(answer); err != nil {
					b.Fatal(err)
				}
				if err := zw.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(answer)))
			b.ReportMetric(float64(out.Len())/float64(len(answer)), "compressed/raw")
		})
	}
}

// benchAnswer is an instant vector of 100k GPU series, the size of
// weft-bench's power_by_pod answer.
func benchAnswer() *v1.Response {
	v := make(promql.Vector, 100_000)
	for i := range v {
		v[i] = promql.Sample{
			Metric: labels.FromStrings("__name__", "DCGM_FI_DEV_POWER_USAGE", "Hostname", fmt.Sprintf("node-%05d", i/8),
				"UUID", fmt.Sprintf("GPU-%08x-1234-5678-9abc-%012x", i*7919, i*104729),
				"gpu", strconv.Itoa(i%8), "model", "llama-3-70b", "modelName", "NVIDIA H100 80GB HBM3", "namespace", fmt.Sprintf("team-%d", i%9),
				"pod", fmt.Sprintf("run-r%d-rank-%d", i/64, i%64), "rank", strconv.Itoa(i%64), "run_id", fmt.Sprintf("r%d", i/64),
				"team", "pretrain", "tenant", "acme"),
			T: 1796072925123, F: 312.25 + float64(i%100),
		}
	}
	return &v1.Response{Status: "success", Data: &v1.QueryData{ResultType: parser.ValueTypeVector, Result: v}}
}

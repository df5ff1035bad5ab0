package chunkenc

import (
	"sync"
	"testing"
	"time"

	promchunk "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// sampleChunk is a run of one series' samples that is encoded as a unit.
type sampleChunk struct {
	kind gputelemetry.Kind
	t    []int64
	v    []float64
}

// chunkByCount splits every series into chunks of at most n samples, as
// Prometheus' head does (without its 2h cut, which only shortens chunks).
func chunkByCount(all []gputelemetry.Series, n int) []sampleChunk {
	var out []sampleChunk
	for _, s := range all {
		for i := 0; i < len(s.T); i += n {
			j := min(i+n, len(s.T))
			out = append(out, sampleChunk{kind: s.Kind, t: s.T[i:j], v: s.V[i:j]})
		}
	}
	return out
}

// chunkByTime splits every series at multiples of d since the epoch, as a
// compaction into time-aligned blocks of length d does.
func chunkByTime(all []gputelemetry.Series, d time.Duration) []sampleChunk {
	ms := d.Milliseconds()
	var out []sampleChunk
	for _, s := range all {
		i := 0
		for i < len(s.T) {
			end := (s.T[i]/ms + 1) * ms
			j := i
			for j < len(s.T) && s.T[j] < end {
				j++
			}
			out = append(out, sampleChunk{kind: s.Kind, t: s.T[i:j], v: s.V[i:j]})
			i = j
		}
	}
	return out
}

func encodeWeft(c sampleChunk, buf []byte) []byte {
	buf = AppendTimestamps(buf[:0], c.t)
	return AppendFloats(buf, c.v)
}

func encodeProm(tb testing.TB, c sampleChunk) *promchunk.XORChunk {
	tb.Helper()
	xc := promchunk.NewXORChunk()
	app, err := xc.Appender()
	if err != nil {
		tb.Fatal(err)
	}
	for i := range c.t {
		app.Append(0, c.t[i], c.v[i])
	}
	return xc
}

var (
	dayOnce sync.Once
	daySet  []gputelemetry.Series
)

// telemetryDay is one day of the default cluster (2 nodes × 8 GPUs × 13
// metrics, about 1.1 M samples), generated once per test binary.
func telemetryDay() []gputelemetry.Series {
	dayOnce.Do(func() {
		o := gputelemetry.DefaultOptions()
		o.Duration = 24 * time.Hour
		daySet = gputelemetry.Generate(o)
	})
	return daySet
}

func TestTelemetryDayRoundTrip(t *testing.T) {
	all := telemetryDay()
	layouts := []struct {
		name   string
		chunks []sampleChunk
	}{
		{name: "120 samples", chunks: chunkByCount(all, 120)},
		{name: "2h blocks", chunks: chunkByTime(all, 2*time.Hour)},
		{name: "1d blocks", chunks: chunkByTime(all, 24*time.Hour)},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			var buf []byte
			var ts []int64
			var vs []float64
			samples := 0
			for _, c := range l.chunks {
				buf = encodeWeft(c, buf)
				var err error
				var rest []byte
				if ts, rest, err = DecodeTimestamps(ts[:0], buf); err != nil {
					t.Fatal(err)
				}
				if vs, rest, err = DecodeFloats(vs[:0], rest); err != nil {
					t.Fatal(err)
				}
				if len(rest) != 0 {
					t.Fatalf("%d bytes left after a chunk", len(rest))
				}
				if !slicesEqualInt(ts, c.t) || !floatsEqualBits(vs, c.v) {
					t.Fatalf("%v chunk of %d samples does not round trip", c.kind, len(c.t))
				}
				samples += len(c.t)
			}
			if samples < 1_000_000 {
				t.Fatalf("only %d samples in a day of telemetry", samples)
			}
		})
	}
}

// TestTelemetryBeatsPrometheus is a differential guard on compression: a day
// compacted into one block per series must take at most half the bytes of
// Prometheus' 120-sample XOR chunks of the same samples, and weft's own
// 120-sample chunks must not be larger than Prometheus'.
func TestTelemetryBeatsPrometheus(t *testing.T) {
	all := telemetryDay()
	prom := 0
	for _, c := range chunkByCount(all, 120) {
		prom += len(encodeProm(t, c).Bytes())
	}
	size := func(chunks []sampleChunk) int {
		total := 0
		var buf []byte
		for _, c := range chunks {
			buf = encodeWeft(c, buf)
			total += len(buf)
		}
		return total
	}
	w120, wDay := size(chunkByCount(all, 120)), size(chunkByTime(all, 24*time.Hour))
	t.Logf("bytes: prometheus 120-sample chunks %d, weft 120-sample chunks %d (%.3fx), weft 1d blocks %d (%.3fx)",
		prom, w120, float64(w120)/float64(prom), wDay, float64(wDay)/float64(prom))
	if w120 > prom {
		t.Errorf("weft 120-sample chunks %d bytes > Prometheus %d", w120, prom)
	}
	if 2*wDay > prom {
		t.Errorf("weft 1d blocks %d bytes > half of Prometheus %d", wDay, prom)
	}
}

func slicesEqualInt(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package chunkenc

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/model/value"
	promchunk "github.com/prometheus/prometheus/tsdb/chunkenc"
)

type xor2Sample struct {
	st, t int64
	v     float64
}

// xor2Samples derives a sample sequence from arbitrary bytes: timestamp
// steps on a grid, with jitter, 13/20/64-bit delta-of-delta jumps;
// values repeated, counters, random bit patterns, stale and plain NaN;
// start timestamps absent, constant or changing.
func xor2Samples(data []byte, maxLen int) []xor2Sample {
	r := fuzzReader{b: data}
	var ss []xor2Sample
	var x xor2Sample
	step := int64(15000)
	x.t = 1_700_000_000_000
	for !r.done() && len(ss) < maxLen {
		op := r.byte()
		switch op % 6 {
		case 0:
			x.t += step
		case 1:
			x.t += step + int64(int8(r.byte()))
		case 2:
			x.t += step + int64(int16(r.byte())<<8|int16(r.byte()))*8
		case 3:
			x.t += int64(r.uint64() >> (r.byte() % 64))
		case 4:
			step = int64(r.byte()) * 1000
			x.t += step
		case 5:
			x.t = int64(r.uint64())
		}
		switch (op / 6) % 7 {
		case 0:
			// repeat
		case 1:
			x.v++
		case 2:
			x.v += float64(r.byte()) * 0.25
		case 3:
			x.v = math.Float64frombits(r.uint64())
		case 4:
			x.v = math.Float64frombits(value.StaleNaN)
		case 5:
			x.v = math.NaN()
		case 6:
			x.v = float64(int64(r.uint64()>>20)) / 1000
		}
		switch (op / 42) % 6 {
		case 0, 1, 2:
			// unchanged
		case 3:
			x.st = 0
		case 4:
			x.st = x.t - int64(r.byte())*1000
		case 5:
			x.st = int64(r.uint64())
		}
		ss = append(ss, x)
	}
	return ss
}

// checkXOR2Writer appends ss to an XOR2Writer and to Prometheus' XOR2
// appender, comparing the chunk bytes after every sample, then reads the
// chunk back with Prometheus' iterator.
func checkXOR2Writer(t testing.TB, ss []xor2Sample) {
	t.Helper()
	w := NewXOR2Writer(0)
	pc := promchunk.NewXOR2Chunk()
	pa, err := pc.Appender()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range ss {
		w.Append(s.st, s.t, s.v)
		pa.Append(s.st, s.t, s.v)
		if !bytes.Equal(w.Bytes(), pc.Bytes()) {
			t.Fatalf("sample %d (%+v): chunk differs from Prometheus'\n got %x\nwant %x", i, s, w.Bytes(), pc.Bytes())
		}
		if w.NumSamples() != i+1 {
			t.Fatalf("NumSamples = %d, want %d", w.NumSamples(), i+1)
		}
	}
	c, err := promchunk.FromData(promchunk.EncXOR2, w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	it := c.Iterator(nil)
	for i, s := range ss {
		if it.Next() != promchunk.ValFloat {
			t.Fatalf("sample %d: iterator ended: %v", i, it.Err())
		}
		gt, gv := it.At()
		// Prometheus decodes a stale NaN as the stale bit pattern and
		// every other value bit for bit.
		if gt != s.t || math.Float64bits(gv) != math.Float64bits(s.v) {
			t.Fatalf("sample %d: got (%d, %x), want (%d, %x)", i, gt, math.Float64bits(gv), s.t, math.Float64bits(s.v))
		}
		if st := it.AtST(); st != s.st {
			t.Fatalf("sample %d: st %d, want %d", i, st, s.st)
		}
	}
	if it.Next() != promchunk.ValNone {
		t.Fatal("iterator has more samples than appended")
	}
}

func TestXOR2WriterMatchesPrometheus(t *testing.T) {
	grid := func(n int, f func(i int) xor2Sample) []xor2Sample {
		ss := make([]xor2Sample, n)
		for i := range ss {
			ss[i] = f(i)
		}
		return ss
	}
	rng := rand.New(rand.NewPCG(1, 2))
	stale := math.Float64frombits(value.StaleNaN)
	tests := []struct {
		name string
		ss   []xor2Sample
	}{
		{"one", grid(1, func(int) xor2Sample { return xor2Sample{t: 1000, v: 1} })},
		{"constant grid", grid(240, func(i int) xor2Sample { return xor2Sample{t: int64(i) * 15000, v: 42} })},
		{"counter grid", grid(240, func(i int) xor2Sample { return xor2Sample{t: int64(i) * 15000, v: float64(i)} })},
		{"runs of repeats", grid(240, func(i int) xor2Sample {
			// Single 0 bits (same value, same step) that end on a byte
			// boundary before a multi-bit field.
			return xor2Sample{t: int64(i) * 15000, v: float64(i / (1 + i%7))}
		})},
		{"jitter", grid(240, func(i int) xor2Sample {
			return xor2Sample{t: int64(i)*15000 + rng.Int64N(200), v: rng.Float64() * 100}
		})},
		{"big jumps", grid(200, func(i int) xor2Sample {
			return xor2Sample{t: int64(i)*15000 + int64(i%3)*700_000 + int64(i%5)<<40, v: float64(i) * 0.5}
		})},
		{"random bits", grid(200, func(i int) xor2Sample {
			return xor2Sample{t: int64(i) * 1000, v: math.Float64frombits(rng.Uint64())}
		})},
		{"stale first", grid(50, func(i int) xor2Sample {
			if i%7 == 0 {
				return xor2Sample{t: int64(i) * 1000, v: stale}
			}
			return xor2Sample{t: int64(i) * 1000, v: float64(i)}
		})},
		{"stale with jitter", grid(60, func(i int) xor2Sample {
			v := float64(i)
			if i%4 == 1 {
				v = stale
			}
			return xor2Sample{t: int64(i)*1000 + int64(i%3), v: v}
		})},
		{"constant st", grid(200, func(i int) xor2Sample {
			return xor2Sample{st: 500, t: 1000 + int64(i)*15000, v: float64(i)}
		})},
		{"st changes", grid(200, func(i int) xor2Sample {
			return xor2Sample{st: int64(i/10) * 150000, t: 1000 + int64(i)*15000, v: float64(i % 9)}
		})},
		{"st on second", grid(20, func(i int) xor2Sample {
			return xor2Sample{st: int64(min(i, 1)) * 7, t: 1000 + int64(i)*15000, v: 1}
		})},
		{"st per sample", grid(300, func(i int) xor2Sample {
			return xor2Sample{st: int64(i)*15000 - rng.Int64N(1<<uint(i%40)), t: 1000 + int64(i)*15000, v: float64(i % 3)}
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkXOR2Writer(t, tc.ss) })
	}
}

func TestXOR2WriterCompact(t *testing.T) {
	w := NewXOR2Writer(0)
	for i := range 300 {
		w.Append(0, int64(i)*15000, float64(i)*1.5)
	}
	want := bytes.Clone(w.Bytes())
	w.Compact()
	if !bytes.Equal(w.Bytes(), want) || cap(w.Bytes()) > len(want)+32 {
		t.Fatalf("Compact: len %d cap %d, want the same %d bytes", len(w.Bytes()), cap(w.Bytes()), len(want))
	}
	// Appending after Compact continues the same chunk.
	pc := promchunk.NewXOR2Chunk()
	pa, _ := pc.Appender()
	for i := range 301 {
		pa.Append(0, int64(i)*15000, float64(i)*1.5)
	}
	w.Append(0, 300*15000, 300*1.5)
	if !bytes.Equal(w.Bytes(), pc.Bytes()) {
		t.Fatal("append after Compact differs from Prometheus")
	}
}

func FuzzXOR2Writer(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{43, 7, 200, 1, 2, 3, 4, 5, 6, 7, 8, 9, 129, 130, 250, 251, 252})
	f.Add(bytes.Repeat([]byte{6, 13, 211}, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkXOR2Writer(t, xor2Samples(data, 400))
	})
}

// BenchmarkXOR2Append appends 120-sample chunks (15 s grid with jitter,
// changing values) with XOR2Writer and with Prometheus' XOR2 appender.
func BenchmarkXOR2Append(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	ss := make([]xor2Sample, 120)
	for i := range ss {
		ss[i] = xor2Sample{t: int64(i)*15000 + rng.Int64N(3)*15000, v: float64(i)*7500 + float64(i%13)}
	}
	b.Run("weft", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := NewXOR2Writer(32)
			for _, s := range ss {
				w.Append(s.st, s.t, s.v)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)), "ns/sample")
	})
	b.Run("prometheus", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := promchunk.NewXOR2Chunk()
			a, _ := c.Appender()
			for _, s := range ss {
				a.Append(s.st, s.t, s.v)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ss)), "ns/sample")
	})
}

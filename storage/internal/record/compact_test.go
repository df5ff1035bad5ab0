package record

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func sameSamples(a, b []Sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.ST != y.ST || x.T != y.T || math.Float64bits(x.V) != math.Float64bits(y.V) {
			return false
		}
	}
	return true
}

func TestCompactSamplesRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		ss   []Sample
	}{
		{"one", []Sample{{ID: 1, T: 1000, V: 1}}},
		{"scrape", []Sample{{ID: 7, T: 60_000, V: 1}, {ID: 8, T: 60_000, V: 2}, {ID: 9, T: 60_000, V: math.NaN()}, {ID: 5, T: 60_000, V: math.Inf(-1)}}},
		{"start timestamps", []Sample{{ID: 3, ST: 500, T: 60_000, V: -2.5}, {ID: 3, ST: -7, T: 61_000, V: 0}, {ID: 4, T: 61_000, V: 1}}},
		{"zero time and id", []Sample{{ID: 0, T: 0, V: 1}, {ID: 0, T: 0, V: 2}}},
		{"negative times", []Sample{{ID: 2, T: -5, V: 0}, {ID: 4, T: math.MinInt64, V: 1e300}, {ID: 1, T: math.MaxInt64, V: -0.0}}},
		{"id jumps", []Sample{{ID: math.MaxUint64, T: 1, V: 1}, {ID: 0, T: 1, V: 2}, {ID: 1 << 61, T: 1, V: 3}, {ID: 1<<63 + 5, T: 2, V: 4}, {ID: 1, T: 2, V: 5}}},
	}
	var d Decoder
	var out Decoded
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := AppendCompactSamples(nil, c.ss)
			if err := d.Decode(rec, &out); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if out.Type != TypeSamplesCompact || !sameSamples(out.Samples, c.ss) {
				t.Fatalf("decoded %+v (type %d), want %+v", out.Samples, out.Type, c.ss)
			}
			// Every proper prefix is either fewer whole entries or a
			// corrupt record, never a panic or a different entry.
			for i := 1; i < len(rec); i++ {
				err := d.Decode(rec[:i], &out)
				if err != nil && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("truncated at %d: unexpected error type %v", i, err)
				}
				if err == nil && !sameSamples(out.Samples, c.ss[:len(out.Samples)]) {
					t.Fatalf("truncated at %d: decoded %+v", i, out.Samples)
				}
			}
		})
	}
}

// TestCompactSamplesSize pins the size that makes the compact record worth
// having: a batch sharing one timestamp over consecutive series costs one
// head byte and the value per entry after the first.
func TestCompactSamplesSize(t *testing.T) {
	ss := make([]Sample, 1000)
	for i := range ss {
		ss[i] = Sample{ID: uint64(20_000 + i), T: 1_764_547_200_000, V: float64(i) * 0.25}
	}
	rec := AppendCompactSamples(nil, ss)
	first := binary.PutUvarint(make([]byte, 10), uint64(2*20_000)<<compactFlags|compactNewT) +
		binary.PutVarint(make([]byte, 10), ss[0].T) + 8
	if want := 1 + first + 9*(len(ss)-1); len(rec) != want {
		t.Fatalf("record is %d bytes, want %d", len(rec), want)
	}
	if legacy := AppendSamples(nil, ss); len(rec) >= len(legacy)*3/4 {
		t.Fatalf("compact record %d bytes, legacy %d: want under 3/4", len(rec), len(legacy))
	}
}

func TestCompactSamplesCorrupt(t *testing.T) {
	cases := []struct {
		name string
		rec  []byte
	}{
		{"absolute id with delta bits", append([]byte{byte(TypeSamplesCompact), compactAbsID | 1<<compactFlags, 1}, make([]byte, 8)...)},
		{"short value", []byte{byte(TypeSamplesCompact), 0, 1, 2, 3}},
		{"bad head varint", []byte{byte(TypeSamplesCompact), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"missing t delta", []byte{byte(TypeSamplesCompact), compactNewT}},
	}
	var d Decoder
	var out Decoded
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := d.Decode(c.rec, &out); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
		})
	}
}

// FuzzCompactSamples checks that the compact decoder never panics on any
// payload and that whatever samples the fuzzer's bytes stand for (a stream
// of id, st, t and value words) decode to themselves.
func FuzzCompactSamples(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add(AppendCompactSamples(nil, []Sample{{ID: 1, T: 2, V: 3}, {ID: 1 << 62, ST: -1, T: math.MinInt64, V: 4}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoder
		var out Decoded
		_ = d.Decode(append([]byte{byte(TypeSamplesCompact)}, b...), &out)

		// Samples from 8-byte words: id, st, t, value bits; a zero st half
		// the time so both forms of entry occur.
		var ss []Sample
		for len(b) >= 32 {
			w := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
			s := Sample{ID: w(0), ST: int64(w(1)), T: int64(w(2)), V: math.Float64frombits(w(3))}
			if s.ST&1 == 0 {
				s.ST = 0
			}
			if s.T&2 == 0 && len(ss) > 0 {
				s.T = ss[len(ss)-1].T
			}
			if s.ID&4 == 0 && len(ss) > 0 {
				s.ID = ss[len(ss)-1].ID + s.ID%16 - 8
			}
			ss = append(ss, s)
			b = b[32:]
		}
		if err := d.Decode(AppendCompactSamples(nil, ss), &out); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !sameSamples(out.Samples, ss) {
			t.Fatalf("decoded %+v, want %+v", out.Samples, ss)
		}
	})
}

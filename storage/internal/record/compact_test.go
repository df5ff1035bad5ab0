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
		{"id jumps", []Sample{{ID: math.MaxUint64, T: 1, V: 1}, {ID: 0, T: 1, V: 2}, {ID: 1 << 61, T: 1, V: 3}, {ID: 1<<63 + 5, T: 2, V: 4}, {ID: 1, T: 2, V: 5}, {ID: 4, T: 2, V: 6}, {ID: 11, T: 2, V: 7}}},
		{"value lengths", []Sample{{ID: 1, V: 2}, {ID: 1, V: 1}, {ID: 1, V: 1.5}, {ID: 1, V: -0.0}, {ID: 1, V: math.Float64frombits(0x0102030405060700)}, {ID: 1, V: math.Float64frombits(1)}, {ID: 1, V: math.Float64frombits(1 << 56)}}},
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

// TestCompactSamplesSize pins the sizes that make the compact record worth
// having: consecutive series sharing one timestamp cost a control byte and
// the value's significant bytes an entry.
func TestCompactSamplesSize(t *testing.T) {
	const ts = 1_764_547_200_000
	cases := []struct {
		name  string
		value func(i int) float64
		entry int // bytes of every entry after the first
	}{
		// Odd integers in [2^20, 2^21): 12 bits of sign and exponent and
		// 20 of mantissa.
		{"integers", func(i int) float64 { return float64(1<<20 + 2*i + 1) }, 1 + 4},
		{"zero", func(int) float64 { return 0 }, 1},
		{"full mantissa", func(i int) float64 { return math.Float64frombits(0x3ff0000000000001 | uint64(i)<<8) }, 1 + 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss := make([]Sample, 1000)
			for i := range ss {
				ss[i] = Sample{ID: uint64(20_000 + i), T: ts, V: c.value(i + 1)}
			}
			rec := AppendCompactSamples(nil, ss)
			// The record's type, the first entry's control byte, id and
			// time, then the rest.
			var tmp [binary.MaxVarintLen64]byte
			head := 1 + 1 + binary.PutUvarint(tmp[:], 2*20_000) + binary.PutVarint(tmp[:], ts)
			if want := head + (c.entry - 1) + c.entry*(len(ss)-1); len(rec) != want {
				t.Fatalf("record is %d bytes, want %d", len(rec), want)
			}
		})
	}
}

func TestCompactSamplesCorrupt(t *testing.T) {
	ctrl := func(id, val, flags byte) byte { return id<<compactIDShift | val<<compactValShift | flags }
	cases := []struct {
		name string
		rec  []byte
	}{
		{"short value", []byte{byte(TypeSamplesCompact), ctrl(0, 4, 0), 1, 2, 3}},
		{"short full value", []byte{byte(TypeSamplesCompact), ctrl(0, 7, 0), 1, 2, 3, 4, 5, 6, 7}},
		{"bad id varint", []byte{byte(TypeSamplesCompact), ctrl(7, 0, 0), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"missing id", []byte{byte(TypeSamplesCompact), ctrl(7, 0, 0)}},
		{"missing t delta", []byte{byte(TypeSamplesCompact), ctrl(0, 0, compactNewT)}},
		{"missing st", []byte{byte(TypeSamplesCompact), ctrl(0, 0, compactHasST)}},
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
				s.V = math.Float64frombits(w(3) &^ (1<<(w(1)%64) - 1)) // trailing zeros
			}
			if s.ST&8 == 0 {
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

package chunkenc

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// staleNaN is Prometheus' staleness marker (model/value.StaleNaN).
const staleNaN = 0x7ff0000000000002

func floatsEqualBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

func roundTripFloats(t testing.TB, vs []float64) []byte {
	t.Helper()
	enc := AppendFloats([]byte{0xAB}, vs)
	if enc[0] != 0xAB {
		t.Fatalf("AppendFloats clobbered dst prefix")
	}
	enc = append(enc, 0xCD)
	got, tail, err := DecodeFloats([]float64{-1}, enc[1:])
	if err != nil {
		t.Fatalf("decode %d floats: %v", len(vs), err)
	}
	if !slices.Equal(tail, []byte{0xCD}) {
		t.Fatalf("tail = %x, want cd", tail)
	}
	if got[0] != -1 || !floatsEqualBits(got[1:], vs) {
		t.Fatalf("round trip mismatch:\n got %v\nwant %v", got[1:], vs)
	}
	return enc[1 : len(enc)-1]
}

// floatTag returns the codec tag of an encoded non-empty column.
func floatTag(t testing.TB, enc []byte) byte {
	t.Helper()
	_, rest, err := readUvarint(enc, "count")
	if err != nil || len(rest) == 0 {
		t.Fatalf("no tag in %x", enc)
	}
	return rest[0]
}

func TestFloatsRoundTrip(t *testing.T) {
	seq := func(n int, f func(i int) float64) []float64 {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = f(i)
		}
		return vs
	}
	power := seq(120, func(i int) float64 { return math.Round((300+float64((i*37)%200)/7)*1000) / 1000 })
	withStale := slices.Clone(power)
	withStale[119] = math.Float64frombits(staleNaN)
	cases := []struct {
		name    string
		vs      []float64
		tag     byte // 0: any
		maxSize int  // 0: no assertion
	}{
		{name: "empty", vs: nil, maxSize: 1},
		{name: "one", vs: []float64{73.25}, maxSize: 10},
		{name: "constant", vs: seq(120, func(int) float64 { return 1980 }), tag: floatTagConst, maxSize: 10},
		{name: "constant stale NaN", vs: seq(5, func(int) float64 { return math.Float64frombits(staleNaN) }), tag: floatTagConst},
		{name: "utilization integers", vs: seq(120, func(i int) float64 { return float64(90 + (i*13)%11) }), tag: floatTagDecimal, maxSize: 70},
		{name: "power 3 decimals", vs: power, tag: floatTagDecimal},
		{name: "power then stale marker", vs: withStale, tag: floatTagDecimal},
		{name: "energy counter", vs: seq(120, func(i int) float64 { return 1e11 + float64(i)*6_000_123 + float64((i*31)%97) }), tag: floatTagDecimal, maxSize: 125},
		{name: "specials", vs: []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.Float64frombits(staleNaN), math.Float64frombits(0x7ff8dead0000beef), math.SmallestNonzeroFloat64, math.MaxFloat64}},
		{name: "negative zero among integers", vs: []float64{1, 2, math.Copysign(0, -1), 3, 4}},
		{name: "random mantissas", vs: seq(100, func(i int) float64 { return math.Float64frombits(uint64(i) * 0x9E3779B97F4A7C15) }), tag: floatTagXOR},
		{name: "tiny decimals", vs: []float64{1e-7, 2e-7, 3.5e-7}, tag: floatTagDecimal},
		{name: "large integers", vs: []float64{1 << 52, 1<<52 + 1, 1 << 60, -(1 << 53)}},
		{name: "long counter zstd candidate", vs: seq(3000, func(i int) float64 { return float64(i / 100 * 5) })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc := roundTripFloats(t, tc.vs)
			if tc.tag != 0 {
				if got := floatTag(t, enc); got&^floatTagZstd != tc.tag {
					t.Errorf("codec tag = %#x, want %#x", got, tc.tag)
				}
			}
			if tc.maxSize > 0 && len(enc) > tc.maxSize {
				t.Errorf("encoded %d values in %d bytes, want <= %d", len(tc.vs), len(enc), tc.maxSize)
			}
		})
	}
}

func TestFloatsZstdRoundTrip(t *testing.T) {
	// A repeating pattern that bit packing cannot exploit but zstd can.
	pattern := []float64{0.5, 97.25, 13, 1e6, 0.001, 42}
	vs := make([]float64, 0, 6000)
	for len(vs) < cap(vs) {
		vs = append(vs, pattern...)
	}
	enc := roundTripFloats(t, vs)
	if tag := floatTag(t, enc); tag&floatTagZstd == 0 {
		t.Fatalf("tag %#x: want the zstd form for a long periodic column (%d bytes)", tag, len(enc))
	}
}

func TestDecimalExponent(t *testing.T) {
	cases := []struct {
		v    float64
		want int
	}{
		{v: 97, want: 0},
		{v: 73.25, want: 2},
		{v: 412.345, want: 3},
		{v: 0.000001, want: 6},
		{v: -1.5, want: 1},
		{v: math.NaN(), want: -1},
		{v: math.Inf(1), want: -1},
		{v: math.Copysign(0, -1), want: -1},
		{v: math.Pi, want: 15},             // 3.141592653589793 is its shortest decimal form
		{v: 0.30000000000000004, want: -1}, // 0.1+0.2 at run time: 17 digits
	}
	for _, tc := range cases {
		if got := minDecimalExp(tc.v, 0); got != tc.want {
			t.Errorf("minDecimalExp(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}

func TestDecodeFloatsCorrupt(t *testing.T) {
	dec := AppendFloats(nil, []float64{1.5, 2.25, 3, 4.75, 5})
	xor := AppendFloats(nil, []float64{math.Pi, math.E, math.Sqrt2})
	cases := []struct {
		name string
		src  []byte
		want error
	}{
		{name: "empty input", src: nil, want: ErrCorrupt},
		{name: "count too large", src: []byte{0xff, 0xff, 0xff, 0x7f}, want: ErrTooLarge},
		{name: "missing tag", src: []byte{2}, want: ErrCorrupt},
		{name: "unknown tag", src: []byte{2, 9}, want: ErrCorrupt},
		{name: "short constant", src: []byte{2, floatTagConst, 1, 2, 3}, want: ErrCorrupt},
		{name: "decimal truncated", src: dec[:len(dec)-1], want: ErrCorrupt},
		{name: "xor truncated", src: xor[:len(xor)-2], want: ErrCorrupt},
		{name: "exponent too large", src: []byte{1, floatTagDecimal, 23, 0, 0, 0, 0}, want: ErrCorrupt},
		{name: "exception index out of range", src: []byte{2, floatTagDecimal, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0}, want: ErrCorrupt},
		{name: "more exceptions than values", src: []byte{2, floatTagDecimal, 0, 3}, want: ErrTooLarge},
		{name: "zstd garbage", src: []byte{2, floatTagXOR | floatTagZstd, 16, 3, 1, 2, 3}, want: ErrCorrupt},
		{name: "zstd length past end", src: []byte{2, floatTagXOR | floatTagZstd, 16, 30, 1, 2, 3}, want: ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, tail, err := DecodeFloats([]float64{7}, tc.src)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if len(got) != 1 || len(tail) != len(tc.src) {
				t.Fatalf("on error dst and src must come back unchanged")
			}
		})
	}
}

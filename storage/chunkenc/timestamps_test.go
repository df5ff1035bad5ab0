package chunkenc

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func roundTripTimestamps(t testing.TB, ts []int64) []byte {
	t.Helper()
	prefix := []byte{0xAB}
	enc := AppendTimestamps(prefix, ts)
	if enc[0] != 0xAB {
		t.Fatalf("AppendTimestamps clobbered dst prefix")
	}
	enc = append(enc, 0xCD, 0xEF) // trailing data must come back as the tail
	dst := []int64{42}
	got, tail, err := DecodeTimestamps(dst, enc[1:])
	if err != nil {
		t.Fatalf("decode %d timestamps: %v", len(ts), err)
	}
	if !slices.Equal(tail, []byte{0xCD, 0xEF}) {
		t.Fatalf("tail = %x, want cdef", tail)
	}
	if got[0] != 42 || !slices.Equal(got[1:], ts) {
		t.Fatalf("round trip mismatch:\n got %v\nwant %v", got[1:], ts)
	}
	return enc[1 : len(enc)-2]
}

func TestTimestampsRoundTrip(t *testing.T) {
	grid := func(start, step int64, n int) []int64 {
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = start + int64(i)*step
		}
		return ts
	}
	jittered := grid(1_700_000_000_000, 15_000, 120)
	for i := range jittered {
		jittered[i] += int64((i*7919)%9) - 4
	}
	gap := grid(1_700_000_000_000, 15_000, 120)
	for i := 60; i < len(gap); i++ {
		gap[i] += 300_000
	}
	cases := []struct {
		name    string
		ts      []int64
		maxSize int // 0: no size assertion
	}{
		{name: "empty", ts: nil, maxSize: 1},
		{name: "one", ts: []int64{1_700_000_000_000}, maxSize: 12},
		{name: "one negative", ts: []int64{-5}},
		{name: "two", ts: []int64{0, 15_000}},
		{name: "exact grid 120", ts: grid(1_700_000_000_000, 15_000, 120), maxSize: 14},
		{name: "exact grid 5760", ts: grid(1_700_000_000_000, 15_000, 5760), maxSize: 14},
		{name: "negative grid", ts: grid(-1_000_000, 1000, 50), maxSize: 14},
		{name: "descending grid", ts: grid(1000, -7, 50), maxSize: 14},
		{name: "jittered", ts: jittered, maxSize: 14 + 60},
		{name: "missed scrapes", ts: gap},
		{name: "non monotonic", ts: []int64{5, 3, 9, 9, -2, 100, 1}},
		{name: "extremes", ts: []int64{math.MinInt64, math.MaxInt64, 0, math.MinInt64, -1, math.MaxInt64}},
		{name: "min int delta", ts: []int64{0, math.MinInt64, 0, math.MinInt64}},
		{name: "huge deltas", ts: []int64{0, 1 << 62, -(1 << 62), 1 << 61, 3}},
		{name: "constant", ts: []int64{7, 7, 7, 7, 7, 7}, maxSize: 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc := roundTripTimestamps(t, tc.ts)
			if tc.maxSize > 0 && len(enc) > tc.maxSize {
				t.Errorf("encoded %d timestamps in %d bytes, want <= %d", len(tc.ts), len(enc), tc.maxSize)
			}
		})
	}
}

func TestDecodeTimestampsCorrupt(t *testing.T) {
	valid := AppendTimestamps(nil, []int64{1, 5, 100, 101, 200, 1 << 40})
	cases := []struct {
		name string
		src  []byte
		want error
	}{
		{name: "empty input", src: nil, want: ErrCorrupt},
		{name: "count too large", src: []byte{0xff, 0xff, 0xff, 0x7f}, want: ErrTooLarge},
		{name: "truncated", src: valid[:len(valid)-1], want: ErrCorrupt},
		{name: "missing mode", src: []byte{3}, want: ErrCorrupt},
		{name: "unknown mode", src: []byte{3, 99, 0}, want: ErrCorrupt},
		{name: "width over 64", src: []byte{3, intModeFOR, 0, 65}, want: ErrCorrupt},
		{name: "dod with two values", src: []byte{2, intModeDoD, 0, 0, 0, 0}, want: ErrCorrupt},
		{name: "one value not FOR", src: []byte{1, intModeDelta, 0, 0, 0}, want: ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := []int64{1}
			got, tail, err := DecodeTimestamps(dst, tc.src)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if len(got) != 1 || len(tail) != len(tc.src) {
				t.Fatalf("on error dst and src must come back unchanged: len(dst)=%d len(tail)=%d", len(got), len(tail))
			}
		})
	}
}

// intModeColumns returns test columns that between them make the encoder
// pick every integer mode.
func intModeColumns() map[string][]int64 {
	cols := map[string][]int64{
		"for":     {5, 9, 2, 7, 1, 8, 3, 6, 4, 0, 9, 9, 2},
		"delta":   {1000, 1003, 1001, 1006, 1004, 1002, 1009, 1003, 1000},
		"dod":     {0, 10, 30, 60, 100, 150, 210, 280, 360, 450, 550, 660},
		"sparse":  {3, 3, 3, 3, 3, 3, 90, 90, 90, 90, 90, 90, 90, 90, 12, 12, 12, 12, 12, 12, 12, 12},
		"linear":  {100, 207, 300, 407, 500, 607, 700, 807, 900, 1007, 1100, 1207, 1300, 1407, 1500, 1607},
		"wrapped": {math.MaxInt64, math.MinInt64, math.MaxInt64, math.MinInt64},
	}
	// Deltas alternating between tiny and 2^19: varint beats every width.
	varint := make([]int64, 64)
	for i := 1; i < len(varint); i++ {
		d := int64(50)
		if i%2 == 0 {
			d = 1<<19 + int64(i)
		}
		varint[i] = varint[i-1] + d
	}
	cols["varint"] = varint
	// A long column whose noise amplitude changes page by page: paging lets
	// each page pick its own width.
	paged := make([]int64, 1000)
	for i := range paged {
		amp := int64(1) << (8 * ((i / 128) % 3))
		paged[i] = int64(i)*15000 + (int64(i)*7919)%amp
	}
	cols["paged"] = paged
	// Mostly steady deltas with a few jumps: patched deltas.
	patched := make([]int64, 200)
	for i := 1; i < len(patched); i++ {
		d := 650_000 + (int64(i)*7919)%5000
		if i%50 == 0 {
			d = -250_000_000
		}
		patched[i] = patched[i-1] + d
	}
	cols["patched"] = patched
	return cols
}

func TestIntModesRoundTrip(t *testing.T) {
	cols := intModeColumns()
	seen := map[byte]bool{}
	for name, vs := range cols {
		t.Run(name, func(t *testing.T) {
			enc := appendInts(nil, asUint64s(vs))
			seen[enc[0]] = true
			t.Logf("mode %d, %d bytes", enc[0], len(enc))
			got := make([]int64, len(vs))
			rest, err := decodeInts(asUint64s(got), enc, len(vs))
			if err != nil {
				t.Fatal(err)
			}
			if len(rest) != 0 || !slices.Equal(got, vs) {
				t.Fatalf("mode %d: got %v rest %d, want %v", enc[0], got, len(rest), vs)
			}
		})
	}
	for m := byte(0); m <= intModePaged; m++ {
		if !seen[m] {
			t.Errorf("no test column was encoded with int mode %d", m)
		}
	}
}

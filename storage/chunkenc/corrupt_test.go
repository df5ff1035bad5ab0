package chunkenc

import (
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
)

// TestDecodeMutations feeds every truncation and several byte mutations at
// every position of real encodings (every int mode, XOR, decimal with
// exceptions, zstd, histograms) to the decoders. They must return an error or
// some values, never panic, and on error leave dst and src as they were.
func TestDecodeMutations(t *testing.T) {
	all := telemetryDay()
	// The shortest encoding of each timestamp mode and float tag, from long
	// blocks and short chunks (short keeps the test fast under -race).
	byTS, byV := map[byte][]byte{}, map[byte][]byte{}
	for _, chunks := range [][]sampleChunk{chunkByTime(all, 24*time.Hour), chunkByCount(all, 120)} {
		for _, c := range chunks {
			ts := AppendTimestamps(nil, c.t)
			if m := ts[uvarintLen(uint64(len(c.t)))]; byTS[m] == nil || len(ts) < len(byTS[m]) {
				byTS[m] = ts
			}
			vs := AppendFloats(nil, c.v)
			if tag := vs[uvarintLen(uint64(len(c.v)))]; byV[tag] == nil || len(vs) < len(byV[tag]) {
				byV[tag] = vs
			}
		}
	}
	var inputs [][]byte
	seenTS, seenV := map[byte]bool{}, map[byte]bool{}
	for m, in := range byTS {
		seenTS[m] = true
		inputs = append(inputs, in)
	}
	for tag, in := range byV {
		seenV[tag] = true
		inputs = append(inputs, in)
	}
	for _, col := range intModeColumns() {
		inputs = append(inputs, AppendTimestamps(nil, col))
	}
	periodic := make([]float64, 600) // zstd-wrapped
	for i := range periodic {
		periodic[i] = []float64{0.5, 97.25, 13, 1e6, 0.001, 42}[i%6]
	}
	inputs = append(inputs,
		AppendFloats(nil, periodic),
		AppendFloats(nil, []float64{1, 2.5, math.NaN(), math.Copysign(0, -1), 7}),
		AppendHistograms(nil, latencyHistograms(20)),
		AppendFloatHistograms(nil, []*histogram.FloatHistogram{latencyHistograms(2)[0].ToFloat(nil), latencyHistograms(2)[1].ToFloat(nil)}),
	)
	decoders := []func([]byte) (int, int, error){
		func(b []byte) (int, int, error) {
			d, r, err := DecodeTimestamps([]int64{1}, b)
			return len(d), len(r), err
		},
		func(b []byte) (int, int, error) {
			d, r, err := DecodeFloats([]float64{1}, b)
			return len(d), len(r), err
		},
		func(b []byte) (int, int, error) {
			d, r, err := DecodeHistograms(nil, b)
			return len(d) + 1, len(r), err
		},
		func(b []byte) (int, int, error) {
			d, r, err := DecodeFloatHistograms(nil, b)
			return len(d) + 1, len(r), err
		},
	}
	check := func(b []byte) {
		t.Helper()
		for _, dec := range decoders {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("decoder panicked on %x: %v\n%s", b, r, debug.Stack())
					}
				}()
				dl, rl, err := dec(b)
				if err != nil && (dl != 1 || rl != len(b)) {
					t.Fatalf("on error dst/src changed: dst len %d, rest %d of %d", dl, rl, len(b))
				}
			}()
		}
	}
	for _, in := range inputs {
		for cut := 0; cut < len(in); cut++ {
			check(in[:cut])
		}
		buf := make([]byte, len(in))
		for i := range in {
			for _, mut := range []func(byte) byte{
				func(b byte) byte { return b ^ 0xff },
				func(b byte) byte { return b + 1 },
				func(b byte) byte { return b ^ 0x80 },
				func(byte) byte { return 0 },
			} {
				copy(buf, in)
				buf[i] = mut(buf[i])
				check(buf)
			}
		}
	}
	t.Logf("timestamp int modes %v, float tags %v", seenTS, seenV)
	if len(seenTS) < 3 || len(seenV) < 3 {
		t.Fatalf("telemetry exercised only timestamp modes %v and float tags %v", seenTS, seenV)
	}
}

package chunkenc

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// AppendFloatHistograms appends a columnar, lossless encoding of hs to dst and
// returns the extended buffer. hs must not contain nil.
//
// Layout: as AppendHistograms, except that zero counts, counts and bucket
// counts are float columns (AppendFloats), so integer-valued float counts go
// through the decimal codec and every value round trips bit-exactly.
//
// It panics if len(hs) > MaxColumnLen. Safe for concurrent use; hs is only
// read.
func AppendFloatHistograms(dst []byte, hs []*histogram.FloatHistogram) []byte {
	n := len(hs)
	checkLen(n)
	dst = binary.AppendUvarint(dst, uint64(n))
	if n == 0 {
		return dst
	}
	sc := getScratch(n)
	defer putScratch(sc)
	col := *sc
	intCol := func(f func(h *histogram.FloatHistogram) uint64) {
		for i, h := range hs {
			col[i] = f(h)
		}
		dst = appendInts(dst, col)
	}
	fs := make([]float64, n)
	floatCol := func(f func(h *histogram.FloatHistogram) float64) {
		for i, h := range hs {
			fs[i] = f(h)
		}
		dst = AppendFloats(dst, fs)
	}
	intCol(func(h *histogram.FloatHistogram) uint64 { return uint64(h.CounterResetHint) })
	intCol(func(h *histogram.FloatHistogram) uint64 { return uint64(int64(h.Schema)) })
	floatCol(func(h *histogram.FloatHistogram) float64 { return h.ZeroThreshold })
	floatCol(func(h *histogram.FloatHistogram) float64 { return h.ZeroCount })
	floatCol(func(h *histogram.FloatHistogram) float64 { return h.Count })
	floatCol(func(h *histogram.FloatHistogram) float64 { return h.Sum })

	ls := make([]layout, n)
	for i, h := range hs {
		ls[i] = makeLayout(h.PositiveSpans, h.NegativeSpans, h.PositiveBuckets, h.NegativeBuckets, h.CustomValues)
	}
	var which []int
	dst, which = appendLayouts(dst, ls)
	buckets := make([]float64, 0, 64)
	bucketOrder(which,
		func(i int) int { return len(hs[i].PositiveBuckets) },
		func(i int) int { return len(hs[i].NegativeBuckets) },
		func(i int, neg bool, j int) {
			if neg {
				buckets = append(buckets, hs[i].NegativeBuckets[j])
			} else {
				buckets = append(buckets, hs[i].PositiveBuckets[j])
			}
		})
	if len(buckets) > MaxColumnLen {
		panic("BUG: chunkenc: more than MaxColumnLen float histogram buckets; split the column")
	}
	return AppendFloats(dst, buckets)
}

// DecodeFloatHistograms decodes one column written by AppendFloatHistograms,
// appends new histograms to dst and returns the extended slice and the rest of
// src. Histograms of one layout run share their CustomValues slice
// (immutable, as in Prometheus); everything else is owned by each histogram.
// It never panics on corrupt input; on error dst is returned unextended. Safe
// for concurrent use.
func DecodeFloatHistograms(dst []*histogram.FloatHistogram, src []byte) ([]*histogram.FloatHistogram, []byte, error) {
	out, rest, err := decodeFloatHistograms(dst, src)
	if err != nil {
		return dst, src, fmt.Errorf("decode float histograms: %w", err)
	}
	return out, rest, nil
}

func decodeFloatHistograms(dst []*histogram.FloatHistogram, src []byte) ([]*histogram.FloatHistogram, []byte, error) {
	n, src, err := readCount(src, "count", MaxColumnLen)
	if err != nil || n == 0 {
		return dst, src, err
	}
	hs := make([]histogram.FloatHistogram, n)
	col := make([]uint64, n)
	fs := make([]float64, 0, n)
	intCol := func(what string, set func(h *histogram.FloatHistogram, v uint64) bool) error {
		if src, err = decodeInts(col, src, n); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for i := range hs {
			if !set(&hs[i], col[i]) {
				return fmt.Errorf("%s %d out of range: %w", what, int64(col[i]), ErrCorrupt)
			}
		}
		return nil
	}
	floatCol := func(what string, set func(h *histogram.FloatHistogram, v float64)) error {
		if fs, src, err = decodeFloats(fs[:0], src); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if len(fs) != n {
			return fmt.Errorf("%s: %d values for %d histograms: %w", what, len(fs), n, ErrCorrupt)
		}
		for i := range hs {
			set(&hs[i], fs[i])
		}
		return nil
	}
	steps := []func() error{
		func() error {
			return intCol("reset hints", func(h *histogram.FloatHistogram, v uint64) bool {
				h.CounterResetHint = histogram.CounterResetHint(v)
				return v <= math.MaxUint8
			})
		},
		func() error {
			return intCol("schemas", func(h *histogram.FloatHistogram, v uint64) bool {
				h.Schema = int32(v)
				return int64(v) == int64(int32(v))
			})
		},
		func() error {
			return floatCol("zero thresholds", func(h *histogram.FloatHistogram, v float64) { h.ZeroThreshold = v })
		},
		func() error {
			return floatCol("zero counts", func(h *histogram.FloatHistogram, v float64) { h.ZeroCount = v })
		},
		func() error { return floatCol("counts", func(h *histogram.FloatHistogram, v float64) { h.Count = v }) },
		func() error { return floatCol("sums", func(h *histogram.FloatHistogram, v float64) { h.Sum = v }) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return dst, src, err
		}
	}
	which, layouts, total, src, err := readLayouts(src, n)
	if err != nil {
		return dst, src, err
	}
	if total > MaxColumnLen {
		return dst, src, fmt.Errorf("%d buckets: %w", total, ErrTooLarge)
	}
	var buckets []float64
	if buckets, src, err = decodeFloats(make([]float64, 0, total), src); err != nil {
		return dst, src, fmt.Errorf("buckets: %w", err)
	}
	if len(buckets) != total {
		return dst, src, fmt.Errorf("%d buckets stored, layouts need %d: %w", len(buckets), total, ErrCorrupt)
	}
	backing := make([]float64, total)
	off := 0
	for i := range hs {
		h, l := &hs[i], &layouts[which[i]]
		h.PositiveSpans, h.NegativeSpans = cloneSpans(l.pos), cloneSpans(l.neg)
		h.CustomValues = l.custom
		if l.flags&layoutNilPosBuckets == 0 {
			h.PositiveBuckets = backing[off : off+l.nPos : off+l.nPos]
			off += l.nPos
		}
		if l.flags&layoutNilNegBuckets == 0 {
			h.NegativeBuckets = backing[off : off+l.nNeg : off+l.nNeg]
			off += l.nNeg
		}
	}
	k := 0
	bucketOrder(which,
		func(i int) int { return layouts[which[i]].nPos },
		func(i int) int { return layouts[which[i]].nNeg },
		func(i int, neg bool, j int) {
			if neg {
				hs[i].NegativeBuckets[j] = buckets[k]
			} else {
				hs[i].PositiveBuckets[j] = buckets[k]
			}
			k++
		})
	out := grow(dst, n)
	for i := range hs {
		out[len(dst)+i] = &hs[i]
	}
	return out, src, nil
}

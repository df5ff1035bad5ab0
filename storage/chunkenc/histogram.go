package chunkenc

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// AppendHistograms appends a columnar, lossless encoding of hs to dst and
// returns the extended buffer. hs must not contain nil.
//
// Layout: uvarint n, then (n > 0) integer columns of counter reset hints and
// schemas, a float column of zero thresholds, integer columns of zero counts
// and counts, a float column of sums, the layouts (histlayout.go) and one
// integer column of every bucket count (Prometheus' in-histogram delta form,
// stored column-major per layout run). Every field round trips exactly,
// including nil versus empty slices and custom bounds (schema -53).
//
// It panics if len(hs) > MaxColumnLen. Safe for concurrent use; hs is only
// read.
func AppendHistograms(dst []byte, hs []*histogram.Histogram) []byte {
	n := len(hs)
	checkLen(n)
	dst = binary.AppendUvarint(dst, uint64(n))
	if n == 0 {
		return dst
	}
	sc := getScratch(n)
	defer putScratch(sc)
	col := *sc
	intCol := func(f func(h *histogram.Histogram) uint64) {
		for i, h := range hs {
			col[i] = f(h)
		}
		dst = appendInts(dst, col)
	}
	fs := make([]float64, n)
	floatCol := func(f func(h *histogram.Histogram) float64) {
		for i, h := range hs {
			fs[i] = f(h)
		}
		dst = AppendFloats(dst, fs)
	}
	intCol(func(h *histogram.Histogram) uint64 { return uint64(h.CounterResetHint) })
	intCol(func(h *histogram.Histogram) uint64 { return uint64(int64(h.Schema)) })
	floatCol(func(h *histogram.Histogram) float64 { return h.ZeroThreshold })
	intCol(func(h *histogram.Histogram) uint64 { return h.ZeroCount })
	intCol(func(h *histogram.Histogram) uint64 { return h.Count })
	floatCol(func(h *histogram.Histogram) float64 { return h.Sum })

	ls := make([]layout, n)
	for i, h := range hs {
		ls[i] = makeLayout(h.PositiveSpans, h.NegativeSpans, h.PositiveBuckets, h.NegativeBuckets, h.CustomValues)
	}
	var which []int
	dst, which = appendLayouts(dst, ls)
	buckets := make([]uint64, 0, 64)
	bucketOrder(which,
		func(i int) int { return len(hs[i].PositiveBuckets) },
		func(i int) int { return len(hs[i].NegativeBuckets) },
		func(i int, neg bool, j int) {
			if neg {
				buckets = append(buckets, uint64(hs[i].NegativeBuckets[j]))
			} else {
				buckets = append(buckets, uint64(hs[i].PositiveBuckets[j]))
			}
		})
	if len(buckets) > MaxHistogramBuckets {
		panic("BUG: chunkenc: more than MaxHistogramBuckets histogram buckets; split the column")
	}
	dst = binary.AppendUvarint(dst, uint64(len(buckets)))
	return appendInts(dst, buckets)
}

// DecodeHistograms decodes one column written by AppendHistograms, appends
// new histograms to dst and returns the extended slice and the rest of src.
// Histograms of one layout run share their CustomValues slice (immutable, as
// in Prometheus); everything else is owned by each histogram. It never panics
// on corrupt input; on error dst is returned unextended. Safe for concurrent
// use.
func DecodeHistograms(dst []*histogram.Histogram, src []byte) ([]*histogram.Histogram, []byte, error) {
	out, rest, err := decodeHistograms(dst, src)
	if err != nil {
		return dst, src, fmt.Errorf("decode histograms: %w", err)
	}
	return out, rest, nil
}

func decodeHistograms(dst []*histogram.Histogram, src []byte) ([]*histogram.Histogram, []byte, error) {
	n, src, err := readCount(src, "count", MaxColumnLen)
	if err != nil || n == 0 {
		return dst, src, err
	}
	hs := make([]histogram.Histogram, n)
	col := make([]uint64, n)
	fs := make([]float64, 0, n)
	intCol := func(what string, set func(h *histogram.Histogram, v uint64) bool) error {
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
	floatCol := func(what string, set func(h *histogram.Histogram, v float64)) error {
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
			return intCol("reset hints", func(h *histogram.Histogram, v uint64) bool {
				h.CounterResetHint = histogram.CounterResetHint(v)
				return v <= math.MaxUint8
			})
		},
		func() error {
			return intCol("schemas", func(h *histogram.Histogram, v uint64) bool {
				h.Schema = int32(v)
				return int64(v) == int64(int32(v))
			})
		},
		func() error {
			return floatCol("zero thresholds", func(h *histogram.Histogram, v float64) { h.ZeroThreshold = v })
		},
		func() error {
			return intCol("zero counts", func(h *histogram.Histogram, v uint64) bool { h.ZeroCount = v; return true })
		},
		func() error {
			return intCol("counts", func(h *histogram.Histogram, v uint64) bool { h.Count = v; return true })
		},
		func() error { return floatCol("sums", func(h *histogram.Histogram, v float64) { h.Sum = v }) },
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
	stored, src, err := readCount(src, "bucket count", MaxHistogramBuckets)
	if err != nil {
		return dst, src, err
	}
	if stored != total {
		return dst, src, fmt.Errorf("%d buckets stored, layouts need %d: %w", stored, total, ErrCorrupt)
	}
	buckets := make([]int64, total)
	if src, err = decodeInts(asUint64s(buckets), src, total); err != nil {
		return dst, src, fmt.Errorf("buckets: %w", err)
	}
	// One backing array for all histograms' buckets; each histogram gets a
	// capacity-limited window so appends by the caller cannot overlap.
	backing := make([]int64, total)
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

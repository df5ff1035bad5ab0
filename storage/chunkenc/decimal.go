package chunkenc

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Decimal float codec. Exporters print values with a fixed number of decimals
// (DCGM power "412.345", utilization "97"), so most float columns are integers
// m scaled by a power of ten: v == float64(m) / 10^e exactly, bit for bit.
// The encoder finds the smallest e (0..maxDecimalExp) for which that holds for
// every value and stores the integers with the integer column codec. Values
// that have no such form (NaN, ±Inf, -0, too many digits) are exceptions
// stored raw; their slot in the integer column repeats the previous integer so
// that deltas stay small.
//
// Body after the tag: byte e, uvarint exception count k, k times (uvarint index
// gap, 8 bytes little-endian float64 bits), then the integer column of n
// values. The first gap is the index itself, later ones are index minus
// previous index minus one.

// maxDecimalExp is the largest exponent tried; 10^22 is the largest power of
// ten a float64 holds exactly, which the decoder's division relies on.
const maxDecimalExp = 22

// maxDecimalInt bounds |m|: float64 holds every integer below 2^53 exactly.
const maxDecimalInt = 1 << 53

var pow10 = func() (p [maxDecimalExp + 1]float64) {
	p[0] = 1
	for i := 1; i <= maxDecimalExp; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// decimalAt returns m with float64(m)/10^e == v bit for bit, if one exists
// that this codec can find.
func decimalAt(v float64, e int) (int64, bool) {
	x := v * pow10[e]
	if !(x > -maxDecimalInt && x < maxDecimalInt) { // also false for NaN
		return 0, false
	}
	m := int64(math.Round(x))
	if math.Float64bits(float64(m)/pow10[e]) != math.Float64bits(v) {
		return 0, false
	}
	return m, true
}

// minDecimalExp returns the smallest exponent at which v is exact, or -1.
func minDecimalExp(v float64, from int) int {
	if _, ok := decimalAt(v, from); ok {
		// Exact at a larger e implies nothing about smaller ones; the caller
		// only needs some e <= the column's exponent, so from is enough.
		return from
	}
	for e := 0; e <= maxDecimalExp; e++ {
		if _, ok := decimalAt(v, e); ok {
			return e
		}
	}
	return -1
}

// appendDecimal appends the decimal body of vs. It reports false when the
// body would not beat limit bytes (the caller's best so far) by giving up
// early, e.g. when most values are exceptions.
func appendDecimal(dst []byte, vs []float64, limit int) ([]byte, bool) {
	n := len(vs)
	// Pass 1: the column exponent is the largest per-value minimum.
	exp, exceptions := 0, 0
	for _, v := range vs {
		e := minDecimalExp(v, exp)
		if e < 0 {
			exceptions++
			// Each exception costs at least 9 bytes.
			if 9*exceptions >= limit {
				return dst, false
			}
			continue
		}
		exp = max(exp, e)
	}
	sc := getScratch(n)
	defer putScratch(sc)
	ms := *sc
	excIdx := make([]int, 0, exceptions)
	// Pass 2: integers at the column exponent. A value exact at a smaller
	// exponent is exact at a larger one as long as m stays below 2^53, which
	// decimalAt checks again; if rounding in v*10^e misleads it, the value
	// becomes an exception rather than being stored wrong.
	for i, v := range vs {
		m, ok := decimalAt(v, exp)
		if !ok {
			excIdx = append(excIdx, i)
			if 9*len(excIdx) >= limit {
				return dst, false
			}
			continue
		}
		ms[i] = uint64(m)
	}
	fillExceptionSlots(ms, excIdx)
	dst = append(dst, byte(exp))
	dst = binary.AppendUvarint(dst, uint64(len(excIdx)))
	prev := -1
	for _, i := range excIdx {
		dst = binary.AppendUvarint(dst, uint64(i-prev-1))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(vs[i]))
		prev = i
	}
	return appendInts(dst, ms), true
}

// fillExceptionSlots sets each exception's integer to its predecessor's (or,
// for leading exceptions, the first regular value's) so deltas stay zero.
func fillExceptionSlots(ms []uint64, excIdx []int) {
	if len(excIdx) == 0 {
		return
	}
	if len(excIdx) == len(ms) {
		clear(ms)
		return
	}
	isExc := make(map[int]bool, len(excIdx))
	for _, i := range excIdx {
		isExc[i] = true
	}
	first := 0
	for isExc[first] {
		first++
	}
	for i := 0; i < first; i++ {
		ms[i] = ms[first]
	}
	for i := first + 1; i < len(ms); i++ {
		if isExc[i] {
			ms[i] = ms[i-1]
		}
	}
}

// decodeDecimal decodes n values of a decimal body into vs[:n].
func decodeDecimal(vs []float64, src []byte, n int) ([]byte, error) {
	eb, src, err := readByte(src, "decimal exponent")
	if err != nil {
		return src, err
	}
	if eb > maxDecimalExp {
		return src, fmt.Errorf("decimal exponent %d: %w", eb, ErrCorrupt)
	}
	k, src, err := readCount(src, "exception count", n)
	if err != nil {
		return src, err
	}
	excStart := src
	// Skip the exceptions first (validating them); they are applied after
	// the integers are converted, which overwrite the same slots.
	idx := -1
	for j := 0; j < k; j++ {
		var gap uint64
		if gap, src, err = readUvarint(src, "exception index"); err != nil {
			return src, err
		}
		if gap >= uint64(n) || idx+1+int(gap) >= n {
			return src, fmt.Errorf("exception index out of range: %w", ErrCorrupt)
		}
		idx += 1 + int(gap)
		if len(src) < 8 {
			return src, fmt.Errorf("read exception value: %w", ErrCorrupt)
		}
		src = src[8:]
	}
	ints := asUint64s(vs[:n])
	rest, err := decodeInts(ints, src, n)
	if err != nil {
		return rest, err
	}
	p := pow10[eb]
	if eb == 0 {
		for i, u := range ints {
			vs[i] = float64(int64(u))
		}
	} else {
		for i, u := range ints {
			vs[i] = float64(int64(u)) / p
		}
	}
	idx = -1
	for j := 0; j < k; j++ {
		gap, k2 := binary.Uvarint(excStart)
		excStart = excStart[k2:]
		idx += 1 + int(gap)
		vs[idx] = math.Float64frombits(binary.LittleEndian.Uint64(excStart))
		excStart = excStart[8:]
	}
	return rest, nil
}

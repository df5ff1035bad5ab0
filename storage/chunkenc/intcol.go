package chunkenc

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// Integer column codec. An integer column is n int64 values (handled as uint64
// bit patterns, all arithmetic wrapping modulo 2^64, so every input round
// trips). The count n is stored by the caller. The encoder sizes every mode
// below and writes the smallest; the first byte names the mode.
//
// "FOR w" below means: varint base, one byte width w (0..64), then the values
// minus base packed in w bits each, LSB first (see bitpack.go).
const (
	intModeFOR         = 0 // FOR of the values
	intModeDelta       = 1 // varint v0, FOR of d_i = v_i - v_(i-1), i >= 1
	intModeDoD         = 2 // varint v0, varint d1, FOR of d_i - d_(i-1), i >= 2
	intModeDeltaVarint = 3 // varint v0, uvarint zigzag(d_i), i >= 1
	intModeSparseDelta = 4 // varint v0, bitmap of d_i != 0 (n-1 bits), FOR of the non-zero d_i
	intModeLinear      = 5 // varint v0, varint slope s, FOR of r_i = v_i - v0 - i*s, i >= 1
	// intModePatched: varint v0, varint m (the median delta), byte w, the low
	// w bits of x_i = zigzag(d_i - m) packed for i >= 1, uvarint k, then k
	// exceptions (uvarint index gap, uvarint x_i >> w) for the x_i that do
	// not fit in w bits. Noisy gauges (power) have most deltas in a narrow
	// band and a few phase jumps; the jumps become exceptions instead of
	// widening every value.
	intModePatched = 6
	numIntModes    = 7
	// intModePaged splits a long column into pages of intPageLen values
	// (the last one shorter), each encoded as above with its own mode, so
	// that one outlier widens one page rather than the whole column. Within
	// a page, "varint v0" and FOR bases are stored relative to the last value
	// of the previous page (0 for the first page and for unpaged columns).
	intModePaged = 7
)

// forStats are the statistics of one FOR block: its bounds and length.
type forStats struct {
	lo, hi int64
	n      int
}

func (s *forStats) add(v int64) {
	if s.n == 0 || v < s.lo {
		s.lo = v
	}
	if s.n == 0 || v > s.hi {
		s.hi = v
	}
	s.n++
}

func (s *forStats) width() uint {
	if s.n == 0 {
		return 0
	}
	return width(uint64(s.hi - s.lo))
}

// size is the encoded size of a FOR block whose base is stored relative to
// rel.
func (s *forStats) size(rel uint64) int {
	return varintLen(s.lo-int64(rel)) + 1 + packedLen(s.n, s.width())
}

func varintLen(v int64) int   { return uvarintLen(zigzag(v)) }
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// intPageLen is the page length of intModePaged. 128 values amortise a page
// header (3-5 bytes) to a fraction of a bit per value, and are few enough
// for a page's widths to follow changes in the data (a training phase, a
// missed scrape).
const intPageLen = 128

// appendInts appends the smallest encoding of vs. It does not store len(vs).
// Columns longer than two pages are also tried paged.
func appendInts(dst []byte, vs []uint64) []byte {
	if len(vs) <= 2*intPageLen {
		return appendIntsPage(dst, vs, 0)
	}
	start := len(dst)
	dst = appendIntsPage(dst, vs, 0)
	buf := getBytes()
	defer putBytes(buf)
	paged := append((*buf)[:0], intModePaged)
	prev := uint64(0)
	for i := 0; i < len(vs); i += intPageLen {
		page := vs[i:min(i+intPageLen, len(vs))]
		paged = appendIntsPage(paged, page, prev)
		prev = page[len(page)-1]
	}
	*buf = paged
	if len(paged) < len(dst)-start {
		dst = append(dst[:start], paged...)
	}
	return dst
}

// appendIntsPage appends the smallest single-mode encoding of vs, with its
// first value and FOR bases relative to prev.
func appendIntsPage(dst []byte, vs []uint64, prev uint64) []byte {
	n := len(vs)
	if n == 0 {
		return dst
	}
	var sFOR, sDelta, sDoD, sNZ forStats
	varintSize := 0
	for i, v := range vs {
		sFOR.add(int64(v))
		if i == 0 {
			continue
		}
		d := int64(v - vs[i-1])
		sDelta.add(d)
		varintSize += uvarintLen(zigzag(d))
		if d != 0 {
			sNZ.add(d)
		}
		if i >= 2 {
			sDoD.add(d - int64(vs[i-1]-vs[i-2]))
		}
	}
	v0 := int64(vs[0] - prev)
	best, bestSize := intModeFOR, sFOR.size(prev)
	try := func(mode, size int) {
		if size < bestSize {
			best, bestSize = mode, size
		}
	}
	var slope, median int64
	var sLin forStats
	var patchW uint
	if n >= 2 {
		try(intModeDelta, varintLen(v0)+sDelta.size(0))
		try(intModeDeltaVarint, varintLen(v0)+varintSize)
		try(intModeSparseDelta, varintLen(v0)+(n-1+7)/8+sNZ.size(0))
		median = medianDelta(vs)
		slope, sLin = bestSlope(vs, median)
		try(intModeLinear, varintLen(v0)+varintLen(slope)+sLin.size(0))
		var patchSize int
		patchW, patchSize = patchedSize(vs, median)
		try(intModePatched, varintLen(v0)+varintLen(median)+patchSize)
	}
	if n >= 3 {
		try(intModeDoD, varintLen(v0)+varintLen(int64(vs[1]-vs[0]))+sDoD.size(0))
	}

	dst = append(dst, byte(best))
	scratch := getScratch(n)
	defer putScratch(scratch)
	buf := (*scratch)[:0]
	switch best {
	case intModeFOR:
		for _, v := range vs {
			buf = append(buf, v-uint64(sFOR.lo))
		}
		dst = appendFOR(dst, sFOR, prev, buf)
	case intModeDelta:
		dst = binary.AppendVarint(dst, v0)
		for i := 1; i < n; i++ {
			buf = append(buf, vs[i]-vs[i-1]-uint64(sDelta.lo))
		}
		dst = appendFOR(dst, sDelta, 0, buf)
	case intModeDoD:
		dst = binary.AppendVarint(dst, v0)
		dst = binary.AppendVarint(dst, int64(vs[1]-vs[0]))
		for i := 2; i < n; i++ {
			buf = append(buf, (vs[i]-vs[i-1])-(vs[i-1]-vs[i-2])-uint64(sDoD.lo))
		}
		dst = appendFOR(dst, sDoD, 0, buf)
	case intModeDeltaVarint:
		dst = binary.AppendVarint(dst, v0)
		for i := 1; i < n; i++ {
			dst = binary.AppendUvarint(dst, zigzag(int64(vs[i]-vs[i-1])))
		}
	case intModeSparseDelta:
		dst = binary.AppendVarint(dst, v0)
		bm := len(dst)
		dst = append(dst, make([]byte, (n-1+7)/8)...)
		for i := 1; i < n; i++ {
			if d := vs[i] - vs[i-1]; d != 0 {
				dst[bm+(i-1)/8] |= 1 << ((i - 1) % 8)
				buf = append(buf, d-uint64(sNZ.lo))
			}
		}
		dst = appendFOR(dst, sNZ, 0, buf)
	case intModeLinear:
		dst = binary.AppendVarint(dst, v0)
		dst = binary.AppendVarint(dst, slope)
		acc := vs[0]
		for i := 1; i < n; i++ {
			acc += uint64(slope)
			buf = append(buf, vs[i]-acc-uint64(sLin.lo))
		}
		dst = appendFOR(dst, sLin, 0, buf)
	case intModePatched:
		dst = binary.AppendVarint(dst, v0)
		dst = binary.AppendVarint(dst, median)
		dst = append(dst, byte(patchW))
		k := 0
		for i := 1; i < n; i++ {
			x := zigzag(int64(vs[i]-vs[i-1]) - median)
			if x>>patchW != 0 {
				k++
			}
			buf = append(buf, x&lowMask(patchW))
		}
		dst = appendPacked(dst, buf, patchW)
		dst = binary.AppendUvarint(dst, uint64(k))
		last := 0
		for i := 1; i < n; i++ {
			x := zigzag(int64(vs[i]-vs[i-1]) - median)
			if hi := x >> patchW; hi != 0 {
				dst = binary.AppendUvarint(dst, uint64(i-1-last))
				dst = binary.AppendUvarint(dst, hi)
				last = i
			}
		}
	}
	*scratch = buf
	return dst
}

func appendFOR(dst []byte, s forStats, rel uint64, packed []uint64) []byte {
	w := s.width()
	dst = binary.AppendVarint(dst, s.lo-int64(rel))
	dst = append(dst, byte(w))
	return appendPacked(dst, packed, w)
}

// medianDelta is the median of d_i = v_i - v_(i-1) as int64 (n >= 2).
func medianDelta(vs []uint64) int64 {
	sc := getScratch(len(vs) - 1)
	defer putScratch(sc)
	ds := (*sc)[:0]
	// Flipping the sign bit makes unsigned order the signed order, so the
	// plain (fast) sort applies.
	const signBit = 1 << 63
	for i := 1; i < len(vs); i++ {
		ds = append(ds, (vs[i]-vs[i-1])^signBit)
	}
	slices.Sort(ds)
	*sc = ds
	return int64(ds[len(ds)/2] ^ signBit)
}

func lowMask(w uint) uint64 {
	if w >= 64 {
		return ^uint64(0)
	}
	return 1<<w - 1
}

// patchedSize picks the width for intModePatched and returns it with the
// exact encoded size after the v0 and median varints. The width minimises
// the packed bits plus an estimate of the exception records; the size is then
// computed exactly for the mode comparison.
func patchedSize(vs []uint64, median int64) (uint, int) {
	var hist [65]int // number of x_i of each bit length
	maxLen := 0
	for i := 1; i < len(vs); i++ {
		l := int(width(zigzag(int64(vs[i]-vs[i-1]) - median)))
		hist[l]++
		maxLen = max(maxLen, l)
	}
	k := len(vs) - 1
	bestW, bestCost := uint(maxLen), maxLen*k
	for w := 0; w < maxLen; w++ {
		cost := k * w
		for l := w + 1; l <= maxLen && cost < bestCost; l++ {
			// An exception: about a byte of index gap plus the high bits.
			cost += hist[l] * (8 + 8*((l-w+6)/7))
		}
		if cost < bestCost {
			bestW, bestCost = uint(w), cost
		}
	}
	size := 1 + packedLen(k, bestW)
	exceptions, last := 0, 0
	for i := 1; i < len(vs); i++ {
		if hi := zigzag(int64(vs[i]-vs[i-1])-median) >> bestW; hi != 0 {
			exceptions++
			size += uvarintLen(uint64(i-1-last)) + uvarintLen(hi)
			last = i
		}
	}
	return bestW, size + uvarintLen(uint64(exceptions))
}

// bestSlope picks the slope for intModeLinear: the rounded mean step and the
// median step are tried (the median ignores a few outliers such as a missed
// scrape, the mean follows a drifting rate) and the one with the narrower
// residuals wins.
func bestSlope(vs []uint64, median int64) (int64, forStats) {
	n := len(vs)
	span := int64(vs[n-1] - vs[0])
	den := int64(n - 1)
	mean := span / den
	if r := span % den; 2*abs64(r) >= den {
		mean += sign64(r)
	}

	best, bestStats := mean, linearStats(vs, mean)
	if median != mean {
		if s := linearStats(vs, median); s.width() < bestStats.width() {
			best, bestStats = median, s
		}
	}
	return best, bestStats
}

func linearStats(vs []uint64, slope int64) forStats {
	var s forStats
	acc := vs[0]
	for i := 1; i < len(vs); i++ {
		acc += uint64(slope)
		s.add(int64(vs[i] - acc))
	}
	return s
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func sign64(v int64) int64 {
	if v < 0 {
		return -1
	}
	return 1
}

package logstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// Token filter: a Bloom filter per chunk over
//
//   - every gramLen-byte window of every word of a line (a word is a maximal
//     run of ASCII letters, digits and non-ASCII bytes), tagged itemGram;
//   - every word shorter than gramLen (at least minWordLen), tagged itemWord;
//   - every structured metadata pair, tagged itemMeta.
//
// A needle contained in a line has each of its words inside a word of the
// line, so its grams are grams of the line; a word of the needle with
// separators on both sides is a whole word of the line. mayContain uses only
// those facts, so it never rules out a chunk that has a match.
const (
	// gramLen is the n-gram length. Five bytes: hex IDs (trace IDs, request
	// IDs) have 16^5 ≈ 1M distinct grams, so a chunk's grams do not cover the
	// space and a 32-hex-digit needle tests 28 independent bits groups.
	gramLen = 5
	// minWordLen: one-byte words are too common to be worth a filter bit.
	minWordLen = 2
	// bitsPerItem and numHashes give about 5% false positives per item
	// (the filter is blocked, below); needles test several items, so a
	// chunk is rarely read in vain.
	bitsPerItem = 6
	numHashes   = 4

	itemWord byte = 1
	itemGram byte = 2
	itemMeta byte = 3
)

// wordBytes marks the bytes that make up words.
var wordBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 0x80 || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return t
}()

func isWordByte(c byte) bool { return wordBytes[c] }

// eachWord calls f with each word of s and whether it has a separator (or
// nothing: edge) on each side inside s.
func eachWord(s string, f func(w string, start, end int)) {
	for i := 0; i < len(s); {
		if !isWordByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		f(s[i:j], i, j)
		i = j
	}
}

// mix64 is a bijective 64-bit mix (multiply, then fold the high bits into
// the low ones): distinct keys give distinct hashes, spread in both the
// high bits (the filter word) and the low bits (the bits in the word).
func mix64(x uint64) uint64 {
	x *= 0x9e3779b97f4a7c15
	return x ^ x>>29
}

// gramHash hashes a gramLen-byte window: the five bytes, the tag and the
// length pack into one 64-bit key, so no two items share a key.
func gramHash(g string) uint64 {
	_ = g[gramLen-1]
	k := uint64(g[0]) | uint64(g[1])<<8 | uint64(g[2])<<16 | uint64(g[3])<<24 | uint64(g[4])<<32
	return mix64(k | uint64(itemGram)<<56 | gramLen<<48)
}

// wordHash hashes a word shorter than gramLen the same way.
func wordHash(w string) uint64 {
	var k uint64
	switch len(w) {
	case 4:
		k = uint64(w[3]) << 24
		fallthrough
	case 3:
		k |= uint64(w[2]) << 16
		fallthrough
	case 2:
		k |= uint64(w[1]) << 8
		fallthrough
	case 1:
		k |= uint64(w[0])
	}
	return mix64(k | uint64(itemWord)<<56 | uint64(len(w))<<48)
}

// metaHash hashes a structured metadata pair: xxhash64 of itemMeta, name,
// 0x00, value.
func metaHash(name, value string) uint64 {
	var d xxhash.Digest
	d.Reset()
	d.Write([]byte{itemMeta})
	d.WriteString(name)
	d.Write([]byte{0})
	d.WriteString(value)
	return d.Sum64()
}

// appendLineItems appends the hash of every filter item of line.
func appendLineItems(dst []uint64, line string) []uint64 {
	return appendLineItemsMin(dst, line, 0)
}

// headMinWord: head segment filters index only the grams of words at
// least this long (IDs: trace, span, request IDs), which is most of what
// needles look for and a fraction of a line's grams; short words are not
// indexed. mayContainLong is their test.
const headMinWord = 8

// appendLineItemsMin is appendLineItems over the words of at least
// minWord bytes only (0: every item).
func appendLineItemsMin(dst []uint64, line string, minWord int) []uint64 {
	for i := 0; i < len(line); {
		if !isWordByte(line[i]) {
			i++
			continue
		}
		j := i
		for j < len(line) && isWordByte(line[j]) {
			j++
		}
		switch w := line[i:j]; {
		case len(w) < minWord:
		case len(w) >= gramLen:
			for k := 0; k+gramLen <= len(w); k++ {
				dst = append(dst, gramHash(w[k:k+gramLen]))
			}
		case len(w) >= minWordLen:
			dst = append(dst, wordHash(w))
		}
		i = j
	}
	return dst
}

func appendMetaItems(dst []uint64, md labels.Labels) []uint64 {
	md.Range(func(l labels.Label) { dst = append(dst, metaHash(l.Name, l.Value)) })
	return dst
}

// estimateDistinct estimates the number of distinct values in hs (which
// may repeat) by linear counting over a bitmap at least as large as hs: a
// few percent off, far cheaper than sorting.
func estimateDistinct(hs []uint64) int {
	if len(hs) < 2 {
		return len(hs)
	}
	m := uint64(1) << bits.Len64(uint64(len(hs))) // > len(hs)
	bm := make([]uint64, m/64+1)
	for _, h := range hs {
		b := h >> 7 & (m - 1) // bits above those a small filter uses
		bm[b/64] |= 1 << (b % 64)
	}
	set := 0
	for _, w := range bm {
		set += bits.OnesCount64(w)
	}
	zero := float64(m) - float64(set)
	if zero < 1 {
		zero = 1
	}
	return int(math.Ceil(-float64(m) * math.Log(zero/float64(m))))
}

// bloomWords returns the words a filter of items distinct items needs.
func bloomWords(items int) int {
	return max((items*bitsPerItem+63)/64, 1)
}

// The filter is blocked: an item sets numHashes bits of one 64-bit word,
// so adding and testing touch one word. The word is chosen by the high 32
// bits of the item's hash (multiply-shift onto the word count), the bits by
// four 6-bit fields of the low bits.
func bloomWordBits(h uint64, nwords int) (word int, mask uint64) {
	word = int((h >> 32 * uint64(nwords)) >> 32)
	for i := range numHashes {
		mask |= 1 << (h >> (6 * i) & 63)
	}
	return word, mask
}

// addBloom sets the bits of h in the filter words.
func addBloom(words []uint64, h uint64) {
	w, mask := bloomWordBits(h, len(words))
	words[w] |= mask
}

// bloom is a read-only view of a stored filter: the little-endian words as
// bytes. It aliases the stored value.
type bloom struct {
	b []byte
}

func (f bloom) has(h uint64) bool {
	if len(f.b) < 8 {
		return true
	}
	w, mask := bloomWordBits(h, len(f.b)/8)
	return binary.LittleEndian.Uint64(f.b[8*w:])&mask == mask
}

// fillRatio is the share of set bits (for tests and stats).
func (f bloom) fillRatio() float64 {
	n := 0
	for _, c := range f.b {
		n += bits.OnesCount8(c)
	}
	return float64(n) / float64(len(f.b)*8)
}

// appendBloom writes uvarint word count and the words little-endian.
func appendBloom(dst []byte, words []uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(words)))
	for _, w := range words {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return dst
}

// maxBloomWords bounds a decoded filter (64 MiB of bits), far above what
// sealing writes.
const maxBloomWords = 1 << 23

// decodeBloom returns a view of a filter written by appendBloom and the
// rest of src; it copies nothing.
func decodeBloom(src []byte) (bloom, []byte, error) {
	n, src, err := readUvarint(src)
	if err != nil || n > maxBloomWords || n*8 > uint64(len(src)) {
		return bloom{}, nil, fmt.Errorf("token filter: %w", ErrCorrupt)
	}
	return bloom{b: src[: n*8 : n*8]}, src[n*8:], nil
}

// mayContain reports whether a line of the chunk may contain needle.
func (f bloom) mayContain(needle string) bool {
	ok := true
	eachWord(needle, func(w string, start, end int) {
		if !ok {
			return
		}
		if len(w) >= gramLen {
			for i := 0; i+gramLen <= len(w); i++ {
				if !f.has(gramHash(w[i : i+gramLen])) {
					ok = false
					return
				}
			}
			return
		}
		if start > 0 && end < len(needle) && len(w) >= minWordLen {
			ok = f.has(wordHash(w))
		}
	})
	return ok
}

// mayContainLong is mayContain for a filter of the grams of words of at
// least headMinWord bytes: a needle word that long lies inside a line word
// at least as long, so its grams are indexed; shorter needle words prove
// nothing.
func (f bloom) mayContainLong(needle string) bool {
	ok := true
	eachWord(needle, func(w string, _, _ int) {
		if !ok || len(w) < headMinWord {
			return
		}
		for i := 0; i+gramLen <= len(w); i++ {
			if !f.has(gramHash(w[i : i+gramLen])) {
				ok = false
				return
			}
		}
	})
	return ok
}

// mayHaveMeta reports whether an entry of the chunk may carry the
// structured metadata pair name=value.
func (f bloom) mayHaveMeta(name, value string) bool {
	return f.has(metaHash(name, value))
}

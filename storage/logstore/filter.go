package logstore

import (
	"encoding/binary"
	"fmt"
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
	// bitsPerItem and numHashes give about 3.6% false positives per item;
	// needles test several items, so a chunk is rarely read in vain.
	bitsPerItem = 7
	numHashes   = 4

	itemWord byte = 1
	itemGram byte = 2
	itemMeta byte = 3
)

func isWordByte(c byte) bool {
	return c >= 0x80 || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

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

// itemHash hashes tag, a and (metadata only) 0x00 b. Words and grams are
// short, so they are hashed from a stack buffer in one call.
func itemHash(tag byte, a, b string) uint64 {
	if tag != itemMeta && len(a) < 64 {
		var buf [64]byte
		buf[0] = tag
		n := copy(buf[1:], a)
		return xxhash.Sum64(buf[:1+n])
	}
	var d xxhash.Digest
	d.Reset()
	d.Write([]byte{tag})
	d.WriteString(a)
	if tag == itemMeta {
		d.Write([]byte{0})
		d.WriteString(b)
	}
	return d.Sum64()
}

// lineItems calls add with the hash of every filter item of line.
func lineItems(line string, add func(uint64)) {
	eachWord(line, func(w string, _, _ int) {
		if len(w) < gramLen {
			if len(w) >= minWordLen {
				add(itemHash(itemWord, w, ""))
			}
			return
		}
		for i := 0; i+gramLen <= len(w); i++ {
			add(itemHash(itemGram, w[i:i+gramLen], ""))
		}
	})
}

func metaItems(md labels.Labels, add func(uint64)) {
	md.Range(func(l labels.Label) { add(itemHash(itemMeta, l.Name, l.Value)) })
}

// bloom is a blocked-free classic Bloom filter with double hashing.
type bloom struct {
	words []uint64
}

func newBloom(items int) bloom {
	n := (items*bitsPerItem + 63) / 64
	if n < 1 {
		n = 1
	}
	return bloom{words: make([]uint64, n)}
}

func (f bloom) add(h uint64) {
	m := uint64(len(f.words)) * 64
	h1, h2 := h, h>>32|h<<32|1
	for i := range uint64(numHashes) {
		bit := (h1 + i*h2) % m
		f.words[bit/64] |= 1 << (bit % 64)
	}
}

func (f bloom) has(h uint64) bool {
	if len(f.words) == 0 {
		return true
	}
	m := uint64(len(f.words)) * 64
	h1, h2 := h, h>>32|h<<32|1
	for i := range uint64(numHashes) {
		bit := (h1 + i*h2) % m
		if f.words[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}

// fillRatio is the share of set bits (for tests and stats).
func (f bloom) fillRatio() float64 {
	n := 0
	for _, w := range f.words {
		n += bits.OnesCount64(w)
	}
	return float64(n) / float64(len(f.words)*64)
}

// appendBloom writes uvarint word count and the words little-endian.
func appendBloom(dst []byte, f bloom) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(f.words)))
	for _, w := range f.words {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return dst
}

// maxBloomWords bounds a decoded filter (64 MiB of bits), far above what
// sealing writes.
const maxBloomWords = 1 << 23

func decodeBloom(src []byte) (bloom, []byte, error) {
	n, src, err := readUvarint(src)
	if err != nil || n > maxBloomWords || n*8 > uint64(len(src)) {
		return bloom{}, nil, fmt.Errorf("token filter: %w", ErrCorrupt)
	}
	f := bloom{words: make([]uint64, n)}
	for i := range f.words {
		f.words[i] = binary.LittleEndian.Uint64(src[i*8:])
	}
	return f, src[n*8:], nil
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
				if !f.has(itemHash(itemGram, w[i:i+gramLen], "")) {
					ok = false
					return
				}
			}
			return
		}
		if start > 0 && end < len(needle) && len(w) >= minWordLen {
			ok = f.has(itemHash(itemWord, w, ""))
		}
	})
	return ok
}

// mayHaveMeta reports whether an entry of the chunk may carry the
// structured metadata pair name=value.
func (f bloom) mayHaveMeta(name, value string) bool {
	return f.has(itemHash(itemMeta, name, value))
}

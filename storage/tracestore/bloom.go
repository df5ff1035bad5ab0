package tracestore

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// bloom is a Bloom filter over byte strings (trace IDs, indexed
// field-value pairs) kept in every block header. It is immutable once
// built and safe for concurrent reads.
type bloom struct {
	words []uint64
	k     uint8
}

// bloomBitsPerKey and bloomProbes give a false-positive rate near 0.05%:
// a trace ID lookup checks every block's filter in memory and reads a page
// only on a hit, so a low rate keeps wasted reads rare however many blocks
// there are.
const (
	bloomBitsPerKey = 16
	bloomProbes     = 11
)

func newBloom(n int) *bloom {
	bits := max(n*bloomBitsPerKey, 64)
	return &bloom{words: make([]uint64, (bits+63)/64), k: bloomProbes}
}

func bloomHashes(key []byte) (uint64, uint64) {
	h := xxhash.Sum64(key)
	return h, (h>>33 | h<<31) | 1
}

func (b *bloom) add(key []byte) {
	h1, h2 := bloomHashes(key)
	m := uint64(len(b.words) * 64)
	for i := range uint64(b.k) {
		bit := (h1 + i*h2) % m
		b.words[bit/64] |= 1 << (bit % 64)
	}
}

// mayContain reports whether key may have been added (false: certainly not).
func (b *bloom) mayContain(key []byte) bool {
	if b == nil || len(b.words) == 0 {
		return true
	}
	h1, h2 := bloomHashes(key)
	m := uint64(len(b.words) * 64)
	for i := range uint64(b.k) {
		bit := (h1 + i*h2) % m
		if b.words[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}

func (b *bloom) appendTo(dst []byte) []byte {
	dst = append(dst, b.k)
	dst = binary.AppendUvarint(dst, uint64(len(b.words)))
	for _, w := range b.words {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return dst
}

func decodeBloom(r *strReader) *bloom {
	k := r.byte1()
	n := r.count(8)
	raw := r.bytes(n * 8)
	if r.err != nil {
		return nil
	}
	if k == 0 || k > 32 {
		r.fail(fmt.Sprintf("bloom probes %d", k))
		return nil
	}
	b := &bloom{words: make([]uint64, n), k: k}
	for i := range b.words {
		b.words[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	return b
}

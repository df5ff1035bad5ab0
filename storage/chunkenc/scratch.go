package chunkenc

import "sync"

// scratchPool recycles the uint64 buffers the encoders and decoders use for
// intermediate columns, so steady-state encoding and decoding do not allocate
// beyond their outputs.
var scratchPool = sync.Pool{New: func() any { s := make([]uint64, 0, 512); return &s }}

// getScratch returns a buffer with length n. Return it with putScratch.
func getScratch(n int) *[]uint64 {
	s := scratchPool.Get().(*[]uint64)
	if cap(*s) < n {
		*s = make([]uint64, n)
	}
	*s = (*s)[:n]
	return s
}

// maxPooledScratch keeps one huge decode from pinning memory in the pool.
const maxPooledScratch = 1 << 16

func putScratch(s *[]uint64) {
	if cap(*s) > maxPooledScratch {
		return
	}
	scratchPool.Put(s)
}

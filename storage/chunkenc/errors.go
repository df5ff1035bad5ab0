package chunkenc

import "errors"

// Sentinel errors. Every decoder error wraps one of these; inspect with errors.Is.
var (
	// ErrCorrupt means the input is not a valid encoding: truncated, an unknown
	// codec tag, a length that does not match the data, or trailing garbage
	// inside a compressed body.
	ErrCorrupt = errors.New("chunkenc: corrupt encoding")
	// ErrTooLarge means the input declares more values than this package
	// decodes in one column (see MaxColumnLen and MaxHistogramBuckets). The
	// limit protects readers from allocation bombs in corrupt input.
	ErrTooLarge = errors.New("chunkenc: column too large")
)

// MaxColumnLen is the largest number of values one encoded column may hold.
// Encoders panic (a caller bug) on longer input; decoders reject larger counts
// with ErrTooLarge before allocating. 1<<20 samples is a week at 1 s
// resolution per stream, far above any chunk or block weft writes, and bounds
// the memory a corrupt header can make a reader allocate to 8 MiB per column.
const MaxColumnLen = 1 << 20

// MaxHistogramBuckets bounds the total number of bucket counts (positive and
// negative, over all histograms) and of custom bounds in one encoded histogram
// column, for the same reason as MaxColumnLen.
const MaxHistogramBuckets = 1 << 22

// MaxHistogramSpans bounds the number of spans, and of buckets per side, in
// one histogram layout. Prometheus histograms have at most a few hundred.
const MaxHistogramSpans = 1 << 16

func checkLen(n int) {
	if n > MaxColumnLen {
		panic("BUG: chunkenc: column longer than MaxColumnLen; split it before encoding")
	}
}

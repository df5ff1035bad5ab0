// Package chunkenc holds weft's lossless columnar codecs for sealed metric
// chunks and compacted blocks: a timestamp column, a float value column and
// native histogram columns (integer and float, custom buckets included).
//
// Every codec is a pair of pure functions in the append style:
//
//	buf = chunkenc.AppendTimestamps(buf, ts)
//	buf = chunkenc.AppendFloats(buf, vs)
//	ts, rest, err := chunkenc.DecodeTimestamps(ts[:0], buf)
//	vs, rest, err = chunkenc.DecodeFloats(vs[:0], rest)
//
// Encoders append to dst and return it; decoders append decoded values to
// dst and return the rest of src, so columns can be concatenated without
// framing. Each column stores its own length. All functions are safe for
// concurrent use and keep no reference to their arguments (decoded
// histograms share immutable CustomValues slices among themselves, never
// with the input).
//
// Guarantees:
//
//   - Lossless and bit-exact: every int64 timestamp sequence (unsorted,
//     negative, math.MinInt64 deltas) and every float64 bit pattern (NaN
//     payloads such as Prometheus' StaleNaN, -0, ±Inf) round trips.
//   - Decoders never panic on input. Corrupt or truncated input yields an
//     error wrapping ErrCorrupt; a count above MaxColumnLen (or
//     MaxHistogramBuckets, MaxHistogramSpans) yields ErrTooLarge before any
//     allocation. On error dst and src are returned unchanged.
//   - Encoders panic only on caller bugs: a column longer than MaxColumnLen,
//     or a nil histogram.
//
// How the codecs compress (docs/format/chunkenc.md specifies every byte):
//
//   - Integer columns (timestamps, decimal-converted floats, histogram
//     fields) are sized in every mode and the smallest is written: frame of
//     reference bit packing of the values, of deltas, of delta-of-deltas, of
//     residuals from a line (start + i*step: an exact scrape grid costs a few
//     bytes whatever its length, jitter a few bits per sample), of the
//     non-zero deltas behind a bitmap, patched deltas (most in a narrow band
//     around the median, outliers as exceptions), or zigzag varint deltas.
//     Columns
//     longer than 256 values are also tried in pages of 128 with a mode per
//     page.
//   - Float columns are a constant, Gorilla XOR, or decimal: the smallest
//     power of ten that makes every value an exact integer (97, 412.345 ->
//     412345e-3) followed by the integer codec; values without an exact
//     decimal form become exceptions stored raw. Columns of 256 values and
//     more are also tried through zstd. A tag byte names the codec.
//   - Histogram columns store per-field columns (hints, schema, zero
//     threshold, counts, sum), the bucket layout only when it changes, and
//     bucket counts column-major per layout run.
package chunkenc

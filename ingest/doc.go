// Package ingest decodes and validates pushed telemetry and appends it to
// storage. This package holds the Prometheus remote write 1.0 and 2.0
// decoder; ingest/otlp holds OTLP metrics ingest and ingest/workload the
// canonical workload-context labels. None of them knows HTTP: they are given
// request bytes and a storage.AppenderV2, and return counts and typed errors
// that package api maps to status codes (see docs/remote-write.md).
//
// # Remote write
//
// A Decoder turns a decompressed request body into a Batch with hand-written
// protobuf wire decoding (google.golang.org/protobuf/encoding/protowire): no
// generated message types, no per-series allocations. A Batch is a set of
// flat arenas (series, label references, samples, histograms, exemplars)
// reused through a sync.Pool; strings point into the request buffer until
// labels are built with a reused labels.ScratchBuilder, which copies them.
//
// Decoding is all-or-nothing: a body that is not a valid encoding wraps
// ErrMalformed and nothing is appended. Batch.Append then validates series by
// series, like Prometheus' receiver:
//
//   - labels are sorted if the sender did not sort them; invalid UTF-8, empty
//     or duplicate label names, a missing __name__, an empty label set, bad
//     symbol references and more than Options.MaxLabelsPerSeries labels reject
//     the series;
//   - samples later than now + Options.MaxFutureSkew are rejected;
//   - native histograms are validated (reserved schemas are reduced first);
//   - storage's client errors (errors.Is storage.ErrOutOfOrderSample,
//     ErrTooOldSample, ErrOutOfBounds, ErrDuplicateSampleForTimestamp,
//     histogram.Error) reject the sample.
//
// Rejections never stop the batch: the valid rest is appended and counted,
// and Append returns a *RejectError (errors.Is ErrRejected) whose message
// names the reason, series and timestamp. Any other storage error is returned
// as is: it is retryable and the caller rolls the appender back.
//
// RW 2.0 metadata (type, help, unit) is passed to storage in
// AppendV2Options.Metadata; start timestamps as the st argument. Exemplars
// go through storage.ExemplarAppenderV2 when the appender implements it and
// inline on the series' last append otherwise.
//
// # Concurrency and lifetime
//
// A Decoder is safe for concurrent use. A Batch is used by one goroutine and
// borrows the buffer it was decoded from until Release.
package ingest

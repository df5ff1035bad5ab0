// Package loki decodes Loki push requests (POST /loki/api/v1/push) and
// writes them to the log store.
//
// Two encodings are accepted, as Loki accepts them:
//
//   - JSON: {"streams":[{"stream":{"k":"v"},"values":[["<unix ns>","line",{"k":"v"}]]}]},
//     the timestamp a string of nanoseconds, the third element (structured
//     metadata, string values) optional. The caller removes gzip first.
//   - protobuf logproto.PushRequest, snappy block encoded; the wire decoding
//     is written by hand with protowire from push.proto's field numbers
//     (PushRequest.streams = 1; StreamAdapter.labels = 1, entries = 2;
//     EntryAdapter.timestamp = 1, line = 2, structuredMetadata = 3;
//     LabelPairAdapter.name = 1, value = 2; Timestamp.seconds = 1, nanos = 2).
//
// Decoding is all-or-nothing: a body that is not a valid encoding wraps
// ErrMalformed. Validation is per stream and per entry, as Loki's
// distributor does it: invalid label sets, lines over Options.MaxLineSize and
// structured metadata over Options.MaxStructuredMetadataSize are rejected,
// the valid rest is written, and Push returns a *ValidationError (errors.Is
// ErrInvalid) naming the first problems, which the API answers with 400.
//
// At ingest every stream gets a service_name label (discovered from
// Options.DiscoverServiceName, else "unknown_service") and every entry a
// detected_level structured-metadata pair (from a level label or metadata
// pair, else detected from a JSON or logfmt level field or a level keyword in
// the line), as Loki does.
//
// An Ingester is safe for concurrent use and knows nothing of HTTP.
package loki

// Package tracestore stores traces in the Pebble database shared with the
// metric and log stores, under keyspace byte 0x04 (keyspace.Traces), and
// serves them to the TraceQL engine as a traceentry.Source and to the Tempo
// API by trace ID.
//
// A trace resource (the labels ingest derives from an OTLP resource:
// service_name and the canonical workload-context labels) is a stream of
// kind index.KindTrace in the shared index, so a selector such as
// {run_id="r42"} finds metric series, log streams and trace resources alike.
//
// # Write path and durability
//
// Push writes each request into one Pebble batch committed with
// pebble.Sync: a recent record (the spans of the request, grouped by
// trace), a stream record the first time a resource is seen and a
// partition-membership record the first time a stream has spans in a day
// partition. When Push returns nil the spans survive kill -9: Open rebuilds
// the head from the recent records.
//
// The head holds the unsealed spans by trace. A trace is ready to seal once
// it received no spans for Options.IdleTime or is Options.MaxTraceAge old;
// a block is cut from the ready traces every Options.BlockInterval, or as
// soon as they hold Options.BlockBytes. A recent record is deleted in the
// batch that seals the last of its traces, so every span is in the head or
// in a block (for a moment after a crash, in both: reads drop duplicates).
//
// # Blocks
//
// A block holds trace parts of one partition sorted by trace ID, cut into
// pages of about Options.PageBytes. Each page is two zstd values: the light
// section (resources with their stream IDs, and per span the IDs, start,
// duration, name, kind, status, resource and the indexed attributes, each
// in its own column) and the heavy section (everything else). The block
// header, kept in memory for every block, has the time range, the streams,
// a Bloom filter of the trace IDs, a Bloom filter of the indexed
// field-value pairs (span names, indexed span attributes, resource
// attributes), the attribute names, and per page the first and last trace
// ID, time range, duration range and the statuses and kinds present.
//
// A lookup by trace ID checks each header's filter in memory and reads one
// page per block that holds the trace: it never scans. A search skips
// blocks by time, stream postings and value filter, pages by their
// summaries, and judges each trace part on the light section alone; only
// the parts that may match are read whole. A trace whose parts lie in
// several blocks and the head is assembled before it is returned. The
// layout is in docs/format/traces.md.
//
// # Retention
//
// Blocks and membership records are keyed by (partition, ...), so
// retention deletes whole partitions with DeleteRange.
//
// # Concurrency and lifetime
//
// A Store is safe for concurrent use. It does not own the Pebble database or
// the index: both must stay open until Close returns. Close stops the
// background goroutine and seals the head (unless Options.NoSealOnClose; the
// recent records are durable either way).
package tracestore

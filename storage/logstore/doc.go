// Package logstore stores log streams in the Pebble database shared with the
// metric store, under keyspace byte 0x03, and serves them to the LogQL
// engine as a logql.Source.
//
// A log stream is a stream of kind index.KindLog in the shared index, so a
// selector such as {run_id="r42"} finds metric series and log streams alike.
//
// # Write path and durability
//
// Push writes every stream of a request into one Pebble batch committed with
// pebble.Sync: a "recent" record per stream (the entries as pushed), a stream
// record the first time a stream is seen and a partition-membership record
// the first time a stream has entries in a day partition. Pebble's commit
// pipeline groups concurrent synced batches, so concurrent pushes share
// fsyncs. When Push returns nil the entries survive kill -9: Open rebuilds
// the in-memory heads from the recent records.
//
// A stream's head is sealed into chunks when it reaches Options.SealEntries
// entries or Options.SealBytes bytes, or when it is older than
// Options.SealAge (background loop). Sealing writes the chunks and deletes
// the recent records they came from in one batch, so every entry is in
// exactly one place at every moment.
//
// # Chunks
//
// A chunk holds the entries of one stream in one partition, sorted by
// timestamp, in three values: a header of a few dozen bytes (time range,
// counts, structured-metadata names), a token filter (a Bloom filter over
// the character n-grams and short words of the lines and over the
// structured metadata pairs) and the data: the timestamp column, then the
// line lengths, lines and metadata compressed with zstd. A literal line
// filter (|= "needle") or a metadata hint skips a chunk whose filter proves
// that no entry can match; SelectTimestamps counts chunks from their
// headers and timestamps without decompressing lines. Unsealed heads carry
// the same filter per headSegLen entries. The layout is in
// docs/format/logs.md.
//
// # Retention
//
// Chunks and membership records are keyed by (partition, stream, ...), so
// retention deletes whole partitions with DeleteRange.
//
// # Concurrency and lifetime
//
// A Store is safe for concurrent use. It does not own the Pebble database or
// the index: both must stay open until Close returns. Close stops the
// background goroutines and seals the heads (unless Options.NoSealOnClose;
// the recent records are durable either way).
package logstore

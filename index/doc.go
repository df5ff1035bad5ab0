// Package index is weft's stream registry and inverted index.
//
// A stream is a unique label set of one signal Kind: a metric series, a log
// stream or a trace resource. The registry maps each (kind, label set) to a
// stable ID — a uint64 from one ID space shared by all kinds, allocated
// monotonically and never reused — and back. The inverted index maps every
// label pair to a roaring64 bitmap of the IDs carrying it, partitioned by time
// (Options.PartitionDuration, one day by default), so a query over the last
// hour only unions the postings of the partitions it overlaps and does not pay
// for streams that died last week.
//
// Everything lives in memory for the write path: label strings are interned in
// a symbol table, each stream's label set is a short varint sequence of symbol
// references, and creating a stream writes nothing to disk. Persist writes
// everything created or touched since the previous Persist to Pebble in one
// synced batch under keys that start with the byte 0x01; Open reads it back,
// eagerly for the newest partitions and lazily for older ones. The on-disk
// layout is specified in docs/format/index.md.
//
// Matchers are Prometheus labels.Matchers with Prometheus semantics (fully
// anchored RE2, empty-matching matchers select streams without the label).
// KindAny in queries matches every kind.
//
// All methods of *Index are safe for concurrent use. The index starts no
// goroutines. It imports nothing of weft.
package index

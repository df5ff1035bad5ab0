// Package storage is weft's metric store: an in-memory head of compressed
// open chunks behind weft's own write-ahead log, sealed chunks in Pebble,
// background compaction into long per-series columnar blocks, retention by
// whole time partitions, and a Prometheus-compatible read path.
//
// # What it owns
//
//   - *DB implements Prometheus' storage.Storage (Appendable, AppendableV2,
//     Queryable, ChunkQueryable, StartTime, Close) and
//     storage.ExemplarQueryable, so the upstream PromQL engine and HTTP API
//     run over it unchanged; promqltest_test.go runs Prometheus' PromQL
//     conformance files against it.
//   - One Pebble database in <dir>/pebble, shared with the index package
//     (opened with index.Merger()); storage owns keyspaces 0x02 (chunks) and
//     0x05 (metadata, tombstones, compaction marks). docs/format/chunks.md.
//   - The WAL in <dir>/wal: CRC-checked records in numbered segments,
//     group-committed, checkpointed. docs/format/wal.md.
//
// # Write path
//
// Append validates a sample against its series (labels, future window,
// duplicate, out-of-order window) and queues it in the appender. Commit
// encodes the batch into WAL records, writes them, applies them to the head
// and returns once a single syncer goroutine has fsynced the WAL past the
// batch; concurrent commits share that fsync. Each head series keeps one open
// Prometheus XOR2 (or histogram-ST) chunk, compressed sample by sample, and a
// small out-of-order buffer. A chunk is sealed at 120 samples, ~1 KiB, a
// value-type change or a partition boundary; a sealer goroutine writes it to
// Pebble under 0x02 | partition | series | start time. Compaction re-encodes
// sealed chunks into weft's columnar layout (storage/chunkenc codecs) within
// one interval and, once a partition is closed, merges each series' chunks in
// it into one long block. Checkpoints make everything in
// old WAL segments durable elsewhere and delete them.
//
// # Read path
//
// Select takes postings from the index for the query range, copies each
// matching series' head state (open chunk, pending sealed chunks, OOO buffer),
// then range-scans Pebble per series and partition. The series iterator
// merges those sources in time order, dropping duplicates and tombstoned
// samples, and implements chunkenc.Iterator fully (including AtST).
//
// # Concurrency and lifetime
//
// All *DB methods are safe for concurrent use. Appenders and queriers are
// for one goroutine each; an appender must end with Commit or Rollback, a
// querier with Close. The DB starts three goroutines (WAL syncer, sealer,
// background maintenance unless Options.CheckpointInterval < 0); Close stops
// and waits for all of them, converts chunks sealed since the last compaction
// into the columnar format and flushes Pebble.
package storage

// Package ingester is the scale-out ingester's consumer: it reads its
// static partitions of the ingest log from where it left off into the
// single-node engine (a storage.Substrate), records how far it applied each
// partition only once the store has the data (the metric WAL committed and
// fsynced, the log push synced), and commits those offsets to its own
// consumer group. It reports readiness (caught up within a lag bound) and
// serves read-after-write waits. docs/scale-out.md describes the role.
//
// Offsets: the next record to apply of each partition is kept in
// <StateDir>/offsets.json, written after every applied batch (after the
// data is durable), and committed to the brokers every CommitInterval. A
// restart resumes from the later of the two, so a record is applied once
// unless the offsets file itself is lost (metric samples are idempotent; a
// log line could then be stored twice).
package ingester

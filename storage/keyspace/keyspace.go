// Package keyspace is the map of the shared Pebble database: every key weft
// writes starts with one of these bytes, and each byte has exactly one owner
// that ranges over, writes and DeleteRanges its own keys without knowing the
// others. The layouts behind each byte are specified in docs/format/.
//
// The substrate (storage.Substrate) opens the database and hands each owner
// its byte; the owners take it from here, so that adding a signal store is
// adding a row to Owners, and TestOwnersDistinct keeps two owners from ever
// sharing a byte.
package keyspace

// The keyspace bytes. index.Keyspace is the index's copy of Index (package
// index imports nothing of weft); a test checks that they agree.
const (
	// Index holds the stream registry and the time-partitioned postings of
	// every signal (package index; docs/format/index.md).
	Index byte = 0x01
	// Chunks holds sealed metric chunks by (partition, series, start time)
	// (package storage; docs/format/chunks.md).
	Chunks byte = 0x02
	// Logs holds log streams: recent entries, sealed chunks, token filters
	// (package storage/logstore; docs/format/logs.md).
	Logs byte = 0x03
	// Traces holds trace blocks (the trace store; docs/format/traces.md).
	Traces byte = 0x04
	// Meta holds metric metadata, tombstones and store-level state such as
	// compaction marks (package storage; docs/format/chunks.md).
	Meta byte = 0x05
)

// Owner names the package that owns a keyspace byte.
type Owner struct {
	Byte    byte
	Package string
	Holds   string
}

// Owners lists every keyspace in byte order.
var Owners = []Owner{
	{Index, "index", "stream registry and postings of every signal"},
	{Chunks, "storage", "sealed metric chunks"},
	{Logs, "storage/logstore", "log streams, chunks and token filters"},
	{Traces, "storage/tracestore", "trace blocks"},
	{Meta, "storage", "metric metadata, tombstones, compaction marks"},
}

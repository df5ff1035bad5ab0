// Package record is the format of the scale-out ingest log's records: what a
// distributor produces to a Kafka-API topic and what ingesters and block
// builders consume (docs/format/ingest-log.md). One record holds the
// validated samples of one signal for one partition from one request: the
// metric series (labels, metadata, float and histogram samples, start
// timestamps, exemplars) or the log streams (labels, entries with structured
// metadata) that the single-node store would have appended.
//
// The package also owns the partition function (Hash, Partition): a series or
// stream goes to the partition its label set hashes to, so every process
// that needs to know where a series lives computes the same answer from its
// labels alone.
//
// Encoding appends to a caller's buffer; decoding never panics on input and
// bounds every count by the bytes left, so a corrupt record costs at most its
// own size in memory (FuzzDecode). Encoders are not safe for concurrent use;
// the functions are.
package record

// Package kafkalog is weft's ingest log on a Kafka-API service (Kafka,
// Redpanda, WarpStream, ...), through franz-go: the distributor's Sink, which
// turns what the ingest paths append and push into records (package
// cluster/record) on the partitions their series hash to and returns only
// once the brokers acknowledged them, and the Reader that ingesters and block
// builders consume their partitions with, from offsets they commit in their
// own consumer groups.
//
// Only Produce, Fetch, Metadata, ListOffsets and OffsetCommit/OffsetFetch are
// used: no transactions, no group membership (partitions are assigned
// statically by flag), so any Kafka-API service works. docs/scale-out.md
// describes the roles; docs/format/ingest-log.md the records.
package kafkalog

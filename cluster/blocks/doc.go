// Package blocks holds weft's immutable blocks in object storage: the
// block builder, which reads closed time windows of the ingest log's
// partitions into a block (the single-node store's files: index, metric
// chunks, log chunks and trace blocks, with a meta.json) and uploads it
// before committing its offsets; the reader, which downloads the blocks a
// read needs into a bounded local cache and answers the querier's reads of
// windows older than the ingesters'; and the buckets (S3 API through
// minio-go, or a directory).
// docs/format/blocks.md is the format, docs/scale-out.md the roles.
package blocks

package record

import (
	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/traceentry"
)

// hashSep separates names and values in Hash's input; 0xff never occurs in
// valid UTF-8, so no two label sets hash the same bytes.
const hashSep = 0xff

// Hash is the partition hash of a series' or stream's label set: xxHash64 of
// name 0xff value 0xff for every label in order. It is part of the format
// (docs/format/ingest-log.md): changing it moves series between partitions.
func Hash(ls labels.Labels) uint64 {
	d := xxhash.New()
	var sep = [1]byte{hashSep}
	ls.Range(func(l labels.Label) {
		_, _ = d.WriteString(l.Name)
		_, _ = d.Write(sep[:])
		_, _ = d.WriteString(l.Value)
		_, _ = d.Write(sep[:])
	})
	return d.Sum64()
}

// Partition is the partition of n that a label set with hash h belongs to.
// n must be positive.
func Partition(h uint64, n int32) int32 {
	return int32(h % uint64(n))
}

// PartitionOf is Partition(Hash(ls), n).
func PartitionOf(ls labels.Labels, n int32) int32 { return Partition(Hash(ls), n) }

// TracePartition is the partition of n that a trace belongs to: every span
// of a trace goes to the one its trace ID hashes to (xxHash64 of the 16
// bytes), whatever resource sent it, so one partition holds the whole trace.
// Part of the format, as Hash is.
func TracePartition(id traceentry.TraceID, n int32) int32 {
	return Partition(xxhash.Sum64(id[:]), n)
}

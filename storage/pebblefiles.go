package storage

import "github.com/cockroachdb/pebble/v2"

// noRecycleCleaner deletes Pebble's obsolete files like pebble.DeleteCleaner
// and also turns off WAL recycling: Pebble keeps up to
// MemTableStopWritesThreshold+1 (3) flushed WAL files, each as large as a
// memtable's worth of writes, to reuse them instead of creating new files,
// unless its cleaner needs file contents. Recycling saves a file-size update
// per fsync; weft writes Pebble with NoSync and syncs it once per checkpoint,
// so it gains nothing, while the kept files cost up to ~3x pebbleMemTableSize
// of disk (measured: 5 MB, 2.2 B/sample, on BenchmarkDiskBytesPerSample's
// 2.3 M samples, more than the compacted chunks). The marker method comes
// from the embedded ArchiveCleaner; Clean and String come from the shallower
// DeleteCleaner.
type noRecycleCleaner struct {
	pebble.DeleteCleaner
	archiveMarker
}

type archiveMarker struct{ pebble.ArchiveCleaner }

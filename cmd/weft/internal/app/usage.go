package app

import (
	"context"
	"fmt"

	"github.com/weftdb/weft/query/chargeback"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/keyspace"
)

// usageDisk reports the bytes on disk of each signal for the chargeback
// report (docs/chargeback.md): Pebble's estimate of the metric chunks', the
// log streams' and the trace blocks' keyspaces. The index, metadata and the
// WAL are shared by every tenant and are not apportioned.
func usageDisk(db *storage.DB) func(context.Context) (chargeback.Disk, error) {
	return func(context.Context) (chargeback.Disk, error) {
		var d chargeback.Disk
		for _, k := range []struct {
			b   byte
			dst *int64
		}{{keyspace.Chunks, &d.Metrics}, {keyspace.Logs, &d.Logs}, {keyspace.Traces, &d.Traces}} {
			n, err := db.Pebble().EstimateDiskUsage([]byte{k.b}, []byte{k.b + 1})
			if err != nil {
				return chargeback.Disk{}, fmt.Errorf("estimate disk usage of keyspace %#x: %w", k.b, err)
			}
			*k.dst = int64(n)
		}
		return d, nil
	}
}

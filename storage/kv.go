package storage

import "github.com/cockroachdb/pebble/v2"

// Pebble returns the Pebble database shared by the metric store and the
// index, so that other stores (logs under keyspace 0x03, traces under 0x04)
// can keep their keys in it. The DB keeps ownership: callers must not close
// it and must stop using it before Close. Safe for concurrent use.
func (db *DB) Pebble() *pebble.DB { return db.pdb }

package keyspace_test

import (
	"testing"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/keyspace"
)

// TestOwnersDistinct: no two owners share a keyspace byte, no byte is zero
// (keys must sort after Pebble's empty prefix), and Owners is in byte order.
func TestOwnersDistinct(t *testing.T) {
	seen := map[byte]string{}
	for i, o := range keyspace.Owners {
		if o.Byte == 0 {
			t.Errorf("%s: keyspace byte 0 is reserved", o.Package)
		}
		if prev, dup := seen[o.Byte]; dup {
			t.Errorf("keyspace 0x%02x owned by both %s and %s", o.Byte, prev, o.Package)
		}
		seen[o.Byte] = o.Package
		if i > 0 && keyspace.Owners[i-1].Byte >= o.Byte {
			t.Errorf("Owners not in byte order at %s", o.Package)
		}
	}
}

// TestIndexByte: the index keeps its own copy of its byte (it imports nothing
// of weft); it must be the one in the map.
func TestIndexByte(t *testing.T) {
	if index.Keyspace != keyspace.Index {
		t.Fatalf("index.Keyspace = 0x%02x, keyspace.Index = 0x%02x", index.Keyspace, keyspace.Index)
	}
}

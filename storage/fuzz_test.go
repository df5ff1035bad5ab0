package storage

import (
	"bytes"
	"math"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// FuzzChunkValue: the decoder of a sealed chunk's Pebble value never panics,
// and whatever it accepts iterates without panicking (a Prometheus-encoded
// value through Prometheus' chunk, a columnar one through decodeColumnar);
// a columnar payload that decodes re-encodes to one that decodes the same.
func FuzzChunkValue(f *testing.F) {
	// Seeds: real values of each version.
	var cols columns
	cols.reset(chunkenc.ValFloat)
	for i := range 30 {
		cols.ts = append(cols.ts, int64(i)*15_000)
		cols.st = append(cols.st, 0)
		cols.vs = append(cols.vs, float64(i)*1.5)
	}
	columnar := appendColumnar(nil, &cols)
	f.Add(appendChunkValue(nil, &sealedChunk{mint: 0, maxt: 29 * 15_000, n: 30, enc: encColumnar, data: columnar}))
	xor := chunkenc.NewXORChunk()
	app, err := xor.Appender()
	if err != nil {
		f.Fatal(err)
	}
	for i := range 10 {
		app.Append(0, int64(i)*1000, float64(i))
	}
	f.Add(append([]byte{chunkValueXOR, byte(chunkenc.EncXOR), 10, 90}, xor.Bytes()...))
	f.Add([]byte{chunkValueColumnar})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, v []byte) {
		c, err := decodeChunkValue(v, 1000)
		if err != nil {
			return
		}
		if c.enc == encColumnar {
			var got columns
			if err := decodeColumnar(&got, c.data); err != nil {
				return
			}
			again := appendColumnar(nil, &got)
			var round columns
			if err := decodeColumnar(&round, again); err != nil {
				t.Fatalf("re-encoded columns do not decode: %v", err)
			}
			if !sameColumns(&got, &round) {
				t.Fatalf("columnar round trip changed the data")
			}
			return
		}
		chk, err := chunkenc.FromData(c.enc, c.data)
		if err != nil {
			return
		}
		it := chk.Iterator(nil)
		for n := 0; it.Next() != chunkenc.ValNone && n < 1<<16; n++ {
		}
		_ = it.Err()
	})
}

func sameColumns(a, b *columns) bool {
	if a.vt != b.vt || len(a.ts) != len(b.ts) || len(a.vs) != len(b.vs) || len(a.hs) != len(b.hs) || len(a.fhs) != len(b.fhs) {
		return false
	}
	for i := range a.ts {
		if a.ts[i] != b.ts[i] || a.st[i] != b.st[i] {
			return false
		}
	}
	for i := range a.vs {
		if math.Float64bits(a.vs[i]) != math.Float64bits(b.vs[i]) {
			return false
		}
	}
	for i := range a.hs {
		if !a.hs[i].Equals(b.hs[i]) {
			return false
		}
	}
	for i := range a.fhs {
		if !a.fhs[i].Equals(b.fhs[i]) {
			return false
		}
	}
	return true
}

// FuzzTombstoneKey: a tombstone key read back from disk never panics the
// loader, and one it accepts is exactly what appendTombKey writes.
func FuzzTombstoneKey(f *testing.F) {
	f.Add(appendTombKey(nil, 42, interval{mint: -5, maxt: 1 << 40}))
	f.Add(appendTombKey(nil, 0, interval{mint: math.MinInt64, maxt: math.MaxInt64}))
	f.Add([]byte{tagMeta, 't', 1, 2, 3})
	f.Fuzz(func(t *testing.T, k []byte) {
		id, iv, ok := parseTombKey(k)
		if !ok {
			return
		}
		if back := appendTombKey(nil, id, iv); !bytes.Equal(back, k) {
			t.Fatalf("key %x parsed to %d %v, which writes %x", k, id, iv, back)
		}
	})
}

package tracestore

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/traceentry"
)

func testParts(n int) []part {
	var parts []part
	for _, tr := range genTraces(rand.New(rand.NewPCG(21, 22)), n, time.Unix(1e9, 0), time.Hour) {
		p := part{id: tr.TraceID, spans: tr.Spans}
		for range tr.Spans {
			p.streams = append(p.streams, index.ID(7))
		}
		parts = append(parts, p)
	}
	return parts
}

// TestRecordRoundTrip encodes trace parts as a recent record and decodes
// them: every field of every span comes back (indexed attributes after the
// others).
func TestRecordRoundTrip(t *testing.T) {
	parts := testParts(50)
	enc := newEncoder(map[string]struct{}{"http.route": {}})
	rec := enc.appendRecord(nil, parts)
	got, err := decodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(parts) {
		t.Fatalf("%d parts, want %d", len(got), len(parts))
	}
	for i := range parts {
		w := traceSigs(&traceentry.Trace{Spans: parts[i].spans})
		g := traceSigs(&traceentry.Trace{Spans: got[i].spans})
		if !slices.Equal(g, w) || got[i].id != parts[i].id || !slices.Equal(got[i].streams, parts[i].streams) {
			t.Fatalf("part %d:\n got %q\nwant %q", i, g, w)
		}
	}
	// Truncations and corruptions fail cleanly.
	for n := range len(rec) {
		if _, err := decodeRecord(rec[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
}

// FuzzDecodeRecord: decoding any bytes as a recent record or a page never
// panics, and what decodes re-encodes to a record that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	enc := newEncoder(map[string]struct{}{"http.route": {}})
	f.Add(enc.appendRecord(nil, testParts(3)))
	f.Add(enc.appendRecord(nil, testParts(1)[:1]))
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		parts, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, err := decodeRecord(enc.appendRecord(nil, parts))
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if len(again) != len(parts) {
			t.Fatalf("%d parts, then %d", len(parts), len(again))
		}
		if _, err := unmarshalBlock(0, 0, b); err == nil {
			_ = err // headers may decode too; only panics matter
		}
	})
}

// FuzzBlockMeta: a trace block's header as read back from Pebble
// (unmarshalBlock, at every store open) never panics the reader, and a
// header it accepts writes back to bytes that read the same.
func FuzzBlockMeta(f *testing.F) {
	m := &blockMeta{minStart: -5, maxEnd: 1 << 40, traces: 2, spans: 7, streams: []index.ID{1, 9},
		ids: newBloom(2), values: newBloom(3), spanKeys: []string{"http.route"}, resKeys: []string{"service.name"},
		indexed: []string{"http.route"}, pages: []pageMeta{{minStart: 1, maxEnd: 2, minDur: 3, maxDur: 4, statuses: 1, kinds: 2, traces: 2, lightLen: 10, heavyLen: 20}}}
	f.Add(m.marshal())
	f.Add([]byte{blockVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := unmarshalBlock(1, 2, b)
		if err != nil {
			return
		}
		again := got.marshal()
		back, err := unmarshalBlock(1, 2, again)
		if err != nil {
			t.Fatalf("re-encoded header does not decode: %v", err)
		}
		if !bytes.Equal(back.marshal(), again) {
			t.Fatalf("header round trip changed it")
		}
	})
}

package loki

import (
	"context"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/weftdb/weft/storage/logstore"
)

// recorder is a Pusher that keeps what it was given.
type recorder struct {
	mu      sync.Mutex
	streams []logstore.PushStream
	err     error
}

func (r *recorder) Push(_ context.Context, ss []logstore.PushStream) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.streams = append(r.streams, ss...)
	return nil
}

// Protobuf builders for tests (the encoder side of decode.go).

type pbEntry struct {
	sec, nanos int64
	line       string
	md         []Pair
}

func pbPush(streams ...[]byte) []byte {
	var b []byte
	for _, s := range streams {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, s)
	}
	return b
}

func pbStream(labels string, es ...pbEntry) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, labels)
	for _, e := range es {
		var eb, ts []byte
		ts = protowire.AppendTag(ts, 1, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(e.sec))
		ts = protowire.AppendTag(ts, 2, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(e.nanos))
		eb = protowire.AppendTag(eb, 1, protowire.BytesType)
		eb = protowire.AppendBytes(eb, ts)
		eb = protowire.AppendTag(eb, 2, protowire.BytesType)
		eb = protowire.AppendString(eb, e.line)
		for _, p := range e.md {
			var pb []byte
			pb = protowire.AppendTag(pb, 1, protowire.BytesType)
			pb = protowire.AppendString(pb, p.Name)
			pb = protowire.AppendTag(pb, 2, protowire.BytesType)
			pb = protowire.AppendString(pb, p.Value)
			eb = protowire.AppendTag(eb, 3, protowire.BytesType)
			eb = protowire.AppendBytes(eb, pb)
		}
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, eb)
	}
	// hash = 3, ignored
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, 12345)
	return b
}

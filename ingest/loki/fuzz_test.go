package loki

import (
	"bytes"
	"context"
	"testing"
)

// The decoders and the ingester never panic on input.

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"streams":[{"stream":{"app":"a"},"values":[["1","x",{"k":"v"}]]}]}`))
	f.Add([]byte(`{"streams":[{"stream":{},"values":[["-1",""]]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeJSON(b)
		if err != nil {
			return
		}
		NewIngester(&recorder{}, DefaultOptions()).Push(context.Background(), req)
	})
}

func FuzzDecodeProto(f *testing.F) {
	f.Add(pbPush(pbStream(`{app="a"}`, pbEntry{sec: 1, line: "x", md: []Pair{{"k", "v"}}})))
	f.Add(pbPush(pbStream(`{a="\"", b=`+"`x`"+`}`, pbEntry{sec: -5, nanos: 3})))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeProto(b)
		if err != nil {
			return
		}
		NewIngester(&recorder{}, DefaultOptions()).Push(context.Background(), req)
	})
}

func FuzzParseLabelSet(f *testing.F) {
	f.Add(`{a="b", c="d"}`)
	f.Add("{a=`x`,}")
	f.Fuzz(func(t *testing.T, s string) {
		parseLabelSet(s)
	})
}

// FuzzDecodeBody covers the content-type and content-encoding combinations
// (snappy-encoded JSON tries JSON first, then a snappy block).
func FuzzDecodeBody(f *testing.F) {
	f.Add(true, uint8(1), []byte(`{"streams":[{"stream":{"app":"a"},"values":[["1","x"]]}]}`))
	f.Add(false, uint8(1), pbPush(pbStream(`{app="a"}`, pbEntry{sec: 1, line: "x"})))
	f.Add(true, uint8(2), []byte("\x1f\x8b"))
	encodings := []string{"", "snappy", "gzip", "deflate"}
	f.Fuzz(func(t *testing.T, isJSON bool, enc uint8, b []byte) {
		ct := "application/x-protobuf"
		if isJSON {
			ct = "application/json"
		}
		_, _ = DecodeBody(ct, encodings[int(enc)%len(encodings)], bytes.NewReader(b), 1<<20)
	})
}

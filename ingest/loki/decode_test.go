package loki

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
)

func sortPairs(ps []Pair) []Pair {
	slices.SortFunc(ps, func(a, b Pair) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return ps
}

func TestDecodeJSON(t *testing.T) {
	body := `{"streams":[{"stream":{"app":"api","env":"prod"},"values":[
		["1700000000000000001","hello"],
		["1700000000000000002","with md",{"trace_id":"abc","user":"u1"}]]},
		{"stream":{"job":"x"},"values":[]}]}`
	req, err := DecodeJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Streams) != 2 {
		t.Fatalf("%d streams", len(req.Streams))
	}
	s := req.Streams[0]
	if got := sortPairs(s.Labels); !reflect.DeepEqual(got, []Pair{{"app", "api"}, {"env", "prod"}}) {
		t.Fatalf("labels %v", got)
	}
	want := []Entry{
		{Timestamp: 1700000000000000001, Line: "hello"},
		{Timestamp: 1700000000000000002, Line: "with md", Metadata: []Pair{{"trace_id", "abc"}, {"user", "u1"}}},
	}
	sortPairs(s.Entries[1].Metadata)
	if !reflect.DeepEqual(s.Entries, want) {
		t.Fatalf("entries %+v", s.Entries)
	}
}

func TestDecodeJSONMalformed(t *testing.T) {
	for name, body := range map[string]string{
		"not json":        `{`,
		"number ts":       `{"streams":[{"stream":{"a":"b"},"values":[[1,"x"]]}]}`,
		"bad ts":          `{"streams":[{"stream":{"a":"b"},"values":[["12x","x"]]}]}`,
		"one element":     `{"streams":[{"stream":{"a":"b"},"values":[["1"]]}]}`,
		"four elements":   `{"streams":[{"stream":{"a":"b"},"values":[["1","x",{},1]]}]}`,
		"md not strings":  `{"streams":[{"stream":{"a":"b"},"values":[["1","x",{"k":1}]]}]}`,
		"line not string": `{"streams":[{"stream":{"a":"b"},"values":[["1",2]]}]}`,
		"label not str":   `{"streams":[{"stream":{"a":1},"values":[]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeJSON([]byte(body)); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err %v, want ErrMalformed", err)
			}
		})
	}
}

func TestDecodeProto(t *testing.T) {
	body := pbPush(
		pbStream(`{app="api", msg="a \"quoted\", value"}`,
			pbEntry{sec: 1700000000, nanos: 5, line: "hello"},
			pbEntry{sec: 1700000001, line: "md", md: []Pair{{"trace_id", "abc"}}}),
		pbStream(`not a label set`, pbEntry{sec: 1, line: "x"}),
	)
	req, err := DecodeProto(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Streams) != 2 {
		t.Fatalf("%d streams", len(req.Streams))
	}
	s := req.Streams[0]
	if !reflect.DeepEqual(s.Labels, []Pair{{"app", "api"}, {"msg", `a "quoted", value`}}) {
		t.Fatalf("labels %v", s.Labels)
	}
	want := []Entry{
		{Timestamp: 1700000000000000005, Line: "hello"},
		{Timestamp: 1700000001000000000, Line: "md", Metadata: []Pair{{"trace_id", "abc"}}},
	}
	if !reflect.DeepEqual(s.Entries, want) {
		t.Fatalf("entries %+v", s.Entries)
	}
	if req.Streams[1].LabelsErr == nil {
		t.Fatal("bad label set not reported")
	}
	// Truncated bodies are malformed.
	for i := 1; i < len(body); i++ {
		if _, err := DecodeProto(body[:i]); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut at %d: %v", i, err)
		}
	}
}

func TestParseLabelSet(t *testing.T) {
	cases := []struct {
		in   string
		want []Pair
		ok   bool
	}{
		{`{}`, nil, true},
		{` { a = "b" , c="d", } `, []Pair{{"a", "b"}, {"c", "d"}}, true},
		{"{a=`raw\\n`}", []Pair{{"a", `raw\n`}}, true},
		{`{a="\u00fc"}`, []Pair{{"a", "ü"}}, true},
		{`{a="b"`, nil, false},
		{`{a=b}`, nil, false},
		{`{1a="b"}`, nil, false},
		{`{a="b" c="d"}`, nil, false},
		{`{a="unterminated}`, nil, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseLabelSet(c.in)
			if (err == nil) != c.ok {
				t.Fatalf("err %v, want ok=%v", err, c.ok)
			}
			if c.ok && !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestDecodeBody(t *testing.T) {
	js := []byte(`{"streams":[{"stream":{"a":"b"},"values":[["5","x"]]}]}`)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(js)
	zw.Close()
	pb := s2.EncodeSnappy(nil, pbPush(pbStream(`{a="b"}`, pbEntry{nanos: 5, line: "x"})))
	cases := []struct {
		name, ct, ce string
		body         []byte
		max          int64
		wantErr      error
	}{
		{"json", "application/json; charset=utf-8", "", js, 1 << 20, nil},
		{"json gzip", "application/json", "gzip", gz.Bytes(), 1 << 20, nil},
		{"protobuf", "application/x-protobuf", "", pb, 1 << 20, nil},
		{"protobuf snappy encoding", "application/x-protobuf", "snappy", pb, 1 << 20, nil},
		{"json snappy encoding, plain body (as Loki)", "application/json", "snappy", js, 1 << 20, nil},
		{"json snappy encoding, compressed body", "application/json", "snappy", s2.EncodeSnappy(nil, js), 1 << 20, nil},
		{"json snappy too large", "application/json", "snappy", s2.EncodeSnappy(nil, js), int64(len(js)) - 1, ErrTooLarge},
		{"json snappy garbage", "application/json", "snappy", []byte{0xff, 0xff, 0xff}, 1 << 20, ErrMalformed},
		{"no type is protobuf", "", "", pb, 1 << 20, nil},
		{"json too large", "application/json", "", js, 10, ErrTooLarge},
		{"gzip too large", "application/json", "gzip", gz.Bytes(), 10, ErrTooLarge},
		{"bad snappy", "application/x-protobuf", "", []byte{0xff, 0xff, 0xff}, 1 << 20, ErrMalformed},
		{"bad gzip", "application/json", "gzip", js, 1 << 20, ErrMalformed},
		{"unknown encoding", "application/json", "br", js, 1 << 20, ErrMalformed},
	}
	// A body that is not snappy names the codec once.
	_, err := DecodeBody("application/x-protobuf", "snappy", bytes.NewReader([]byte{0xff, 0xff, 0xff}), 1<<20)
	if err == nil || strings.Count(err.Error(), "snappy") != 1 {
		t.Errorf("bad snappy body: %v, want one mention of snappy", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := DecodeBody(c.ct, c.ce, bytes.NewReader(c.body), c.max)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(req.Streams) != 1 || req.Streams[0].Entries[0].Timestamp != 5 || req.Streams[0].Entries[0].Line != "x" {
				t.Fatalf("decoded %+v", req)
			}
		})
	}
}

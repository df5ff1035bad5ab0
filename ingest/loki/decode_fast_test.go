package loki

import (
	"reflect"
	"testing"
)

// canonical sorts a request's labels and metadata (encoding/json yields
// map order).
func canonical(r *Request) *Request {
	for i := range r.Streams {
		sortPairs(r.Streams[i].Labels)
		for j := range r.Streams[i].Entries {
			sortPairs(r.Streams[i].Entries[j].Metadata)
		}
	}
	return r
}

var fastJSONCorpus = []string{
	`{"streams":[{"stream":{"app":"api","env":"prod"},"values":[["1700000000000000001","hello"],["1700000000000000002","with md",{"trace_id":"abc","user":"u1"}]]},{"stream":{"job":"x"},"values":[]}]}`,
	` { "streams" : [ { "values" : [ [ "-5" , "" , { } ] ] , "stream" : { } } ] } `,
	`{"streams":[]}`,
	`{"streams":[{"stream":{"a":"\"q\" \\ \/ \b\f\n\r\t"},"values":[["1","{\"level\":\"info\",\"msg\":\"x\"}"]]}]}`,
	`{"streams":[{"stream":{"a":"b"},"values":[["2","bad \x"]]}]}`,
	`{}`,
	`{"streams":[{}]}`,
	`{"streams":[{"stream":{"a":"\u00e9\n\"x\"","b":"ü✓"},"values":[["1","esc \\ \t \/ \ud83d\ude00 \ud800"]]}]}`,
	"{\"streams\":[{\"stream\":{\"a\":\"b\"},\"values\":[[\"1\",\"bad \xff utf8\"]]}]}",
	`{"streams":[{"stream":{"a":"b","a":"c"},"values":[]}]}`,
	`{"streams":[{"stream":{"a":"b"},"values":[["1","x",{"k":"1","k":"2"}]]}]}`,
	`{"Streams":[{"stream":{"a":"b"},"values":[["1","x"]]}]}`,
	`{"streams":[{"stream":{"a":"b"},"values":[["1","x",null]]}]}`,
	`{"streams":[{"stream":{"a":"b"},"values":[["1",null]]}]}`,
	`{"streams":null}`,
	`null`,
	`{"streams":[{"stream":{"a":"b"},"values":[["1","x"]]}]} x`,
	`{"streams":[{"stream":{"a":"b"},"values":[["1","x"]]}],"other":1}`,
	`{"streams":[{"stream":{"a":"b"},"values":[["1","x",{},1]]}]}`,
	`{"streams":[{"stream":{"a":"b"},"values":[["9999999999999999999","x"]]}]}`,
	`{"streams":[{"stream":{"a":"b"},"values":[["\u0031","x"]]}]}`,
	"{\"streams\":[{\"stream\":{\"a\":\"b\"},\"values\":[[\"1\",\"ctl \x01\"]]}]}",
}

// Whenever the fast path takes a body, its answer is encoding/json's.
func TestDecodeJSONFastMatchesReflect(t *testing.T) {
	for _, body := range fastJSONCorpus {
		checkFastJSON(t, []byte(body))
	}
	// The bench's and common clients' shape is taken by the fast path.
	for _, i := range []int{0, 3} {
		if _, ok := decodeJSONFast([]byte(fastJSONCorpus[i])); !ok {
			t.Fatalf("fast path refused %s", fastJSONCorpus[i])
		}
	}
}

func checkFastJSON(t *testing.T, body []byte) {
	t.Helper()
	fast, ok := decodeJSONFast(body)
	if !ok {
		return
	}
	ref, err := decodeJSONReflect(body)
	if err != nil {
		t.Fatalf("%q: fast path took a body encoding/json refuses: %v", body, err)
	}
	if !reflect.DeepEqual(canonical(fast), canonical(ref)) {
		t.Fatalf("%q:\nfast %+v\nref  %+v", body, fast, ref)
	}
}

func FuzzDecodeJSONFast(f *testing.F) {
	for _, b := range fastJSONCorpus {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFastJSON(t, b) })
}

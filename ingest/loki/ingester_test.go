package loki

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

var (
	testNow = time.Unix(1700000000, 0)
	testTS  = testNow.UnixNano()
)

func newTestIngester(r *recorder) *Ingester {
	o := DefaultOptions()
	o.Now = func() time.Time { return testNow }
	return NewIngester(r, o)
}

func TestServiceName(t *testing.T) {
	cases := []struct {
		labels []Pair
		want   string
	}{
		{[]Pair{{"service_name", "given"}, {"app", "a"}}, "given"},
		{[]Pair{{"job", "j"}, {"app", "a"}}, "a"},
		{[]Pair{{"container", "c"}, {"k8s_job_name", "k"}}, "c"},
		{[]Pair{{"k8s_job_name", "k"}, {"env", "prod"}}, "k"},
		{[]Pair{{"env", "prod"}}, "unknown_service"},
		{[]Pair{{"app", ""}, {"service", "s"}}, "s"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			r := &recorder{}
			_, err := newTestIngester(r).Push(context.Background(), &Request{Streams: []Stream{{Labels: c.labels, Entries: []Entry{{Timestamp: testTS, Line: "x"}}}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.streams[0].Labels.Get("service_name"); got != c.want {
				t.Fatalf("service_name %q, want %q", got, c.want)
			}
		})
	}
}

func TestDetectedLevelSources(t *testing.T) {
	cases := []struct {
		name   string
		labels []Pair
		md     []Pair
		line   string
		want   string
	}{
		{"stream label", []Pair{{"app", "a"}, {"level", "WARN"}}, nil, "error in line", "warn"},
		{"metadata", []Pair{{"app", "a"}}, []Pair{{"severity", "critical"}}, "info in line", "critical"},
		{"line", []Pair{{"app", "a"}}, nil, `{"level":"debug"}`, "debug"},
		{"kept", []Pair{{"app", "a"}}, []Pair{{"detected_level", "error"}}, "info", "error"},
		{"unknown", []Pair{{"app", "a"}}, nil, "plain", "unknown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{}
			_, err := newTestIngester(r).Push(context.Background(), &Request{Streams: []Stream{{Labels: c.labels, Entries: []Entry{{Timestamp: testTS, Line: c.line, Metadata: c.md}}}}})
			if err != nil {
				t.Fatal(err)
			}
			md := r.streams[0].Entries[0].Metadata
			if got := md.Get("detected_level"); got != c.want {
				t.Fatalf("detected_level %q, want %q (%s)", got, c.want, md)
			}
		})
	}
}

// Invalid streams and entries are rejected with a reason; the valid rest is
// written.
func TestValidation(t *testing.T) {
	ok := Stream{Labels: []Pair{{"app", "ok"}}, Entries: []Entry{{Timestamp: testNow.UnixNano(), Line: "fine"}}}
	cases := []struct {
		name   string
		s      Stream
		reason string
		why    Reason
	}{
		{"no labels", Stream{Entries: []Entry{{Timestamp: testTS, Line: "x"}}}, "at least one label pair", ReasonMissingLabels},
		{"bad label name", Stream{Labels: []Pair{{"a-b", "x"}}, Entries: []Entry{{Timestamp: testTS, Line: "x"}}}, `invalid label name "a-b"`, ReasonInvalidLabels},
		{"reserved label name", Stream{Labels: []Pair{{"__weft_kind__", "incident"}}, Entries: []Entry{{Timestamp: testTS, Line: "{}"}}}, `label name "__weft_kind__": the prefix __weft_ is reserved`, ReasonInvalidLabels},
		{"bad utf8", Stream{Labels: []Pair{{"a", "\xff"}}, Entries: []Entry{{Timestamp: testTS, Line: "x"}}}, "not valid UTF-8", ReasonInvalidLabels},
		{"duplicate", Stream{Labels: []Pair{{"a", "1"}, {"a", "2"}}, Entries: []Entry{{Timestamp: testTS, Line: "x"}}}, "duplicate label name", ReasonDuplicateLabelNames},
		{"parse", Stream{LabelsErr: errors.New("label set oops"), Entries: []Entry{{Timestamp: testTS, Line: "x"}}}, "error parsing labels", ReasonInvalidLabels},
		{"too many labels", Stream{Labels: manyLabels(16), Entries: []Entry{{Timestamp: testTS, Line: "x"}}}, "16 label names; limit 15", ReasonMaxLabelNames},
		{"line too long", Stream{Labels: []Pair{{"a", "1"}}, Entries: []Entry{{Timestamp: testTS, Line: strings.Repeat("x", 256<<10+1)}}}, "max entry size '262144' bytes exceeded", ReasonLineTooLong},
		{"metadata too large", Stream{Labels: []Pair{{"a", "1"}}, Entries: []Entry{{Timestamp: testTS, Line: "x", Metadata: []Pair{{"k", strings.Repeat("v", 64<<10)}}}}}, "structured metadata size 65537 bytes exceeds the limit of 65536", ReasonMetadataTooLarge},
		{"bad metadata name", Stream{Labels: []Pair{{"a", "1"}}, Entries: []Entry{{Timestamp: testTS, Line: "x", Metadata: []Pair{{"k.k", "v"}}}}}, `invalid structured metadata name "k.k"`, ReasonInvalidMetadata},
		{"too old", Stream{Labels: []Pair{{"a", "1"}}, Entries: []Entry{{Timestamp: testNow.Add(-8 * 24 * time.Hour).UnixNano(), Line: "x"}}}, "timestamp too old: 2023-11-06T22:13:20Z, oldest acceptable timestamp is: 2023-11-07T22:13:20Z", ReasonTooOld},
		{"too new", Stream{Labels: []Pair{{"a", "1"}}, Entries: []Entry{{Timestamp: testNow.Add(11 * time.Minute).UnixNano(), Line: "x"}}}, "timestamp too new", ReasonTooFarInFuture},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{}
			st, err := newTestIngester(r).Push(context.Background(), &Request{Streams: []Stream{c.s, ok}})
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want *ValidationError", err)
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("reason %q does not contain %q", err, c.reason)
			}
			if ve.ByReason[c.why] != len(c.s.Entries) || ve.Rejected != len(c.s.Entries) {
				t.Fatalf("by reason %v, want %d under %s", ve.ByReason, len(c.s.Entries), c.why)
			}
			if st.Entries != 1 || len(r.streams) != 1 || r.streams[0].Labels.Get("app") != "ok" {
				t.Fatalf("valid stream not written: %+v %+v", st, r.streams)
			}
		})
	}
}

// service_name is not counted against the limit, as in Loki: 15 labels of
// the client's own pass.
func TestLabelLimitExcludesServiceName(t *testing.T) {
	r := &recorder{}
	_, err := newTestIngester(r).Push(context.Background(), &Request{Streams: []Stream{{Labels: manyLabels(15), Entries: []Entry{{Timestamp: testTS, Line: "x"}}}}})
	if err != nil || r.streams[0].Labels.Len() != 16 {
		t.Fatalf("err %v, streams %+v", err, r.streams)
	}
}

// Structured metadata values are bounded by the total size, not by the
// label value length (Loki's rule).
func TestLongMetadataValue(t *testing.T) {
	r := &recorder{}
	_, err := newTestIngester(r).Push(context.Background(), &Request{Streams: []Stream{{Labels: []Pair{{"a", "1"}}, Entries: []Entry{{Timestamp: testTS, Line: "x", Metadata: []Pair{{"k", strings.Repeat("v", 10000)}}}}}}})
	if err != nil || len(r.streams[0].Entries[0].Metadata.Get("k")) != 10000 {
		t.Fatalf("err %v", err)
	}
}

func manyLabels(n int) []Pair {
	var ps []Pair
	for i := range n {
		ps = append(ps, Pair{string(rune('a'+i)) + "x", "v"})
	}
	return ps
}

func TestPusherErrorIsReturned(t *testing.T) {
	boom := errors.New("disk full")
	r := &recorder{err: boom}
	_, err := newTestIngester(r).Push(context.Background(), &Request{Streams: []Stream{{Labels: []Pair{{"a", "b"}}, Entries: []Entry{{Timestamp: testTS, Line: "x"}}}}})
	if !errors.Is(err, boom) || errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v", err)
	}
}

func TestLabelsSortedAndMetadataSorted(t *testing.T) {
	r := &recorder{}
	_, err := newTestIngester(r).Push(context.Background(), &Request{Streams: []Stream{{
		Labels:  []Pair{{"z", "1"}, {"a", "2"}},
		Entries: []Entry{{Timestamp: testTS, Line: "x", Metadata: []Pair{{"z", "1"}, {"b", "2"}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.streams[0].Labels, labels.FromStrings("a", "2", "service_name", "unknown_service", "z", "1"); !labels.Equal(got, want) {
		t.Fatalf("labels %s, want %s", got, want)
	}
	if got, want := r.streams[0].Entries[0].Metadata, labels.FromStrings("b", "2", "detected_level", "unknown", "z", "1"); !labels.Equal(got, want) {
		t.Fatalf("metadata %s, want %s", got, want)
	}
}

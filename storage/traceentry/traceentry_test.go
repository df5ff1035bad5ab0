package traceentry

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestIDs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		err  bool
	}{
		{in: "0123456789abcdef0123456789ABCDEF", want: "0123456789abcdef0123456789abcdef"},
		{in: "1", want: "00000000000000000000000000000001"},
		{in: "abc", want: "00000000000000000000000000000abc"},
		{in: "", err: true},
		{in: "xyz", err: true},
		{in: "0123456789abcdef0123456789abcdef0", err: true},
	} {
		id, err := ParseTraceID(tc.in)
		if tc.err {
			if !errors.Is(err, ErrInvalidID) {
				t.Errorf("ParseTraceID(%q) = %v, want ErrInvalidID", tc.in, err)
			}
			continue
		}
		if err != nil || id.String() != tc.want {
			t.Errorf("ParseTraceID(%q) = %s, %v; want %s", tc.in, id, err, tc.want)
		}
	}
	s, err := ParseSpanID("2a")
	if err != nil || s.String() != "000000000000002a" || s.IsZero() {
		t.Errorf("ParseSpanID(2a) = %s, %v", s, err)
	}
	if _, err := ParseSpanID("00000000000000001"); err == nil {
		t.Error("17 hex digits parsed as a span id")
	}
	if !(SpanID{}).IsZero() || !(TraceID{}).IsZero() {
		t.Error("zero IDs are not zero")
	}
}

func TestValues(t *testing.T) {
	arr := ArrayValue(StringValue("a"), IntValue(2))
	m := MapValue(KeyValue{Key: "k", Value: FloatValue(1.5)}, KeyValue{Key: "b", Value: BoolValue(true)})
	for _, tc := range []struct {
		v    Value
		typ  ValueType
		text string
	}{
		{Value{}, ValueEmpty, "<empty>"},
		{StringValue("x\"y"), ValueString, `"x\"y"`},
		{IntValue(-7), ValueInt, "-7"},
		{FloatValue(0.25), ValueFloat, "0.25"},
		{BoolValue(false), ValueBool, "false"},
		{BytesValue([]byte{0xde, 0xad}), ValueBytes, `b"3q0="`},
		{arr, ValueArray, `["a", 2]`},
		{m, ValueMap, `{"k"=1.5, "b"=true}`},
	} {
		if tc.v.Type() != tc.typ || tc.v.String() != tc.text || tc.typ.String() == "" {
			t.Errorf("%v: type %s, text %s; want %s, %s", tc.v, tc.v.Type(), tc.v.String(), tc.typ, tc.text)
		}
		if !tc.v.Equal(tc.v) {
			t.Errorf("%v is not equal to itself", tc.v)
		}
	}
	if IntValue(3).Int() != 3 || FloatValue(2).Float() != 2 || !BoolValue(true).Bool() || StringValue("s").Str() != "s" {
		t.Error("accessors")
	}
	if IntValue(3).Str() != "" || StringValue("3").Int() != 0 || IntValue(1).Bool() || StringValue("x").Array() != nil || IntValue(1).Map() != nil {
		t.Error("accessors of the wrong type must return zero values")
	}
	if b := BytesValue([]byte("ab")).Bytes(); string(b) != "ab" {
		t.Errorf("Bytes() = %q", b)
	}
	if len(arr.Array()) != 2 || m.Map()[1].Key != "b" {
		t.Error("composite accessors")
	}
	for _, pair := range [][2]Value{
		{IntValue(1), FloatValue(1)},
		{StringValue("a"), BytesValue([]byte("a"))},
		{ArrayValue(IntValue(1)), ArrayValue(IntValue(2))},
		{ArrayValue(IntValue(1)), ArrayValue(IntValue(1), IntValue(1))},
		{MapValue(KeyValue{Key: "a", Value: IntValue(1)}), MapValue(KeyValue{Key: "b", Value: IntValue(1)})},
	} {
		if pair[0].Equal(pair[1]) {
			t.Errorf("%v equals %v", pair[0], pair[1])
		}
	}
	nan := FloatValue(math.NaN())
	if !nan.Equal(nan) {
		t.Error("a NaN value must equal itself (bitwise)")
	}
	attrs := Attributes{{Key: "a", Value: IntValue(1)}, {Key: "b", Value: IntValue(2)}, {Key: "a", Value: IntValue(3)}}
	if v, ok := attrs.Get("a"); !ok || v.Int() != 1 {
		t.Errorf("Get(a) = %v, %v", v, ok)
	}
	if _, ok := attrs.Get("c"); ok {
		t.Error("Get(c) found something")
	}
}

func TestTrace(t *testing.T) {
	res := &Resource{Attributes: Attributes{{Key: "service.name", Value: StringValue("api")}}}
	tr := &Trace{Spans: []Span{
		{SpanID: SpanID{7: 2}, ParentSpanID: SpanID{7: 1}, StartUnixNano: 5, EndUnixNano: 50},
		{SpanID: SpanID{7: 3}, StartUnixNano: 20, EndUnixNano: 30, Resource: res, Name: "late root"},
		{SpanID: SpanID{7: 1}, StartUnixNano: 10, EndUnixNano: 40, Resource: res, Name: "root"},
	}}
	if r := tr.Root(); r == nil || r.Name != "root" {
		t.Errorf("Root() = %+v, want the earliest root", r)
	}
	if start, end := tr.TimeRange(); start != 5 || end != 50 {
		t.Errorf("time range of the trace %d..%d", start, end)
	}
	if d := tr.Spans[0].DurationNanos(); d != 45 || tr.Spans[0].IsRoot() {
		t.Errorf("duration %d", d)
	}
	if tr.Root().Resource.ServiceName() != "api" || (*Resource)(nil).ServiceName() != "" {
		t.Error("ServiceName")
	}
	empty := &Trace{}
	if start, end := empty.TimeRange(); empty.Root() != nil || start != 0 || end != 0 {
		t.Error("empty trace")
	}
	req := FetchRequest{Start: 100, End: 200}
	for _, tc := range []struct {
		start, end int64
		want       bool
	}{{0, 99, false}, {0, 100, true}, {150, 160, true}, {199, 300, true}, {200, 300, false}} {
		if got := req.Overlaps(tc.start, tc.end); got != tc.want {
			t.Errorf("[%d, %d] overlaps [100, 200): %v", tc.start, tc.end, got)
		}
	}
	if !(FetchRequest{Start: 100}).Overlaps(1e18, 2e18) {
		t.Error("End 0 must mean no upper bound")
	}
}

func TestEnumNames(t *testing.T) {
	for k, want := range map[SpanKind]string{SpanKindUnspecified: "unspecified", SpanKindInternal: "internal", SpanKindServer: "server",
		SpanKindClient: "client", SpanKindProducer: "producer", SpanKindConsumer: "consumer", 9: "SpanKind(9)"} {
		if k.String() != want {
			t.Errorf("%d: %s", k, k)
		}
	}
	for c, want := range map[StatusCode]string{StatusUnset: "unset", StatusOK: "ok", StatusError: "error", -1: "StatusCode(-1)"} {
		if c.String() != want {
			t.Errorf("%d: %s", c, c)
		}
	}
	if OpRegex.String() != "=~" || Op(0).String() != "Op(0)" || ScopeResource.String() != "resource" ||
		IntrinsicTraceRootService.String() != "rootServiceName" || !IntrinsicTraceDuration.TraceLevel() || IntrinsicDuration.TraceLevel() {
		t.Error("names")
	}
}

func TestMergeSpans(t *testing.T) {
	a := []Span{{SpanID: SpanID{7: 1}, Name: "a"}, {SpanID: SpanID{7: 2}, Name: "b"}}
	b := []Span{{SpanID: SpanID{7: 2}, Name: "b again"}, {SpanID: SpanID{7: 3}, Name: "c"}, {SpanID: SpanID{7: 3}, Name: "c again"}}
	got := MergeSpans(a, b)
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "a,b,c" {
		t.Fatalf("merged %v, want a,b,c", names)
	}
}

// sliceIter yields traces from a slice.
type sliceIter struct {
	ts []*Trace
	i  int
}

func (s *sliceIter) Next() bool   { s.i++; return s.i <= len(s.ts) }
func (s *sliceIter) At() *Trace   { return s.ts[s.i-1] }
func (s *sliceIter) Err() error   { return nil }
func (s *sliceIter) Close() error { return nil }

func TestRecentFirst(t *testing.T) {
	tr := func(id byte, end int64) *Trace {
		return &Trace{TraceID: TraceID{15: id}, Spans: []Span{{StartUnixNano: end - 1, EndUnixNano: end}}}
	}
	m := RecentFirst([]Iterator{
		&sliceIter{ts: []*Trace{tr(1, 90), tr(2, 50), tr(3, 10)}},
		&sliceIter{},
		&sliceIter{ts: []*Trace{tr(4, 70), tr(5, 60), tr(6, 5)}},
	})
	var got []string
	for m.Next() {
		got = append(got, fmt.Sprintf("%d@%d", m.At().TraceID[15], m.Source()))
	}
	if err := errors.Join(m.Err(), m.Close()); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "1@0 4@2 5@2 2@0 3@0 6@2" {
		t.Fatalf("interleaved %v", got)
	}
}

package api

import (
	"bytes"
	"encoding/json"

	"go.opentelemetry.io/collector/pdata/ptrace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/proto/tempopb"
	"github.com/weftdb/weft/query/traceql"
	"github.com/weftdb/weft/storage/traceentry"
)

// traceProto returns the OTLP TracesData bytes of tr, which are also
// tempopb.Trace's (field 1: repeated ResourceSpans).
func traceProto(tr *traceentry.Trace) ([]byte, error) {
	var m ptrace.ProtoMarshaler
	return m.MarshalTraces(otlptraces.ToPtrace(tr.Spans))
}

// traceByIDProto wraps trace bytes as a tempopb.TraceByIDResponse: field 1
// (trace), and status 3 when partial.
func traceByIDProto(traceBytes []byte, partial bool) []byte {
	out := protowire.AppendTag(nil, 1, protowire.BytesType)
	out = protowire.AppendBytes(out, traceBytes)
	if partial {
		out = protowire.AppendTag(out, 3, protowire.VarintType)
		out = protowire.AppendVarint(out, uint64(tempopb.PartialStatus_PARTIAL))
	}
	return out
}

// tempoJSON marshals m as Tempo's jsonpb does (lowerCamel names, 64-bit
// integers as strings, bytes as base64, enums by name), compacted.
func tempoJSON(m proto.Message) ([]byte, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// traceByIDJSON is the JSON answer of /api/v2/traces/<id>.
func traceByIDJSON(traceBytes []byte, partial bool) ([]byte, error) {
	var resp tempopb.TraceByIDResponse
	if err := proto.Unmarshal(traceByIDProto(traceBytes, partial), &resp); err != nil {
		return nil, err
	}
	return tempoJSON(&resp)
}

// traceV1JSON is the JSON answer of /api/traces/<id>: the trace with
// "batches" in place of "resourceSpans", as Tempo's MarshalToJSONV1 writes.
func traceV1JSON(traceBytes []byte) ([]byte, error) {
	var t tempopb.Trace
	if err := proto.Unmarshal(traceBytes, &t); err != nil {
		return nil, err
	}
	b, err := tempoJSON(&t)
	if err != nil {
		return nil, err
	}
	return bytes.Replace(b, []byte(`{"resourceSpans":`), []byte(`{"batches":`), 1), nil
}

// searchJSON encodes a search result as tempopb.SearchResponse.
func searchJSON(r *traceql.SearchResponse, m *tempopb.SearchMetrics) ([]byte, error) {
	resp := &tempopb.SearchResponse{Metrics: m, Traces: make([]*tempopb.TraceSearchMetadata, 0, len(r.Traces))}
	for _, t := range r.Traces {
		md := &tempopb.TraceSearchMetadata{
			TraceID:           t.TraceID,
			RootServiceName:   t.RootServiceName,
			RootTraceName:     t.RootTraceName,
			StartTimeUnixNano: t.StartTimeUnixNano,
			DurationMs:        t.DurationMs,
		}
		if len(t.ServiceStats) > 0 {
			md.ServiceStats = make(map[string]*tempopb.ServiceStats, len(t.ServiceStats))
			for k, v := range t.ServiceStats {
				md.ServiceStats[k] = &tempopb.ServiceStats{SpanCount: v.SpanCount, ErrorCount: v.ErrorCount}
			}
		}
		for _, ss := range t.SpanSets {
			out := &tempopb.SpanSet{Matched: uint32(ss.Matched), Attributes: kvs(ss.Attributes)}
			for _, sp := range ss.Spans {
				out.Spans = append(out.Spans, &tempopb.Span{
					SpanID: sp.SpanID, Name: sp.Name, StartTimeUnixNano: sp.StartTimeUnixNano,
					DurationNanos: sp.DurationNanos, Attributes: kvs(sp.Attributes),
				})
			}
			md.SpanSets = append(md.SpanSets, out)
		}
		if len(md.SpanSets) > 0 {
			md.SpanSet = md.SpanSets[0] // deprecated field: Tempo sets the first spanset
		}
		resp.Traces = append(resp.Traces, md)
	}
	return tempoJSON(resp)
}

// kvs converts attributes to OTLP KeyValues (for search results).
func kvs(as []traceql.Attribute) []*commonKV {
	if len(as) == 0 {
		return nil
	}
	out := make([]*commonKV, len(as))
	for i, a := range as {
		out[i] = &commonKV{Key: a.Key, Value: anyValue(a.Value)}
	}
	return out
}

// commonKV is OTLP's KeyValue, as search results carry attributes.
type commonKV = commonpb.KeyValue

func anyValue(v traceentry.Value) *commonpb.AnyValue {
	switch v.Type() {
	case traceentry.ValueString:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.Str()}}
	case traceentry.ValueInt:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.Int()}}
	case traceentry.ValueFloat:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.Float()}}
	case traceentry.ValueBool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.Bool()}}
	case traceentry.ValueBytes:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.Bytes()}}
	case traceentry.ValueArray:
		arr := &commonpb.ArrayValue{}
		for _, e := range v.Array() {
			arr.Values = append(arr.Values, anyValue(e))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
	case traceentry.ValueMap:
		kv := &commonpb.KeyValueList{}
		for _, e := range v.Map() {
			kv.Values = append(kv.Values, &commonpb.KeyValue{Key: e.Key, Value: anyValue(e.Value)})
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: kv}}
	}
	return &commonpb.AnyValue{}
}

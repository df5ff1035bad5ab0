package tracestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/traceentry"
)

// The span encoding shared by recent records and block pages
// (docs/format/traces.md). A set of trace parts is written as two sections:
//
// the light section: what a search reads to decide whether a trace part can
// match (resources with their stream IDs, trace IDs, per span the IDs, start,
// duration, name, kind, status, resource and the indexed attributes);
//
// the heavy section: the rest of every span (instrumentation scope, trace
// state, flags, status message, the other attributes, events, links,
// dropped counts).
//
// Each section starts with its string dictionary (every string is written
// once and referenced by number), so a decoded page shares one allocation
// for its strings. Columns are stored one after the other, which groups
// similar bytes for zstd.

// ErrCorrupt is wrapped by every error about undecodable stored data.
var ErrCorrupt = errors.New("corrupt trace store data")

// maxValueDepth bounds the nesting of decoded attribute values (arrays and
// maps); ingest flattens deeper values before they reach the store.
const maxValueDepth = 64

// part is the spans of one trace that are stored together (one push, or
// one trace of a page), each with the stream ID of its resource.
type part struct {
	id      traceentry.TraceID
	spans   []traceentry.Span
	streams []index.ID // per span
}

// timeRange returns the earliest start and the latest end of the part.
func (p *part) timeRange() (start, end int64) {
	for i := range p.spans {
		s := &p.spans[i]
		if i == 0 || s.StartUnixNano < start {
			start = s.StartUnixNano
		}
		if i == 0 || s.EndUnixNano > end {
			end = s.EndUnixNano
		}
	}
	return start, end
}

// strWriter writes strings as references into a dictionary.
type strWriter struct {
	body []byte
	dict map[string]uint32
	strs []string
}

func (w *strWriter) reset() {
	w.body = w.body[:0]
	clear(w.dict)
	if w.dict == nil {
		w.dict = map[string]uint32{}
	}
	w.strs = w.strs[:0]
}

func (w *strWriter) str(s string) {
	i, ok := w.dict[s]
	if !ok {
		i = uint32(len(w.strs))
		w.dict[s] = i
		w.strs = append(w.strs, s)
	}
	w.uvarint(uint64(i))
}

func (w *strWriter) uvarint(v uint64) { w.body = binary.AppendUvarint(w.body, v) }
func (w *strWriter) varint(v int64)   { w.body = binary.AppendVarint(w.body, v) }

// finish appends the dictionary and then the body to dst.
func (w *strWriter) finish(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(w.strs)))
	for _, s := range w.strs {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
	}
	for _, s := range w.strs {
		dst = append(dst, s...)
	}
	return append(dst, w.body...)
}

func (w *strWriter) attrs(as traceentry.Attributes) {
	w.uvarint(uint64(len(as)))
	for _, kv := range as {
		w.str(kv.Key)
		w.value(kv.Value)
	}
}

func (w *strWriter) value(v traceentry.Value) {
	w.body = append(w.body, byte(v.Type()))
	switch v.Type() {
	case traceentry.ValueString:
		w.str(v.Str())
	case traceentry.ValueInt:
		w.varint(v.Int())
	case traceentry.ValueFloat:
		w.body = binary.LittleEndian.AppendUint64(w.body, math.Float64bits(v.Float()))
	case traceentry.ValueBool:
		b := byte(0)
		if v.Bool() {
			b = 1
		}
		w.body = append(w.body, b)
	case traceentry.ValueBytes:
		s := v.Str()
		w.uvarint(uint64(len(s)))
		w.body = append(w.body, s...)
	case traceentry.ValueArray:
		arr := v.Array()
		w.uvarint(uint64(len(arr)))
		for _, e := range arr {
			w.value(e)
		}
	case traceentry.ValueMap:
		w.attrs(v.Map())
	}
}

// encoder encodes trace parts; it keeps its buffers between uses. Not safe
// for concurrent use.
type encoder struct {
	light, heavy strWriter
	resIdx       map[string]uint32 // encoded resource → index
	scopeIdx     map[string]uint32
	tmp          strWriter
	indexed      map[string]struct{} // span attributes of the light section
}

func newEncoder(indexed map[string]struct{}) *encoder {
	return &encoder{indexed: indexed, resIdx: map[string]uint32{}, scopeIdx: map[string]uint32{}}
}

// encode appends the two sections of parts to lightDst and heavyDst.
func (e *encoder) encode(lightDst, heavyDst []byte, parts []part) ([]byte, []byte) {
	e.light.reset()
	e.heavy.reset()
	clear(e.resIdx)
	clear(e.scopeIdx)
	// Resources and scopes, deduplicated by content, in order of first use.
	resOf := map[*traceentry.Resource]uint32{}
	scopeOf := map[*traceentry.InstrumentationScope]uint32{}
	type res struct {
		r      *traceentry.Resource
		stream index.ID
	}
	var resources []res
	var scopes []*traceentry.InstrumentationScope
	for pi := range parts {
		p := &parts[pi]
		for i := range p.spans {
			s := &p.spans[i]
			if _, ok := resOf[s.Resource]; !ok {
				key := e.resourceKey(s.Resource, p.streams[i])
				idx, ok := e.resIdx[key]
				if !ok {
					idx = uint32(len(resources))
					e.resIdx[key] = idx
					resources = append(resources, res{s.Resource, p.streams[i]})
				}
				resOf[s.Resource] = idx
			}
			if _, ok := scopeOf[s.Scope]; !ok && s.Scope != nil {
				key := e.scopeKey(s.Scope)
				idx, ok := e.scopeIdx[key]
				if !ok {
					idx = uint32(len(scopes))
					e.scopeIdx[key] = idx
					scopes = append(scopes, s.Scope)
				}
				scopeOf[s.Scope] = idx
			}
		}
	}
	lw, hw := &e.light, &e.heavy
	lw.uvarint(uint64(len(resources)))
	for _, r := range resources {
		lw.uvarint(uint64(r.stream))
		if r.r != nil {
			lw.attrs(r.r.Attributes)
			lw.uvarint(uint64(r.r.DroppedAttributesCount))
			lw.str(r.r.SchemaURL)
		} else {
			lw.attrs(nil)
			lw.uvarint(0)
			lw.str("")
		}
	}
	hw.uvarint(uint64(len(scopes)))
	for _, sc := range scopes {
		hw.str(sc.Name)
		hw.str(sc.Version)
		hw.attrs(sc.Attributes)
		hw.uvarint(uint64(sc.DroppedAttributesCount))
		hw.str(sc.SchemaURL)
	}

	// Light columns.
	lw.uvarint(uint64(len(parts)))
	for pi := range parts {
		lw.body = append(lw.body, parts[pi].id[:]...)
		lw.uvarint(uint64(len(parts[pi].spans)))
	}
	each := func(f func(s *traceentry.Span)) {
		for pi := range parts {
			for i := range parts[pi].spans {
				f(&parts[pi].spans[i])
			}
		}
	}
	each(func(s *traceentry.Span) { lw.body = append(lw.body, s.SpanID[:]...) })
	each(func(s *traceentry.Span) { lw.body = append(lw.body, s.ParentSpanID[:]...) })
	prev := int64(0)
	each(func(s *traceentry.Span) { lw.varint(s.StartUnixNano - prev); prev = s.StartUnixNano })
	each(func(s *traceentry.Span) { lw.varint(s.EndUnixNano - s.StartUnixNano) })
	each(func(s *traceentry.Span) { lw.str(s.Name) })
	each(func(s *traceentry.Span) { lw.body = append(lw.body, byte(s.Kind), byte(s.StatusCode)) })
	each(func(s *traceentry.Span) { lw.uvarint(uint64(resOf[s.Resource])) })
	each(func(s *traceentry.Span) {
		k := 0
		for _, kv := range s.Attributes {
			if _, ok := e.indexed[kv.Key]; ok {
				k++
			}
		}
		lw.uvarint(uint64(k))
		for _, kv := range s.Attributes {
			if _, ok := e.indexed[kv.Key]; ok {
				lw.str(kv.Key)
				lw.value(kv.Value)
			}
		}
	})

	// Heavy columns, span by span.
	each(func(s *traceentry.Span) {
		if s.Scope == nil {
			hw.uvarint(0)
		} else {
			hw.uvarint(uint64(scopeOf[s.Scope]) + 1)
		}
		hw.str(s.TraceState)
		hw.uvarint(uint64(s.Flags))
		hw.str(s.StatusMessage)
		k := 0
		for _, kv := range s.Attributes {
			if _, ok := e.indexed[kv.Key]; !ok {
				k++
			}
		}
		hw.uvarint(uint64(k))
		for _, kv := range s.Attributes {
			if _, ok := e.indexed[kv.Key]; !ok {
				hw.str(kv.Key)
				hw.value(kv.Value)
			}
		}
		hw.uvarint(uint64(s.DroppedAttributesCount))
		hw.uvarint(uint64(len(s.Events)))
		for _, ev := range s.Events {
			hw.varint(ev.TimeUnixNano - s.StartUnixNano)
			hw.str(ev.Name)
			hw.attrs(ev.Attributes)
			hw.uvarint(uint64(ev.DroppedAttributesCount))
		}
		hw.uvarint(uint64(s.DroppedEventsCount))
		hw.uvarint(uint64(len(s.Links)))
		for _, l := range s.Links {
			hw.body = append(hw.body, l.TraceID[:]...)
			hw.body = append(hw.body, l.SpanID[:]...)
			hw.str(l.TraceState)
			hw.attrs(l.Attributes)
			hw.uvarint(uint64(l.DroppedAttributesCount))
			hw.uvarint(uint64(l.Flags))
		}
		hw.uvarint(uint64(s.DroppedLinksCount))
	})
	return lw.finish(lightDst), hw.finish(heavyDst)
}

// resourceKey is the identity of a resource in a page's table.
func (e *encoder) resourceKey(r *traceentry.Resource, stream index.ID) string {
	e.tmp.reset()
	e.tmp.uvarint(uint64(stream))
	if r != nil {
		e.tmp.attrs(r.Attributes)
		e.tmp.uvarint(uint64(r.DroppedAttributesCount))
		e.tmp.str(r.SchemaURL)
	}
	return string(e.tmp.finish(nil))
}

func (e *encoder) scopeKey(s *traceentry.InstrumentationScope) string {
	e.tmp.reset()
	e.tmp.str(s.Name)
	e.tmp.str(s.Version)
	e.tmp.attrs(s.Attributes)
	e.tmp.uvarint(uint64(s.DroppedAttributesCount))
	e.tmp.str(s.SchemaURL)
	return string(e.tmp.finish(nil))
}

// strReader reads what a strWriter wrote. Errors are sticky: after the
// first one every read returns zero values and err is set.
type strReader struct {
	b    []byte
	strs []string
	err  error
}

func (r *strReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %w", what, ErrCorrupt)
	}
	r.b = nil
}

// open reads the dictionary at the start of b.
func (r *strReader) open(b []byte) {
	r.b, r.err = b, nil
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("dictionary size")
		return
	}
	lens := make([]uint64, n)
	total := uint64(0)
	for i := range lens {
		lens[i] = r.uvarint()
		total += lens[i]
		if lens[i] > uint64(len(r.b)) || total > uint64(len(r.b)) {
			r.fail("dictionary string")
			return
		}
	}
	if r.err != nil {
		return
	}
	all := string(r.b[:total]) // one allocation for every string
	r.b = r.b[total:]
	r.strs = make([]string, n)
	off := uint64(0)
	for i, l := range lens {
		r.strs[i] = all[off : off+l]
		off += l
	}
}

func (r *strReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *strReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a count of items each taking at least min bytes.
func (r *strReader) count(min int) int {
	n := r.uvarint()
	if n > uint64(len(r.b)/max(min, 1)) {
		r.fail("count")
		return 0
	}
	return int(n)
}

func (r *strReader) bytes(n int) []byte {
	if n > len(r.b) {
		r.fail("bytes")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *strReader) byte1() byte {
	if len(r.b) == 0 {
		r.fail("byte")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *strReader) str() string {
	i := r.uvarint()
	if i >= uint64(len(r.strs)) {
		r.fail("string reference")
		return ""
	}
	return r.strs[i]
}

func (r *strReader) attrs(depth int) traceentry.Attributes {
	n := r.count(2)
	if n == 0 {
		return nil
	}
	out := make(traceentry.Attributes, n)
	for i := range out {
		out[i].Key = r.str()
		out[i].Value = r.value(depth)
	}
	if r.err != nil {
		return nil
	}
	return out
}

func (r *strReader) value(depth int) traceentry.Value {
	if depth > maxValueDepth {
		r.fail("value nesting")
		return traceentry.Value{}
	}
	switch traceentry.ValueType(r.byte1()) {
	case traceentry.ValueEmpty:
		return traceentry.Value{}
	case traceentry.ValueString:
		return traceentry.StringValue(r.str())
	case traceentry.ValueInt:
		return traceentry.IntValue(r.varint())
	case traceentry.ValueFloat:
		b := r.bytes(8)
		if b == nil {
			return traceentry.Value{}
		}
		return traceentry.FloatValue(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case traceentry.ValueBool:
		return traceentry.BoolValue(r.byte1() == 1)
	case traceentry.ValueBytes:
		return traceentry.BytesValue(r.bytes(r.count(1)))
	case traceentry.ValueArray:
		n := r.count(1)
		arr := make([]traceentry.Value, n)
		for i := range arr {
			arr[i] = r.value(depth + 1)
		}
		return traceentry.ArrayValue(arr...)
	case traceentry.ValueMap:
		return traceentry.MapValue(r.attrs(depth + 1)...)
	}
	r.fail("value type")
	return traceentry.Value{}
}

// lightPage is a decoded light section: enough of every span to evaluate
// conditions on the indexed fields. Spans' Resource pointers point into
// resources; their heavy fields are empty until decodeHeavy fills them.
type lightPage struct {
	resources []traceentry.Resource
	streams   []index.ID // per resource
	traces    []lightTrace
	spans     []traceentry.Span
	spanRes   []uint32 // per span: its resource
}

// lightTrace is one trace part of a page: its ID and spans[first:first+n].
type lightTrace struct {
	id         traceentry.TraceID
	first, n   int
	start, end int64
}

// decodeLight decodes a light section. It never panics on bad input.
func decodeLight(b []byte) (*lightPage, error) {
	var r strReader
	r.open(b)
	pg := &lightPage{}
	nRes := r.count(4)
	pg.resources = make([]traceentry.Resource, nRes)
	pg.streams = make([]index.ID, nRes)
	for i := range pg.resources {
		pg.streams[i] = index.ID(r.uvarint())
		pg.resources[i].Attributes = r.attrs(0)
		pg.resources[i].DroppedAttributesCount = uint32(r.uvarint())
		pg.resources[i].SchemaURL = r.str()
	}
	nTraces := r.count(17)
	pg.traces = make([]lightTrace, nTraces)
	total := 0
	for i := range pg.traces {
		copy(pg.traces[i].id[:], r.bytes(16))
		n := r.count(0)
		if n > len(b) || total+n > len(b) {
			r.fail("span count")
			break
		}
		pg.traces[i].first, pg.traces[i].n = total, n
		total += n
	}
	if r.err != nil {
		return nil, r.err
	}
	if total > len(r.b)/16 {
		return nil, fmt.Errorf("span count %d: %w", total, ErrCorrupt)
	}
	pg.spans = make([]traceentry.Span, total)
	pg.spanRes = make([]uint32, total)
	for i := range pg.spans {
		copy(pg.spans[i].SpanID[:], r.bytes(8))
	}
	for i := range pg.spans {
		copy(pg.spans[i].ParentSpanID[:], r.bytes(8))
	}
	prev := int64(0)
	for i := range pg.spans {
		prev += r.varint()
		pg.spans[i].StartUnixNano = prev
	}
	for i := range pg.spans {
		pg.spans[i].EndUnixNano = pg.spans[i].StartUnixNano + r.varint()
	}
	for i := range pg.spans {
		pg.spans[i].Name = r.str()
	}
	for i := range pg.spans {
		pg.spans[i].Kind = traceentry.SpanKind(r.byte1())
		pg.spans[i].StatusCode = traceentry.StatusCode(r.byte1())
	}
	for i := range pg.spans {
		ri := r.uvarint()
		if ri >= uint64(nRes) {
			r.fail("resource reference")
			break
		}
		pg.spanRes[i] = uint32(ri)
		pg.spans[i].Resource = &pg.resources[ri]
	}
	for i := range pg.spans {
		pg.spans[i].Attributes = r.attrs(0)
	}
	if r.err != nil {
		return nil, r.err
	}
	for ti := range pg.traces {
		t := &pg.traces[ti]
		for i := t.first; i < t.first+t.n; i++ {
			s := &pg.spans[i]
			s.TraceID = t.id
			if i == t.first || s.StartUnixNano < t.start {
				t.start = s.StartUnixNano
			}
			if i == t.first || s.EndUnixNano > t.end {
				t.end = s.EndUnixNano
			}
		}
	}
	return pg, nil
}

// decodeHeavy completes pg's spans from the heavy section: each span's
// attributes become the heavy ones followed by the indexed ones.
func decodeHeavy(pg *lightPage, b []byte) error {
	var r strReader
	r.open(b)
	nScopes := r.count(5)
	scopes := make([]traceentry.InstrumentationScope, nScopes)
	for i := range scopes {
		scopes[i].Name = r.str()
		scopes[i].Version = r.str()
		scopes[i].Attributes = r.attrs(0)
		scopes[i].DroppedAttributesCount = uint32(r.uvarint())
		scopes[i].SchemaURL = r.str()
	}
	for i := range pg.spans {
		s := &pg.spans[i]
		si := r.uvarint()
		if si > uint64(nScopes) {
			r.fail("scope reference")
			break
		}
		if si > 0 {
			s.Scope = &scopes[si-1]
		}
		s.TraceState = r.str()
		s.Flags = uint32(r.uvarint())
		s.StatusMessage = r.str()
		heavy := r.attrs(0)
		if len(s.Attributes) > 0 {
			heavy = append(heavy, s.Attributes...)
		}
		s.Attributes = heavy
		s.DroppedAttributesCount = uint32(r.uvarint())
		if n := r.count(3); n > 0 {
			s.Events = make([]traceentry.Event, n)
			for j := range s.Events {
				ev := &s.Events[j]
				ev.TimeUnixNano = s.StartUnixNano + r.varint()
				ev.Name = r.str()
				ev.Attributes = r.attrs(0)
				ev.DroppedAttributesCount = uint32(r.uvarint())
			}
		}
		s.DroppedEventsCount = uint32(r.uvarint())
		if n := r.count(28); n > 0 {
			s.Links = make([]traceentry.Link, n)
			for j := range s.Links {
				l := &s.Links[j]
				copy(l.TraceID[:], r.bytes(16))
				copy(l.SpanID[:], r.bytes(8))
				l.TraceState = r.str()
				l.Attributes = r.attrs(0)
				l.DroppedAttributesCount = uint32(r.uvarint())
				l.Flags = uint32(r.uvarint())
			}
		}
		s.DroppedLinksCount = uint32(r.uvarint())
		if r.err != nil {
			break
		}
	}
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%d trailing bytes: %w", len(r.b), ErrCorrupt)
	}
	return nil
}

// appendRecord encodes parts as a recent record: the light section's
// length, the light section, the heavy section.
func (e *encoder) appendRecord(dst []byte, parts []part) []byte {
	light, heavy := e.encode(nil, nil, parts)
	dst = binary.AppendUvarint(dst, uint64(len(light)))
	dst = append(dst, light...)
	return append(dst, heavy...)
}

// decodeRecord decodes a recent record into trace parts.
func decodeRecord(b []byte) ([]part, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("record light length: %w", ErrCorrupt)
	}
	pg, err := decodeLight(b[k : k+int(n)])
	if err != nil {
		return nil, err
	}
	if err := decodeHeavy(pg, b[k+int(n):]); err != nil {
		return nil, err
	}
	return pg.parts(), nil
}

// parts returns the page's trace parts (sharing its spans).
func (pg *lightPage) parts() []part {
	out := make([]part, len(pg.traces))
	for i, t := range pg.traces {
		spans := pg.spans[t.first : t.first+t.n : t.first+t.n]
		streams := make([]index.ID, t.n)
		for j := range streams {
			streams[j] = pg.streams[pg.spanRes[t.first+j]]
		}
		out[i] = part{id: t.id, spans: spans, streams: streams}
	}
	return out
}

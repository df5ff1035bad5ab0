package traceql

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/storage/traceentry"
)

// The conformance suite: testdata/*.test, in the style of Prometheus'
// promqltest files. Commands (continuation lines are indented):
//
//	load                                  # adds traces; `clear` drops them
//	  resource <ref> {k=v, ...}
//	  scope <ref> name="lib" version="1.0" {k=v, ...}
//	  trace <id> [at=<dur>]               # span times are relative to at
//	    span <id> [parent=<id>] [name="op"] [kind=server] [status=error] [msg="..."]
//	              [start=<dur>] [dur=<dur>] [res=<ref>] [scope=<ref>] [{k=v, ...}]
//	      event "<name>" [t=<dur after span start>] [{k=v, ...}]
//	      link trace=<id> span=<id> [{k=v, ...}]
//	eval [from=<dur>] [to=<dur>] [limit=N] [spss=N] [ordered] <query>
//	  <trace id>: <spanset> [| <spanset> ...]   # one line per matching trace
//	  none                                      # no trace matches
//	eval_fail <query>
//	  msg <substring of the error>
//	  pos <line>:<col>
//	  unsupported                               # the error matches ErrUnsupported
//
// A spanset lists span IDs (the spans search returns for it, so at most spss
// of them), optionally `matched=N` and `@{k=v, ...}` for its by() and
// aggregate values; a span ID followed by {k=v, ...} also checks the span's
// result attributes. IDs are short hex, padded with zeros (trace 1 is
// 00000000000000000000000000000001). Span defaults: name "op", kind
// unspecified, status unset, start 0, dur 1ms. Values: "strings", ints,
// floats, true, false, [arrays], {maps}, 0x<hex> bytes, empty.
//
// Every eval runs through Search over a plain source and over a source that
// prunes traces by the pushdown hints (results must be equal), and, without
// limit and spss, is checked against EvalTrace on every loaded trace.
// Expectations are written from the TraceQL documentation, never from the
// engine's output.

func TestConformance(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.test files")
	}
	total := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			total += runTestFile(t, f)
		})
	}
	t.Logf("%d conformance cases; the hint-pruning source skipped %d of the %d traces it was offered", total, prunedTraces, offeredTraces)
	if prunedTraces == 0 {
		t.Error("the pushdown hints never pruned a trace: the soundness check proves nothing")
	}
	if total < 300 {
		t.Errorf("only %d conformance cases", total)
	}
}

type loader struct {
	src       *memSource
	resources map[string]*traceentry.Resource
	scopes    map[string]*traceentry.InstrumentationScope
	trace     *traceentry.Trace
	at        int64
}

func newLoader() *loader {
	return &loader{src: &memSource{}, resources: map[string]*traceentry.Resource{}, scopes: map[string]*traceentry.InstrumentationScope{}}
}

type evalCmd struct {
	line       int
	fail       bool
	query      string
	from, to   int64
	limit      int
	spss       int
	ordered    bool
	expect     []expTrace
	none       bool
	failMsg    []string
	failPos    string
	failUnsupp bool
}

type expTrace struct {
	id   string
	sets []expSet
}

type expSet struct {
	spans   []expSpan
	matched int // -1: not checked
	attrs   []traceentry.KeyValue
	hasAttr bool
}

type expSpan struct {
	id      string
	attrs   []traceentry.KeyValue
	hasAttr bool
}

func runTestFile(t *testing.T, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	ld := newLoader()
	cases := 0
	indented := func(i int) bool {
		return i < len(lines) && (strings.HasPrefix(lines[i], " ") || strings.HasPrefix(lines[i], "\t"))
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		switch {
		case l == "clear":
			ld = newLoader()
		case l == "load":
			for indented(i + 1) {
				i++
				if err := ld.line(strings.TrimSpace(lines[i])); err != nil {
					t.Fatalf("%s:%d: %v", path, i+1, err)
				}
			}
		case strings.HasPrefix(l, "eval"):
			cmd, err := parseEvalLine(l)
			if err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
			cmd.line = i + 1
			for indented(i + 1) {
				i++
				el := strings.TrimSpace(lines[i])
				if el == "" || strings.HasPrefix(el, "#") {
					continue
				}
				if err := cmd.addExpectation(el); err != nil {
					t.Fatalf("%s:%d: %v", path, i+1, err)
				}
			}
			if !cmd.fail && !cmd.none && len(cmd.expect) == 0 {
				t.Fatalf("%s:%d: eval without expectations (write `none` for no match)", path, cmd.line)
			}
			if cmd.fail && len(cmd.failMsg) == 0 && cmd.failPos == "" {
				t.Fatalf("%s:%d: eval_fail without msg or pos", path, cmd.line)
			}
			cases++
			src := ld.src
			t.Run(fmt.Sprintf("line%d", cmd.line), func(t *testing.T) { runEval(t, src, cmd) })
		default:
			t.Fatalf("%s:%d: unknown command %q", path, i+1, l)
		}
	}
	return cases
}

func parseEvalLine(l string) (*evalCmd, error) {
	cmd := &evalCmd{limit: 1 << 20, spss: 1 << 20}
	rest, ok := strings.CutPrefix(l, "eval_fail ")
	if ok {
		cmd.fail = true
		cmd.query = rest
		return cmd, nil
	}
	rest, ok = strings.CutPrefix(l, "eval ")
	if !ok {
		return nil, fmt.Errorf("bad eval line %q", l)
	}
	for {
		word, after, _ := strings.Cut(rest, " ")
		k, v, isOpt := strings.Cut(word, "=")
		switch {
		case word == "ordered":
			cmd.ordered = true
		case isOpt && (k == "from" || k == "to"):
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, err
			}
			if k == "from" {
				cmd.from = int64(d)
			} else {
				cmd.to = int64(d)
			}
		case isOpt && (k == "limit" || k == "spss"):
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, err
			}
			if k == "limit" {
				cmd.limit = n
			} else {
				cmd.spss = n
			}
		default:
			cmd.query = rest
			return cmd, nil
		}
		rest = after
	}
}

func (c *evalCmd) addExpectation(l string) error {
	if c.fail {
		switch {
		case strings.HasPrefix(l, "msg "):
			c.failMsg = append(c.failMsg, strings.TrimPrefix(l, "msg "))
		case strings.HasPrefix(l, "pos "):
			c.failPos = strings.TrimPrefix(l, "pos ")
		case l == "unsupported":
			c.failUnsupp = true
		default:
			return fmt.Errorf("unknown eval_fail expectation %q", l)
		}
		return nil
	}
	if l == "none" {
		c.none = true
		return nil
	}
	id, rest, ok := strings.Cut(l, ":")
	if !ok {
		return fmt.Errorf("expectation %q: want <trace id>: <spans>", l)
	}
	tid, err := traceentry.ParseTraceID(strings.TrimSpace(id))
	if err != nil {
		return fmt.Errorf("trace id %q: %w", id, err)
	}
	et := expTrace{id: TraceIDString(tid)}
	for _, part := range splitTop(rest, '|') {
		set, err := parseExpSet(part)
		if err != nil {
			return fmt.Errorf("%q: %w", part, err)
		}
		et.sets = append(et.sets, set)
	}
	c.expect = append(c.expect, et)
	return nil
}

func parseExpSet(s string) (expSet, error) {
	set := expSet{matched: -1}
	sc := &scan{s: s}
	for {
		sc.skipSpace()
		if sc.done() {
			break
		}
		switch {
		case sc.hasPrefix("matched="):
			sc.i += len("matched=")
			n, err := strconv.Atoi(sc.word())
			if err != nil {
				return set, err
			}
			set.matched = n
		case sc.hasPrefix("@{"):
			sc.i++
			kvs, err := sc.attrs()
			if err != nil {
				return set, err
			}
			set.attrs, set.hasAttr = kvs, true
		default:
			w := sc.wordUntil("{ ")
			sid, err := traceentry.ParseSpanID(w)
			if err != nil {
				return set, fmt.Errorf("span id %q: %w", w, err)
			}
			sp := expSpan{id: sid.String()}
			if sc.hasPrefix("{") {
				kvs, err := sc.attrs()
				if err != nil {
					return set, err
				}
				sp.attrs, sp.hasAttr = kvs, true
			}
			set.spans = append(set.spans, sp)
		}
	}
	return set, nil
}

// splitTop splits s at sep outside quotes, braces and brackets.
func splitTop(s string, sep byte) []string {
	var parts []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// ---- loading ----

// loadFile loads every load block of a test file (clear starts over).
func (ld *loader) loadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	inLoad := false
	for _, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case t == "load":
			inLoad = true
		case strings.HasPrefix(l, " "):
			if inLoad {
				if err := ld.line(t); err != nil {
					return err
				}
			}
		default:
			inLoad = false
		}
	}
	return nil
}

func (ld *loader) line(l string) error {
	sc := &scan{s: l}
	switch kw := sc.word(); kw {
	case "resource":
		name := sc.word()
		r := &traceentry.Resource{}
		sc.skipSpace()
		if sc.hasPrefix("{") {
			kvs, err := sc.attrs()
			if err != nil {
				return err
			}
			r.Attributes = kvs
		}
		ld.resources[name] = r
	case "scope":
		ref := sc.word()
		s := &traceentry.InstrumentationScope{}
		opts, kvs, err := sc.options()
		if err != nil {
			return err
		}
		for k, v := range opts {
			switch k {
			case "name":
				s.Name = v
			case "version":
				s.Version = v
			default:
				return fmt.Errorf("unknown scope option %q", k)
			}
		}
		s.Attributes = kvs
		ld.scopes[ref] = s
	case "trace":
		id, err := traceentry.ParseTraceID(sc.word())
		if err != nil {
			return err
		}
		opts, _, err := sc.options()
		if err != nil {
			return err
		}
		ld.at = 0
		if v, ok := opts["at"]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return err
			}
			ld.at = int64(d)
		}
		ld.trace = &traceentry.Trace{TraceID: id}
		ld.src.traces = append(ld.src.traces, ld.trace)
	case "span":
		if ld.trace == nil {
			return errors.New("span before trace")
		}
		return ld.span(sc)
	case "event", "link":
		if ld.trace == nil || len(ld.trace.Spans) == 0 {
			return errors.New(kw + " before span")
		}
		s := &ld.trace.Spans[len(ld.trace.Spans)-1]
		if kw == "event" {
			sc.skipSpace()
			name, err := sc.quoted()
			if err != nil {
				return err
			}
			opts, kvs, err := sc.options()
			if err != nil {
				return err
			}
			ev := traceentry.Event{Name: name, TimeUnixNano: s.StartUnixNano, Attributes: kvs}
			if v, ok := opts["t"]; ok {
				d, err := time.ParseDuration(v)
				if err != nil {
					return err
				}
				ev.TimeUnixNano += int64(d)
			}
			s.Events = append(s.Events, ev)
			return nil
		}
		opts, kvs, err := sc.options()
		if err != nil {
			return err
		}
		lk := traceentry.Link{Attributes: kvs}
		if lk.TraceID, err = traceentry.ParseTraceID(opts["trace"]); err != nil {
			return err
		}
		if lk.SpanID, err = traceentry.ParseSpanID(opts["span"]); err != nil {
			return err
		}
		s.Links = append(s.Links, lk)
	default:
		return fmt.Errorf("unknown load line %q", l)
	}
	return nil
}

var (
	kinds    = map[string]traceentry.SpanKind{}
	statuses = map[string]traceentry.StatusCode{}
)

func init() {
	for k := traceentry.SpanKindUnspecified; k <= traceentry.SpanKindConsumer; k++ {
		kinds[k.String()] = k
	}
	for s := traceentry.StatusUnset; s <= traceentry.StatusError; s++ {
		statuses[s.String()] = s
	}
}

func (ld *loader) span(sc *scan) error {
	id, err := traceentry.ParseSpanID(sc.word())
	if err != nil {
		return err
	}
	s := traceentry.Span{TraceID: ld.trace.TraceID, SpanID: id, Name: "op"}
	opts, kvs, err := sc.options()
	if err != nil {
		return err
	}
	s.Attributes = kvs
	start, dur := int64(0), int64(time.Millisecond)
	for k, v := range opts {
		switch k {
		case "parent":
			if s.ParentSpanID, err = traceentry.ParseSpanID(v); err != nil {
				return err
			}
		case "name":
			s.Name = v
		case "kind":
			k, ok := kinds[v]
			if !ok {
				return fmt.Errorf("unknown kind %q", v)
			}
			s.Kind = k
		case "status":
			c, ok := statuses[v]
			if !ok {
				return fmt.Errorf("unknown status %q", v)
			}
			s.StatusCode = c
		case "msg":
			s.StatusMessage = v
		case "start", "dur":
			d, err := time.ParseDuration(v)
			if err != nil {
				return err
			}
			if k == "start" {
				start = int64(d)
			} else {
				dur = int64(d)
			}
		case "res":
			r, ok := ld.resources[v]
			if !ok {
				return fmt.Errorf("unknown resource %q", v)
			}
			s.Resource = r
		case "scope":
			sc, ok := ld.scopes[v]
			if !ok {
				return fmt.Errorf("unknown scope %q", v)
			}
			s.Scope = sc
		default:
			return fmt.Errorf("unknown span option %q", k)
		}
	}
	s.StartUnixNano = ld.at + start
	s.EndUnixNano = s.StartUnixNano + dur
	ld.trace.Spans = append(ld.trace.Spans, s)
	return nil
}

// ---- a small scanner for load and expectation lines ----

type scan struct {
	s string
	i int
}

func (sc *scan) done() bool              { return sc.i >= len(sc.s) }
func (sc *scan) hasPrefix(p string) bool { return strings.HasPrefix(sc.s[sc.i:], p) }

func (sc *scan) skipSpace() {
	for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t' || sc.s[sc.i] == ',') {
		sc.i++
	}
}

func (sc *scan) word() string { return sc.wordUntil(" ") }

func (sc *scan) wordUntil(stop string) string {
	sc.skipSpace()
	start := sc.i
	for sc.i < len(sc.s) && !strings.ContainsRune(stop, rune(sc.s[sc.i])) {
		sc.i++
	}
	return sc.s[start:sc.i]
}

func (sc *scan) quoted() (string, error) {
	if !sc.hasPrefix(`"`) {
		return "", fmt.Errorf("expected a quoted string at %q", sc.s[sc.i:])
	}
	j := sc.i + 1
	for j < len(sc.s) && sc.s[j] != '"' {
		if sc.s[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(sc.s) {
		return "", errors.New("unterminated string")
	}
	s, err := strconv.Unquote(sc.s[sc.i : j+1])
	sc.i = j + 1
	return s, err
}

// options reads key=value words (values may be quoted) and an optional
// trailing attribute block.
func (sc *scan) options() (map[string]string, traceentry.Attributes, error) {
	opts := map[string]string{}
	for {
		sc.skipSpace()
		if sc.done() {
			return opts, nil, nil
		}
		if sc.hasPrefix("{") {
			kvs, err := sc.attrs()
			if err != nil {
				return nil, nil, err
			}
			sc.skipSpace()
			if !sc.done() {
				return nil, nil, fmt.Errorf("trailing text %q", sc.s[sc.i:])
			}
			return opts, kvs, nil
		}
		key := sc.wordUntil("= ")
		if !sc.hasPrefix("=") {
			return nil, nil, fmt.Errorf("expected key=value at %q", key)
		}
		sc.i++
		var v string
		if sc.hasPrefix(`"`) {
			q, err := sc.quoted()
			if err != nil {
				return nil, nil, err
			}
			v = q
		} else {
			v = sc.wordUntil(" ")
		}
		opts[key] = v
	}
}

// attrs reads {key=value, ...}.
func (sc *scan) attrs() (traceentry.Attributes, error) {
	if !sc.hasPrefix("{") {
		return nil, fmt.Errorf("expected { at %q", sc.s[sc.i:])
	}
	sc.i++
	kvs := traceentry.Attributes{}
	for {
		sc.skipSpace()
		if sc.hasPrefix("}") {
			sc.i++
			return kvs, nil
		}
		if sc.done() {
			return nil, errors.New("unterminated attribute block")
		}
		var key string
		if sc.hasPrefix(`"`) {
			k, err := sc.quoted()
			if err != nil {
				return nil, err
			}
			key = k
		} else {
			key = sc.wordUntil("=,} ")
		}
		sc.skipSpace()
		if !sc.hasPrefix("=") {
			return nil, fmt.Errorf("expected = after %q", key)
		}
		sc.i++
		v, err := sc.value()
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, traceentry.KeyValue{Key: key, Value: v})
	}
}

func (sc *scan) value() (traceentry.Value, error) {
	sc.skipSpace()
	switch {
	case sc.hasPrefix(`"`):
		s, err := sc.quoted()
		return traceentry.StringValue(s), err
	case sc.hasPrefix("["):
		sc.i++
		var elems []traceentry.Value
		for {
			sc.skipSpace()
			if sc.hasPrefix("]") {
				sc.i++
				return traceentry.ArrayValue(elems...), nil
			}
			if sc.done() {
				return traceentry.Value{}, errors.New("unterminated array")
			}
			v, err := sc.value()
			if err != nil {
				return traceentry.Value{}, err
			}
			elems = append(elems, v)
		}
	case sc.hasPrefix("{"):
		kvs, err := sc.attrs()
		return traceentry.MapValue(kvs...), err
	}
	w := sc.wordUntil(",]} ")
	switch {
	case w == "true" || w == "false":
		return traceentry.BoolValue(w == "true"), nil
	case w == "empty":
		return traceentry.Value{}, nil
	case strings.HasPrefix(w, "0x"):
		b := make([]byte, 0, len(w)/2)
		for i := 2; i+1 < len(w); i += 2 {
			n, err := strconv.ParseUint(w[i:i+2], 16, 8)
			if err != nil {
				return traceentry.Value{}, err
			}
			b = append(b, byte(n))
		}
		return traceentry.BytesValue(b), nil
	case strings.ContainsAny(w, ".eE") || w == "NaN":
		f, err := strconv.ParseFloat(w, 64)
		return traceentry.FloatValue(f), err
	}
	n, err := strconv.ParseInt(w, 10, 64)
	if err != nil {
		return traceentry.Value{}, fmt.Errorf("bad value %q", w)
	}
	return traceentry.IntValue(n), nil
}

// ---- running ----

// Totals over the suite, to show that the pruning source prunes.
var prunedTraces, offeredTraces int

func runEval(t *testing.T, src *memSource, cmd *evalCmd) {
	eng := NewEngine(DefaultOptions())
	req := SearchRequest{Query: cmd.query, Start: cmd.from, End: cmd.to, Limit: cmd.limit, SpansPerSpanSet: cmd.spss}
	resp, err := eng.Search(context.Background(), src, req)
	if cmd.fail {
		if err == nil {
			t.Fatalf("%s: expected an error, got none", cmd.query)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrParse) {
			t.Fatalf("%s: error %v is not a *ParseError", cmd.query, err)
		}
		for _, m := range cmd.failMsg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: error %q does not contain %q", cmd.query, err, m)
			}
		}
		if cmd.failPos != "" && fmt.Sprintf("%d:%d", pe.Line, pe.Col) != cmd.failPos {
			t.Errorf("%s: error at %d:%d, want %s (%v)", cmd.query, pe.Line, pe.Col, cmd.failPos, err)
		}
		if cmd.failUnsupp != errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: errors.Is(ErrUnsupported) = %v, want %v", cmd.query, !cmd.failUnsupp, cmd.failUnsupp)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", cmd.query, err)
	}
	checkResponse(t, cmd, resp)

	// The same answer from a store that trusts the hints.
	ps := &pruningSource{mem: src}
	resp2, err := eng.Search(context.Background(), ps, req)
	prunedTraces += ps.pruned
	offeredTraces += len(src.traces)
	if err != nil {
		t.Fatalf("%s (pruned): %v", cmd.query, err)
	}
	if a, b := describe(resp), describe(resp2); a != b {
		t.Errorf("%s: pushdown hints %+v changed the answer:\nall traces: %s\npruned:     %s", cmd.query, src.lastReq.Hints, a, b)
	}

	// The same matches from EvalTrace, trace by trace.
	if cmd.limit != 1<<20 || cmd.spss != 1<<20 {
		return
	}
	q, err := Parse(cmd.query)
	if err != nil {
		t.Fatal(err)
	}
	freq := traceentry.FetchRequest{Start: cmd.from, End: cmd.to}
	var got []string
	for _, tr := range src.traces {
		if !freq.Overlaps(tr.TimeRange()) {
			continue
		}
		if ms := q.EvalTrace(tr); len(ms) > 0 {
			var sets []string
			for _, m := range ms {
				var ids []string
				for _, s := range m.Spans {
					ids = append(ids, s.SpanID.String())
				}
				slices.Sort(ids)
				sets = append(sets, strings.Join(ids, " "))
			}
			slices.Sort(sets)
			got = append(got, TraceIDString(tr.TraceID)+": "+strings.Join(sets, " | "))
		}
	}
	var want []string
	for _, tr := range resp.Traces {
		var sets []string
		for _, ss := range tr.SpanSets {
			var ids []string
			for _, s := range ss.Spans {
				ids = append(ids, s.SpanID)
			}
			slices.Sort(ids)
			sets = append(sets, strings.Join(ids, " "))
		}
		slices.Sort(sets)
		want = append(want, tr.TraceID+": "+strings.Join(sets, " | "))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: EvalTrace %q, Search %q", cmd.query, got, want)
	}
}

func describe(resp *SearchResponse) string {
	var b strings.Builder
	for _, tr := range resp.Traces {
		fmt.Fprintf(&b, "%s:", tr.TraceID)
		for _, ss := range tr.SpanSets {
			fmt.Fprintf(&b, " [matched=%d", ss.Matched)
			for _, s := range ss.Spans {
				fmt.Fprintf(&b, " %s%v", s.SpanID, s.Attributes)
			}
			fmt.Fprintf(&b, " @%v]", ss.Attributes)
		}
		b.WriteString("; ")
	}
	return b.String()
}

func checkResponse(t *testing.T, cmd *evalCmd, resp *SearchResponse) {
	t.Helper()
	got := map[string]*TraceSearchMetadata{}
	var order []string
	for i := range resp.Traces {
		got[resp.Traces[i].TraceID] = &resp.Traces[i]
		order = append(order, resp.Traces[i].TraceID)
	}
	var wantIDs []string
	for _, e := range cmd.expect {
		wantIDs = append(wantIDs, e.id)
	}
	if cmd.ordered {
		if !slices.Equal(order, wantIDs) {
			t.Fatalf("%s: traces %v, want %v in that order", cmd.query, order, wantIDs)
		}
	} else {
		a, b := slices.Clone(order), slices.Clone(wantIDs)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Fatalf("%s: traces %v, want %v\n%s", cmd.query, a, b, describe(resp))
		}
	}
	for _, e := range cmd.expect {
		tr := got[e.id]
		if len(tr.SpanSets) != len(e.sets) {
			t.Errorf("%s: trace %s has %d spansets, want %d\n%s", cmd.query, e.id, len(tr.SpanSets), len(e.sets), describe(resp))
			continue
		}
		used := make([]bool, len(tr.SpanSets))
	next:
		for _, es := range e.sets {
			for i := range tr.SpanSets {
				if !used[i] && setMatches(es, tr.SpanSets[i]) {
					used[i] = true
					continue next
				}
			}
			t.Errorf("%s: trace %s has no spanset matching %+v\n%s", cmd.query, e.id, es, describe(resp))
		}
	}
}

func setMatches(e expSet, ss SpanSet) bool {
	if len(e.spans) != len(ss.Spans) || (e.matched >= 0 && e.matched != ss.Matched) {
		return false
	}
	if e.hasAttr && !sameAttrs(e.attrs, ss.Attributes, true) {
		return false
	}
	for _, es := range e.spans {
		i := slices.IndexFunc(ss.Spans, func(s Span) bool { return s.SpanID == es.id })
		if i < 0 || (es.hasAttr && !sameAttrs(es.attrs, ss.Spans[i].Attributes, false)) {
			return false
		}
	}
	return true
}

func sameAttrs(want []traceentry.KeyValue, got []Attribute, ordered bool) bool {
	if len(want) != len(got) {
		return false
	}
	str := func(k string, v traceentry.Value) string { return k + "=" + v.String() }
	var a, b []string
	for _, kv := range want {
		a = append(a, str(kv.Key, kv.Value))
	}
	for _, kv := range got {
		b = append(b, str(kv.Key, kv.Value))
	}
	if !ordered {
		slices.Sort(a)
		slices.Sort(b)
	}
	return slices.Equal(a, b)
}

package logql

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// fuzzStages are the pipeline stages FuzzPipeline applies to a fuzzed
// line; %s is the fuzzed parameter (quoted by the target where the stage
// takes a string).
var fuzzStages = []string{
	"| json",
	"| json x=%q, y=%q",
	"| logfmt",
	"| logfmt --strict --keep-empty",
	"| logfmt x, y=%q",
	"| regexp %q",
	"| pattern %q",
	"|> %q",
	"| unpack",
	"| line_format %q",
	"| label_format x=%q, y=app",
	"| json | %s",
	"| logfmt | %s",
	"| decolorize | keep app, %s",
	"| drop %s",
}

// FuzzPipeline runs each parser, formatter and label filter over a fuzzed
// line with a fuzzed parameter (expression, regexp, pattern, template or
// label filter), as a log and as a metric query: the engine never panics,
// answers within the template budget, and every label it returns is a
// valid label name.
func FuzzPipeline(f *testing.F) {
	for i, s := range [][2]string{
		{`{"level":"info","msg":"a \"quoted\" value","n":1,"a":{"b":[1,{"c":2}],"d":null},"_entry":"inner"}`, `a.b[1].c`},
		{`level=error msg="request failed" status=500 dur=15ms size=1KB x== "y`, `msg`},
		{"10.0.0.1 - - [30/Nov/2026:12:00:00 +0000] \"GET /x HTTP/1.1\" 200 512", `<ip> - - [<_>] "<method> <path> <_>" <status> <size>`},
		{"\x1b[31mred\x1b[0m level=warn", `(?P<lvl>\w+)=(?P<val>\S+)`},
		{`a=1 b=2 c=3`, `{{ range $k, $v := . }}{{ $k }}={{ upper $v }} {{ end }}{{ __line__ | trunc 5 }}`},
		{`{"x":"1.5s","y":"10KB"}`, `x > 1s and y >= 5KB or x="" , __error__!=""`},
		{``, `{{ repeat 1000 (repeat 1000 (repeat 1000 "x")) }}`},
		{`not json {`, `(x=~"a|b" or y!~"c") and z<=-1e3`},
	} {
		f.Add(s[0], s[1], uint8(i))
	}
	src := &fuzzSource{}
	opts := DefaultEngineOptions()
	opts.MaxTemplateBytes = 64 << 10
	opts.MaxQueryMemory = 16 << 20
	eng := NewEngine(src, opts)
	f.Fuzz(func(t *testing.T, line, param string, stage uint8) {
		if len(line) > 64<<10 || len(param) > 4096 {
			return
		}
		st := fuzzStages[int(stage)%len(fuzzStages)]
		arg := param
		if strings.Contains(st, "%q") {
			arg = `"` + strings.ReplaceAll(strings.ReplaceAll(param, `\`, `\\`), `"`, `\"`) + `"`
		}
		pipeline := strings.ReplaceAll(strings.ReplaceAll(st, "%q", arg), "%s", arg)
		src.set(line)
		for _, p := range []QueryParams{
			{Query: `{app="a"} ` + pipeline, End: int64(time.Minute), Limit: 10},
			{Query: `sum by (x) (count_over_time({app="a"} ` + pipeline + ` [1m]))`, End: int64(time.Minute), Instant: true},
		} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := eng.Query(context.Background(), p)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
				t.Fatalf("%s: allocated %d bytes", p.Query, alloc)
			}
			if err != nil {
				if !errors.Is(err, ErrParse) && !errors.Is(err, ErrTemplateLimit) && !errors.Is(err, ErrPipeline) && !errors.Is(err, ErrExecution) {
					t.Fatalf("%s: unexpected error %v", p.Query, err)
				}
				continue
			}
			checkLabelNames(t, p.Query, res)
		}
	})
}

func checkLabelNames(t *testing.T, q string, res *Result) {
	t.Helper()
	check := func(ls labels.Labels) {
		ls.Range(func(l labels.Label) {
			if !model.LabelName(l.Name).IsValidLegacy() {
				t.Fatalf("%s: invalid label name %q", q, l.Name)
			}
		})
	}
	for _, s := range res.Streams {
		check(s.Labels)
		for _, e := range s.Entries {
			check(e.Parsed)
		}
	}
	for _, s := range res.Vector {
		check(s.Labels)
	}
}

// fuzzSource holds one entry of stream {app="a"}, set per fuzz input.
type fuzzSource struct{ ms memSource }

func (s *fuzzSource) set(line string) {
	s.ms = memSource{}
	s.ms.add(labels.FromStrings("app", "a"), Entry{Timestamp: int64(time.Second), Line: line, Metadata: labels.FromStrings("trace_id", "t1")})
}

func (s *fuzzSource) Select(ctx context.Context, p SelectParams) (EntryIterator, error) {
	return s.ms.Select(ctx, p)
}

// FuzzTemplate executes a fuzzed template over a fuzzed line and labels:
// it never panics, and its output never exceeds the budget however the
// template nests its functions and ranges.
func FuzzTemplate(f *testing.F) {
	for _, s := range [][2]string{
		{`{{ .a }} {{ __line__ }} {{ __timestamp__ | date "2006" }}`, `x`},
		{`{{ repeat 1000 (repeat 1000 (repeat 1000 "x")) }}`, ``},
		{`{{ range 1000000000 }}{{ end }}`, ``},
		{`{{ $a := __line__ }}{{ range 30 }}{{ $a = print $a $a }}{{ end }}{{ $a }}`, `ab`},
		{`{{ printf "%*d%-1000000s" 1000000 1 "x" }}`, ``},
		{`{{ regexReplaceAll "" __line__ "$0$0$0$0" | regexReplaceAll "" "$0$0" }}`, `abcdef`},
		{`{{ js (html (urlquery (b64enc (indent 1000 (nindent 1000 __line__))))) }}`, "a\nb\nc"},
		{`{{ if and (eq .a "1") (hasPrefix "x" __line__) }}{{ else if .b }}{{ with .c }}{{ . }}{{ end }}{{ end }}`, `xy`},
		{`{{ define "a" }}{{ template "a" }}{{ end }}`, ``},
		{`{{ toDateInZone "2006" "Europe/Berlin" "2026" | unixEpoch }} {{ div 1 0 }}`, ``},
	} {
		f.Add(s[0], s[1])
	}
	const limit = 64 << 10
	f.Fuzz(func(t *testing.T, text, line string) {
		if len(text) > 4096 || len(line) > 16<<10 {
			return
		}
		h, err := newTmpl(text)
		if err != nil {
			return
		}
		h.setLimit(limit)
		lb := &lbuilder{}
		lb.reset(labels.FromStrings("a", "1", "b", line), labels.EmptyLabels())
		for range 2 { // the second execution reuses the holder's state
			out, err := h.exec(lb, line, int64(time.Second))
			if err != nil {
				continue
			}
			if len(out) > limit && !h.lit {
				t.Fatalf("output of %d bytes, budget %d", len(out), limit)
			}
		}
	})
}

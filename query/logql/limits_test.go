package logql

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc)
// and its error. It is the measure of the
// limits' tests: what a bound query costs in memory, not in time.
func allocated(f func() error) (int64, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc), err
}

// limitSource has n entries in one stream, each line logfmt with a
// distinct id.
func limitSource(n int, line func(i int) string) *memSource {
	src := &memSource{}
	for i := range n {
		src.add(labels.FromStrings("app", "a"), Entry{Timestamp: int64(i) * int64(time.Millisecond), Line: line(i)})
	}
	return src
}

// The template attacks of issue 14: each must fail the query with
// ErrTemplateLimit at the first entry, after allocating a bounded amount
// (a few times MaxTemplateBytes), however much the template asks for.
func TestTemplateLimits(t *testing.T) {
	const limit = 256 << 10
	src := limitSource(100, func(i int) string { return fmt.Sprintf("level=info id=%d msg=hello", i) })
	opts := DefaultEngineOptions()
	opts.MaxTemplateBytes = limit
	eng := NewEngine(src, opts)
	doubling := `{{ $a := repeat 1000 "xxxxxxxxxx" }}` + strings.Repeat(`{{ $a = print $a $a }}`, 30)
	for _, tc := range []struct{ name, tmpl string }{
		{"nested repeat (issue 14)", `{{ repeat 1000 (repeat 1000 (repeat 1000 "x")) }}`},
		{"repeat of the line", `{{ repeat 1000 (repeat 1000 __line__) }}`},
		{"print doubling", doubling},
		{"printf widths", `{{ printf "%1000000d%1000000d" 1 2 }}`},
		{"printf star width", `{{ printf "%*d" 1000000 1 }}{{ printf "%*d" 1000000 1 }}`},
		{"replace empty", `{{ replace "" (repeat 1000 "y") (replace "" (repeat 1000 "y") (repeat 1000 "x")) }}`},
		{"Replace empty", `{{ Replace (Replace (repeat 1000 "x") "" (repeat 1000 "y") -1) "" (repeat 1000 "y") -1 }}`},
		{"regexReplaceAll empty", `{{ regexReplaceAll "" (regexReplaceAll "" (repeat 200 "x") (repeat 1000 "y")) (repeat 1000 "y") }}`},
		{"regexReplaceAll ref", `{{ regexReplaceAll "(x*)" (repeat 200 (repeat 1000 "x")) "$1$1$1$1$1$1$1$1" }}`},
		{"indent", `{{ indent 1000 (indent 1000 (repeat 1000 "\n")) }}`},
		{"nindent", `{{ nindent 1000 (nindent 1000 (repeat 1000 "\n")) }}`},
		{"js", `{{ js (js (repeat 100 (repeat 1000 "<"))) }}`},
		{"html", `{{ html (html (repeat 100 (repeat 1000 "<"))) }}`},
		{"urlquery", `{{ urlquery (urlquery (repeat 100 (repeat 1000 "<"))) }}`},
		{"b64enc", `{{ b64enc (b64enc (b64enc (repeat 100 (repeat 1000 "<")))) }}`},
		{"date layout", `{{ date (repeat 100 (repeat 100 ".000000000")) __timestamp__ }}`},
		{"output", `{{ range 5000 }}{{ repeat 1000 "x" }}{{ end }}`},
		{"range int", `{{ range 1000000000 }}{{ end }}`},
		{"range nested", `{{ range 100000 }}{{ range 100000 }}{{ end }}{{ end }}`},
		{"range computed", `{{ range (mul 100000 100000) }}{{ end }}`},
		{"range labels nested", `{{ range $k, $v := . }}{{ range 10000 }}{{ end }}{{ end }}`},
	} {
		for _, q := range []string{
			`{app="a"} | line_format "` + escape(tc.tmpl) + `"`,
			`{app="a"} | label_format x="` + escape(tc.tmpl) + `"`,
			`count_over_time({app="a"} | line_format "` + escape(tc.tmpl) + `" [1m])`,
		} {
			t.Run(tc.name+"/"+q[:strings.IndexByte(q, '|')], func(t *testing.T) {
				var res *Result
				alloc, err := allocated(func() (err error) {
					res, err = eng.Query(context.Background(), QueryParams{Query: q, Start: 0, End: int64(time.Minute), Step: time.Minute, Limit: 100})
					return err
				})
				if !errors.Is(err, ErrTemplateLimit) {
					t.Fatalf("want ErrTemplateLimit, got %v (result %v)", err, res != nil)
				}
				if !strings.Contains(err.Error(), "max_template_bytes") && !strings.Contains(err.Error(), "iterations") {
					t.Errorf("error does not name the limit: %v", err)
				}
				t.Logf("allocated %d bytes", alloc)
				if raceEnabled && strings.Contains(tc.tmpl, "regexReplaceAll") {
					t.Log("allocation bound not checked: regexp pools a matcher per match, which -race defeats")
					return
				}
				if alloc > 16*limit {
					t.Errorf("allocated %d bytes, bound %d", alloc, 16*limit)
				}
			})
		}
	}
}

func escape(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) }

// Templates within the budget answer as before: the guards change no
// result.
func TestTemplateWithinLimits(t *testing.T) {
	src := limitSource(3, func(i int) string { return fmt.Sprintf("level=info id=%d", i) })
	eng := NewEngine(src, DefaultEngineOptions())
	for tmpl, want := range map[string]string{
		`{{ range $k, $v := . }}{{ $k }}={{ $v }};{{ end }}`:                   "app=a;id=0;level=info;",
		`{{ range 3 }}x{{ end }}`:                                              "xxx",
		`{{ repeat 3 "ab" }}`:                                                  "ababab",
		`{{ regexReplaceAll "(i)(d)" __line__ "$2$1" }}`:                       "level=info di=0",
		`{{ regexReplaceAllLiteral "i" .level "$1" }}`:                         "$1nfo",
		`{{ printf "%05d|%-4s|%.2f|%q|%x" 7 "ab" 3.14159 "q" "hi" }}`:          `00007|ab  |3.14|"q"|6869`,
		`{{ print 1 2 "a" "b" }}`:                                              "1 2ab",
		`{{ html "<a>" }} {{ js "<" }} {{ urlquery "a b" }}`:                   `&lt;a&gt; \u003C a+b`,
		`{{ replace "i" "II" .level }} {{ Replace .level "i" "" 1 }}`:          "IInfo nfo",
		`{{ indent 2 "a\nb" }}|{{ nindent 1 "c" }}`:                            "  a\n  b|\n c",
		`{{ date "2006-01-02" __timestamp__ }} {{ b64enc "hi" }}`:              "1970-01-01 aGk=",
		`{{ if eq .level "info" }}{{ upper .level }}{{ else }}no{{ end }}`:     "INFO",
		`{{ with .id }}{{ . }}{{ end }}{{ range $i := 2 }}{{ $i }}{{ end }}`:   "001",
		`{{ alignLeft 6 .level }}|{{ alignRight 6 .level }}|{{ trunc 2 .id }}`: "info  |  info|0",
	} {
		t.Run(tmpl, func(t *testing.T) {
			q := `{app="a"} | logfmt | line_format "` + escape(tmpl) + `"`
			res, err := eng.Query(context.Background(), QueryParams{Query: q, Start: 0, End: int64(time.Minute), Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Streams) != 1 || len(res.Streams[0].Entries) != 1 {
				t.Fatalf("result %+v", res.Streams)
			}
			if got := res.Streams[0].Entries[0].Line; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

// Template calls can recurse exponentially; weft refuses them at parse time.
func TestTemplateDefinitionsRefused(t *testing.T) {
	for _, tmpl := range []string{
		`{{ define "a" }}x{{ end }}{{ template "a" }}`,
		`{{ template "" }}`,
		`{{ block "b" . }}x{{ end }}`,
		`{{ if true }}{{ range 1 }}{{ template "" }}{{ end }}{{ end }}`,
	} {
		_, err := ParseExpr(`{app="a"} | line_format "` + escape(tmpl) + `"`)
		if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), "not supported") {
			t.Errorf("%s: want a parse error, got %v", tmpl, err)
		}
	}
}

// Each query's memory is bounded: the attack queries fail with
// ErrQueryMemory (a 400 in the Loki API) after allocating a bounded
// multiple of MaxQueryMemory.
func TestQueryMemoryLimit(t *testing.T) {
	const limit = 512 << 10
	n := 50_000
	src := limitSource(n, func(i int) string { return fmt.Sprintf("level=info id=%d n=%d", i, i%7) })
	opts := DefaultEngineOptions()
	opts.MaxQueryMemory = limit
	opts.MaxSeries = -1
	eng := NewEngine(src, opts)
	day := int64(24 * time.Hour)
	base, err := allocated(func() error {
		_, err := eng.Query(context.Background(), QueryParams{Query: `{app="a"} |~ "nothing"`, End: day})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    QueryParams
	}{
		{"lines a template made large", QueryParams{Query: `{app="a"} | line_format "{{ repeat 1000 (repeat 1000 \"x\") }}"`, End: day, Limit: 5000}},
		{"labels", QueryParams{Query: `{app="a"} | logfmt | label_format big="{{ repeat 1000 (repeat 100 \"x\") }}"`, End: day, Limit: 5000}},
		{"series per step", QueryParams{Query: `count_over_time({app="a"} | logfmt [1m])`, End: day, Step: 10 * time.Second}},
		{"grouped series", QueryParams{Query: `sum by (id) (count_over_time({app="a"} | logfmt [1m]))`, End: day, Step: 10 * time.Second}},
		{"unwrapped samples", QueryParams{Query: `sum_over_time({app="a"} | logfmt | unwrap n [1d])`, End: day, Instant: true}},
		{"quantile samples", QueryParams{Query: `quantile_over_time(0.5, {app="a"} | logfmt | unwrap n [1d]) by (level)`, End: day, Instant: true}},
		{"label_replace", QueryParams{Query: `label_replace(count_over_time({app="a"} | logfmt [1m]), "x", "$1", "id", "(.*)")`, End: day, Step: 10 * time.Second}},
		{"binary op", QueryParams{Query: `count_over_time({app="a"} | logfmt [1m]) * on (id) count_over_time({app="a"} | logfmt [1m])`, End: day, Step: 10 * time.Second}},
		{"vector aggregation", QueryParams{Query: `max by (id) (count_over_time({app="a"} | logfmt [1m]))`, End: day, Step: 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alloc, err := allocated(func() error {
				_, err := eng.Query(context.Background(), tc.p)
				return err
			})
			if !errors.Is(err, ErrQueryMemory) {
				t.Fatalf("want ErrQueryMemory, got %v", err)
			}
			if !strings.Contains(err.Error(), "max_query_memory_bytes") || !strings.Contains(err.Error(), "512.0 KiB") {
				t.Errorf("error does not name the limit: %v", err)
			}
			t.Logf("allocated %d bytes, %d of them reading the entries", alloc, base)
			if alloc > base+16*limit {
				t.Errorf("allocated %d bytes, bound %d (reading the entries: %d)", alloc, base+16*limit, base)
			}
		})
	}
	// Within the budget the same data answers.
	if _, err := eng.Query(context.Background(), QueryParams{Query: `sum by (level) (count_over_time({app="a"} | logfmt [1m]))`, End: day, Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// A log query's budget counts the entries it holds: evicted entries give
// their bytes back, so a backward query over many large lines keeping
// `limit` of them stays within it.
func TestQueryMemoryEvictedEntries(t *testing.T) {
	line := strings.Repeat("x", 10_000)
	src := limitSource(5000, func(int) string { return line })
	opts := DefaultEngineOptions()
	opts.MaxQueryMemory = 2 << 20 // 100 entries of 10 kB fit, 5000 do not
	eng := NewEngine(src, opts)
	res, err := eng.Query(context.Background(), QueryParams{Query: `{app="a"}`, End: int64(time.Hour), Limit: 100, Direction: Backward})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Streams[0].Entries); n != 100 {
		t.Fatalf("%d entries", n)
	}
	_, err = eng.Query(context.Background(), QueryParams{Query: `{app="a"}`, End: int64(time.Hour), Limit: 5000, Direction: Backward})
	if !errors.Is(err, ErrQueryMemory) {
		t.Fatalf("want ErrQueryMemory, got %v", err)
	}
}

func TestMaxQueryBytesRead(t *testing.T) {
	src := limitSource(1000, func(int) string { return strings.Repeat("y", 100) })
	opts := DefaultEngineOptions()
	opts.MaxQueryBytesRead = 10_000
	eng := NewEngine(src, opts)
	for _, q := range []string{`{app="a"} |~ "z"`, `count_over_time({app="a"} |= "y" [1h])`} {
		_, err := eng.Query(context.Background(), QueryParams{Query: q, End: int64(time.Hour), Instant: strings.HasPrefix(q, "count")})
		if !errors.Is(err, ErrBytesReadLimit) {
			t.Fatalf("%s: want ErrBytesReadLimit, got %v", q, err)
		}
		want := "the query would read too many bytes (query: more than 9.8 KiB, limit: 9.8 KiB); consider adding more specific stream selectors or reduce the time range of the query"
		if err.Error() != want {
			t.Fatalf("%s: message %q", q, err)
		}
	}
	opts.MaxQueryBytesRead = 100_000
	if _, err := NewEngine(src, opts).Query(context.Background(), QueryParams{Query: `{app="a"} |~ "z"`, End: int64(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

func TestTooManySeriesMessage(t *testing.T) {
	src := &memSource{}
	for i := range 3 {
		src.add(labels.FromStrings("app", "a", "pod", fmt.Sprint(i)), Entry{Timestamp: 1, Line: "x"})
	}
	opts := DefaultEngineOptions()
	opts.MaxSeries = 2
	_, err := NewEngine(src, opts).Query(context.Background(), QueryParams{Query: `count_over_time({app="a"}[1m])`, End: 10, Instant: true})
	want := "maximum number of series (2) reached for a single query; consider reducing query cardinality by adding more specific stream selectors, reducing the time range, or aggregating results with functions like sum(), count() or topk()"
	if !errors.Is(err, ErrTooManySeries) || err.Error() != want {
		t.Fatalf("got %v", err)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1 << 30: "1.0 GiB", 1536 << 20: "1.5 GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

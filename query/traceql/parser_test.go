package traceql

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdataQueries returns every query of the conformance suite; valid ones
// when valid, the failing ones otherwise.
func testdataQueries(tb testing.TB, valid bool) []string {
	tb.Helper()
	files, err := filepath.Glob("testdata/*.test")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no testdata: %v", err)
	}
	var qs []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(l, "eval") {
				continue
			}
			cmd, err := parseEvalLine(l)
			if err != nil {
				tb.Fatal(err)
			}
			if cmd.fail != valid {
				qs = append(qs, cmd.query)
			}
		}
	}
	return qs
}

var extraQueries = []string{
	`{ span.http.request_content_length > 10 * 1024 * 1024 }`,
	`{ !("test" != .c || ((true && .b) || 3 < .a)) }`,
	`{ ."foo\" = \"bar" = "v" }`,
	`{ ."a\\b" = "v" }`,
	"{ .\"foo\tbar\" = \"v\" }",
	`{ .a = minInt } | { .b = maxInt }`,
	`{ 2 ^ -1 = 0.5 }`,
	`{ .a - -1 = 2 }`,
	`{ -(.a + 1) * 2 = -4 }`,
	`{ (.a ^ 2) ^ 3 = 1 }`,
	`{ .a > 1e3 && .b < 1.5e-3 }`,
	`{ duration > 1h30m }`,
	`{ span.attribute."attribute name with space" = "value" }`,
	"{ .a = `raw\\string` }",
	`({ .a } | by(.b) | count() > 1 | { .c }) ~ ({ } | select(.d))`,
	`{ true } | by(3 * .field - 2) | max(duration) < 1s`,
	`{ } | coalesce() | by(span:id, trace:id) | min(span:childCount) <= -1`,
}

func TestRoundTrip(t *testing.T) {
	qs := append(testdataQueries(t, true), extraQueries...)
	for _, q := range qs {
		p, err := Parse(q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		s := p.String()
		p2, err := Parse(s)
		if err != nil {
			t.Errorf("%s printed as %s, which does not parse: %v", q, s, err)
			continue
		}
		if p.dump() != p2.dump() {
			t.Errorf("%s printed as %s, which parses differently:\n%s\n%s", q, s, p.dump(), p2.dump())
		}
		if s2 := p2.String(); s2 != s {
			t.Errorf("%s: printing is not stable: %s then %s", q, s, s2)
		}
	}
	if len(qs) < 300 {
		t.Errorf("only %d queries", len(qs))
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, `{ }`},
		{`{.a=1}`, `{ .a = 1 }`},
		{`{ span:name = "x" }`, `{ name = "x" }`},
		{`{ trace:rootService = "x" && trace:duration > 1s }`, `{ rootServiceName = "x" && traceDuration > 1s }`},
		{`{ 10 * 1024 }`, ``}, // not boolean
		{`{ .a > 10 * 1024 }`, `{ .a > 10240 }`},
		{`{ .a = (1 + 2) * 3 }`, `{ .a = 9 }`},
		{`{ (.a + 1) * 2 = 4 }`, `{ (.a + 1) * 2 = 4 }`},
		{`{ .a + (1 * 2) = 4 }`, `{ .a + 2 = 4 }`},
		{`{ .a - (.b - .c) = 0 }`, `{ .a - (.b - .c) = 0 }`},
		{`{ (.a - .b) - .c = 0 }`, `{ .a - .b - .c = 0 }`},
		{`{ .a ^ (.b ^ .c) = 0 }`, `{ .a ^ .b ^ .c = 0 }`},
		{`{ (.a ^ .b) ^ .c = 0 }`, `{ (.a ^ .b) ^ .c = 0 }`},
		{`{ (.a || .b) && .c }`, `{ (.a || .b) && .c }`},
		{`{ .a || (.b && .c) }`, `{ .a || .b && .c }`},
		{`{ .a && (.b && .c) }`, `{ .a && .b && .c }`},
		{`{ !(.a && .b) }`, `{ !(.a && .b) }`},
		{`{ -(-1) = 1 }`, `{ 1 = 1 }`},
		{`{ .a = 1.0 }`, `{ .a = 1.0 }`},
		{`{ .a = 100us }`, `{ .a = 100µs }`},
		{`{ .a = 90m }`, `{ .a = 1h30m0s }`},
		{`{ .a = -9223372036854775807 - 1 }`, `{ .a = minInt }`},
		{`{ span."a b" = "\t" }`, `{ span."a b" = "\t" }`},
		{`{ resource.x.y = "z" }`, `{ resource.x.y = "z" }`},
		{`{ trace:id = "00AB" }`, `{ trace:id = "ab" }`},
		{`{}|count()>1|by(resource.service.name)|select(span.a,.b)|coalesce()`, `{ } | count() > 1 | by(resource.service.name) | select(span.a, .b) | coalesce()`},
		{`({a}) >> {}`, ``},
		{`({ .a }) >> { }`, `({ .a }) >> { }`},
		{`{ } with(most_recent=true)`, `{ } with (most_recent=true)`},
		{`{ event:name = "x" && link:spanID = "1" && instrumentation:name = "y" }`, `{ event:name = "x" && link:spanID = "1" && instrumentation:name = "y" }`},
	} {
		q, err := Parse(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: parsed as %s, want an error", tc.in, q)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got := q.String(); got != tc.want {
			t.Errorf("%s: String() = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestParseLimits(t *testing.T) {
	deep := strings.Repeat("(", 100_000) + "{ }" + strings.Repeat(")", 100_000)
	opts := DefaultParseOptions()
	opts.MaxLength = 1 << 20
	_, err := ParseWithOptions(deep, opts)
	if err == nil || !strings.Contains(err.Error(), "nested more than 200 levels") {
		t.Fatalf("100k-deep parentheses: %v", err)
	}
	for name, q := range map[string]string{
		"field parens": "{ " + strings.Repeat("(", 50_000) + "true" + strings.Repeat(")", 50_000) + " }",
		"unary":        "{ " + strings.Repeat("!", 50_000) + "true }",
		"negation":     "{ .a = " + strings.Repeat("-", 50_000) + "1 }",
		"spanset ops":  strings.Repeat("{ } && ", 5_000) + "{ }",
		"arithmetic":   "{ .a = 1" + strings.Repeat(" + 1", 5_000) + " }",
		"powers":       "{ .a = 1" + strings.Repeat(" ^ 1", 5_000) + " }",
		"comparisons":  "{ .a" + strings.Repeat(" = .a", 5_000) + " }",
	} {
		_, err := ParseWithOptions(q, opts)
		if err == nil || !strings.Contains(err.Error(), "nested more than") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Long flat conjunctions and disjunctions are not nesting.
	flat := "{ " + strings.Repeat(`.a = "x" && `, 3_000) + `.a = "x" }`
	if _, err := ParseWithOptions(flat, opts); err != nil {
		t.Errorf("3000 conditions joined by &&: %v", err)
	}
	long := "{ .a = \"" + strings.Repeat("x", 64<<10) + "\" }"
	if _, err := Parse(long); err == nil || !strings.Contains(err.Error(), "the limit is 65536") {
		t.Errorf("a query over 64 KiB: %v", err)
	}
	opts.MaxDepth = 3
	if _, err := ParseWithOptions("{ (((.a))) }", opts); err != nil {
		t.Errorf("depth 3: %v", err)
	}
	if _, err := ParseWithOptions("{ ((((.a)))) }", opts); err == nil {
		t.Error("depth 4 passed a limit of 3")
	}
}

func TestParseErrorPosition(t *testing.T) {
	var pe *ParseError
	for _, tc := range []struct {
		q         string
		line, col int
	}{
		{"{\n  .a = 1 &&\n  .b = }", 3, 8},
		{"{ .a = 1 }\n| count() > 1\n| by()", 3, 6},
		{"{ name = \"é\" && é }", 1, 17},
		{"{ .a = 1 }\r\n\t| rate()", 2, 4},
		{"{ span.x =~ \"(\"\n}", 1, 13},
	} {
		_, err := Parse(tc.q)
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v is not a *ParseError", tc.q, err)
			continue
		}
		if pe.Line != tc.line || pe.Col != tc.col {
			t.Errorf("%q: error at %d:%d, want %d:%d (%v)", tc.q, pe.Line, pe.Col, tc.line, tc.col, err)
		}
		if !errors.Is(err, ErrParse) {
			t.Errorf("%q: errors.Is(ErrParse) is false", tc.q)
		}
	}
	_, err := Parse("{} | rate()")
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, ErrParse) {
		t.Errorf("rate(): %v should be ErrParse and ErrUnsupported", err)
	}
	if _, err := Parse("{ .a < }"); errors.Is(err, ErrUnsupported) {
		t.Errorf("a syntax error is not ErrUnsupported")
	}
	_, err = Parse("{ name = \"ab\xff\" }")
	if !errors.As(err, &pe) || pe.Col != 13 || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

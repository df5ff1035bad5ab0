package logql

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var roundTripQueries = []struct{ in, want string }{
	{`{app="a"}`, `{app="a"}`},
	{`{app="a",env=~"p.*"}`, `{app="a", env=~"p.*"}`},
	{`{app="a"} |= "x" or "y" != "z" |~ "r" !~ "s" |> "<_> a" !> "b <_>"`, `{app="a"} |= "x" or "y" != "z" |~ "r" !~ "s" |> "<_> a" !> "b <_>"`},
	{"{app=\"a\"} |= `back\\tick`", `{app="a"} |= "back\\tick"`},
	{`{app="a"} | json | logfmt --strict --keep-empty a, b="c" | regexp "(?P<x>.)" | pattern "<x> y" | unpack`, `{app="a"} | json | logfmt --strict --keep-empty a, b="c" | regexp "(?P<x>.)" | pattern "<x> y" | unpack`},
	{`{app="a"} | json first="a.b[0]", ua="h[\"User-Agent\"]"`, `{app="a"} | json first="a.b[0]", ua="h[\"User-Agent\"]"`},
	{`{app="a"} | a="b", c>=1 or d<2s and e==1KB`, `{app="a"} | (a="b" and c>=1) or (d<2s and e==1KB)`},
	{`{app="a"} | (a="b" or c!~"d") and e=5`, `{app="a"} | (a="b" or c!~"d") and e==5`},
	{`{app="a"} | line_format "{{.a}}" | label_format x=y, z="{{.w}}" | drop a, b="c" | keep d, e=~"f" | decolorize`, `{app="a"} | line_format "{{.a}}" | label_format x=y, z="{{.w}}" | drop a, b="c" | keep d, e=~"f" | decolorize`},
	{`count_over_time({app="a"}[5m])`, `count_over_time({app="a"} [5m])`},
	{`count_over_time({app="a"}[1h30m] offset 1d)`, `count_over_time({app="a"} [1h30m] offset 1d)`},
	{`rate(({app="a"} |= "x")[90s])`, `rate({app="a"} |= "x" [1m30s])`},
	{`count_over_time({app="a"}[5m] | json)`, `count_over_time({app="a"} | json [5m])`},
	{`quantile_over_time(0.99, {app="a"} | json | unwrap duration(d) | __error__="" [1m]) by (x)`, `quantile_over_time(0.99, {app="a"} | json | unwrap duration(d) | __error__="" [1m]) by (x)`},
	{`sum by (a, b) (rate({app="a"}[1m]))`, `sum by (a, b) (rate({app="a"} [1m]))`},
	{`sum(rate({app="a"}[1m])) without (a)`, `sum without (a) (rate({app="a"} [1m]))`},
	{`topk(3, rate({app="a"}[1m]))`, `topk(3, rate({app="a"} [1m]))`},
	{`a_b_c`, ``},
	// what Grafana's Loki data source sends (log volume, explore)
	{`sum by (level, detected_level) (count_over_time({app="x"} | drop __error__[1m]))`, `sum by (level, detected_level) (count_over_time({app="x"} | drop __error__ [1m]))`},
	{"{app=\"x\"} |= `` | json | logfmt | drop __error__, __error_details__", `{app="x"} |= "" | json | logfmt | drop __error__, __error_details__`},
	{`sum(count_over_time({app="x"}[$__auto]))`, ``},
	{`1 + 2 * 3`, `1 + (2 * 3)`},
	{`(1 + 2) * 3`, `(1 + 2) * 3`},
	{`2 ^ 3 ^ 2`, `2 ^ (3 ^ 2)`},
	{`1 - -1`, `1 - -1`},
	{`rate({a="b"}[1m]) > bool on (x) group_left (y) rate({a="c"}[1m])`, `rate({a="b"} [1m]) > bool on (x) group_left (y) rate({a="c"} [1m])`},
	{`rate({a="b"}[1m]) / ignoring (x) group_right rate({a="c"}[1m])`, `rate({a="b"} [1m]) / ignoring (x) group_right () rate({a="c"} [1m])`},
	{`rate({a="b"}[1m]) or vector(0)`, `rate({a="b"} [1m]) or vector(0)`},
	{`label_replace(rate({a="b"}[1m]), "d", "$1", "s", "(.*)")`, `label_replace(rate({a="b"} [1m]), "d", "$1", "s", "(.*)")`},
}

func TestParseRoundTrip(t *testing.T) {
	for _, tc := range roundTripQueries {
		t.Run(tc.in, func(t *testing.T) {
			e, err := ParseExpr(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("expected an error, got %s", e)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := e.String(); got != tc.want {
				t.Fatalf("String() = %s\nwant       %s", got, tc.want)
			}
			e2, err := ParseExpr(e.String())
			if err != nil {
				t.Fatalf("re-parse %s: %v", e, err)
			}
			if e2.String() != e.String() {
				t.Fatalf("re-parse changed %s to %s", e, e2)
			}
		})
	}
}

func TestParseErrorPosition(t *testing.T) {
	for _, tc := range []struct {
		q         string
		line, col int
	}{
		{`{app="a"} |= 5`, 1, 14},
		{"{app=\"a\"}\n | json |", 2, 10},
		{`sum(rate({a="b"}[1m]) by`, 1, 25},
		{`{app=~"("}`, 1, 7},
	} {
		t.Run(tc.q, func(t *testing.T) {
			_, err := ParseExpr(tc.q)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("want *ParseError, got %v", err)
			}
			if !errors.Is(err, ErrParse) {
				t.Fatal("errors.Is(err, ErrParse) is false")
			}
			if pe.Line != tc.line || pe.Col != tc.col {
				t.Fatalf("position %d:%d, want %d:%d (%v)", pe.Line, pe.Col, tc.line, tc.col, err)
			}
		})
	}
}

// testdataQueries returns every query of the conformance suite.
func testdataQueries(tb testing.TB) []string {
	tb.Helper()
	files, _ := filepath.Glob("testdata/*.test")
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(l, "eval") {
				continue
			}
			cmd, err := parseEvalCmd(strings.TrimSpace(l))
			if err == nil {
				out = append(out, cmd.query)
			}
		}
	}
	return out
}

// TestTestdataRoundTrip checks String() on every query of the suite.
func TestTestdataRoundTrip(t *testing.T) {
	n := 0
	for _, q := range testdataQueries(t) {
		e, err := ParseExpr(q)
		if err != nil {
			continue
		}
		n++
		e2, err := ParseExpr(e.String())
		if err != nil {
			t.Fatalf("%s: re-parse of %s: %v", q, e, err)
		}
		if e2.String() != e.String() {
			t.Fatalf("%s: %s re-parses as %s", q, e, e2)
		}
	}
	if n < 100 {
		t.Fatalf("only %d parseable queries in testdata", n)
	}
}

func FuzzParseExpr(f *testing.F) {
	for _, tc := range roundTripQueries {
		f.Add(tc.in)
	}
	for _, q := range testdataQueries(f) {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		e, err := ParseExpr(q)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a *ParseError: %v", err)
			}
			return
		}
		s := e.String()
		e2, err := ParseExpr(s)
		if err != nil {
			t.Fatalf("%q parsed, but its String %q does not: %v", q, s, err)
		}
		if e2.String() != s {
			t.Fatalf("%q: String %q re-parses as %q", q, s, e2.String())
		}
	})
}

func TestParseMatchers(t *testing.T) {
	ms, err := ParseMatchers(`{app="a", env=~"p.*"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].String() != `app="a"` || ms[1].String() != `env=~"p.*"` {
		t.Fatalf("matchers %v", ms)
	}
	for _, bad := range []string{`{app="a"} |= "x"`, `{app=~".*"}`, `app="a"`, `{app="a"`} {
		if _, err := ParseMatchers(bad); !errors.Is(err, ErrParse) {
			t.Errorf("%s: want a parse error, got %v", bad, err)
		}
	}
}

// Nesting is bounded wherever the parser nests: parentheses, right- and
// left-associative operator chains (which the parser builds in loops) and
// label filter chains. Queries at the bound format to a string that parses
// again (String parenthesizes every nested operator).
func TestParseDepthLimits(t *testing.T) {
	const n = 100_000
	for name, q := range map[string]string{
		"parens":          strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"binary chain":    "1" + strings.Repeat(" + 1", n),
		"vector chain":    `count_over_time({a="b"}[1m])` + strings.Repeat(` + count_over_time({a="b"}[1m])`, n/10),
		"power chain":     "1" + strings.Repeat(" ^ 1", n),
		"and chain":       `{a="b"} | x="1"` + strings.Repeat(` and x="1"`, n),
		"or chain":        `{a="b"} | x="1"` + strings.Repeat(` or x="1"`, n),
		"filter parens":   `{a="b"} | ` + strings.Repeat("(", n) + `x="1"` + strings.Repeat(")", n),
		"aggregations":    strings.Repeat("sum(", n) + `count_over_time({a="b"}[1m])` + strings.Repeat(")", n),
		"range parens":    `count_over_time(` + strings.Repeat("(", n) + `{a="b"}` + strings.Repeat(")", n) + `[1m])`,
		"label_replace":   strings.Repeat(`label_replace(`, n) + `vector(1)` + strings.Repeat(`, "a", "b", "c", "d")`, n),
		"unwrap filters":  `sum_over_time({a="b"} | unwrap x | y="1"` + strings.Repeat(` and y="1"`, n) + `[1m])`,
		"height of chain": "1" + strings.Repeat(" + 1", maxExprHeight),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseExpr(q)
			if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), "nested too deeply") {
				t.Fatalf("want a nesting error, got %v", err)
			}
		})
	}
	for name, q := range map[string]string{
		"binary chain":  "1" + strings.Repeat(" + 1", maxExprHeight-1),
		"and chain":     `{a="b"} | x="1"` + strings.Repeat(` and x="1"`, maxExprHeight-1),
		"or and chain":  `{a="b"} | x="1"` + strings.Repeat(` or x="1" and y="2"`, maxExprHeight/2-1),
		"sum of counts": strings.Repeat("sum(", maxExprHeight-3) + `count_over_time({a="b"} | x="1" or y="2" [1m])` + strings.Repeat(")", maxExprHeight-3),
		"many stages":   `{a="b"}` + strings.Repeat(` | x="1"`, 10_000),
		"unary":         strings.Repeat("-", n) + "1",
	} {
		t.Run("allowed "+name, func(t *testing.T) {
			e, err := ParseExpr(q)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ParseExpr(e.String()); err != nil {
				t.Fatalf("String does not parse again: %v", err)
			}
		})
	}
}

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

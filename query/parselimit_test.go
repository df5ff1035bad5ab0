package query

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// The attacks of issue 14 (item 7) and their relatives are refused before
// Prometheus' parser sees them: the scan allocates only its stack of
// levels, so the answer does not grow with the parser's quadratic time.
func TestCheckDepthRefuses(t *testing.T) {
	const n = 100_000
	for name, q := range map[string]string{
		"parentheses (issue 14)": strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"function calls":         strings.Repeat("abs(", n) + "x" + strings.Repeat(")", n),
		"aggregations":           strings.Repeat("sum(", n) + "x" + strings.Repeat(")", n),
		"binary chain":           "x" + strings.Repeat(" + x", n),
		"power chain":            "x" + strings.Repeat(" ^ x", n),
		"comparison chain":       "x" + strings.Repeat(" >= bool x", n),
		"set chain":              "x" + strings.Repeat(" OR x", n),
		"unary chain":            strings.Repeat("-", n) + "x",
		"subqueries":             strings.Repeat("(", n) + "x" + strings.Repeat(")[5m:1m]", n),
		"nested chains":          strings.Repeat("(x"+strings.Repeat(" * x", 300)+" + ", 4) + "x" + strings.Repeat(")", 4),
		"chain over parentheses": strings.Repeat("(", 600) + "x" + strings.Repeat(")", 600) + strings.Repeat(" + x", 600),
		"unterminated":           strings.Repeat("(", n),
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckDepth(q, DefaultMaxQueryDepth)
			if !errors.Is(err, ErrQueryTooDeep) {
				t.Fatalf("want ErrQueryTooDeep, got %v", err)
			}
			var de *DepthError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), "parse error: query is nested too deeply: its tree would be more than 1000 levels deep") {
				t.Fatalf("not a parse error naming the limit: %v", err)
			}
			allocs := testing.AllocsPerRun(3, func() { _ = CheckDepth(q, DefaultMaxQueryDepth) })
			if allocs > 40 {
				t.Fatalf("%.0f allocations per check", allocs)
			}
			// Through weft's parser, for the engine and the HTTP API.
			if _, err := NewParser().ParseExpr(q); !errors.Is(err, ErrQueryTooDeep) {
				t.Fatalf("NewParser: %v", err)
			}
		})
	}
}

// Queries within the limit, and brackets and operators that do not nest
// (in strings, comments, matchers), pass the scan unchanged.
func TestCheckDepthAllows(t *testing.T) {
	for name, q := range map[string]string{
		"grafana":           `histogram_quantile(0.99, sum by (le, job) (rate(http_request_duration_seconds_bucket{job=~"api|web", code!~"5.."}[5m]))) > 0.5 and on (job) up == 1`,
		"at the limit":      strings.Repeat("(", DefaultMaxQueryDepth-1) + "1" + strings.Repeat(")", DefaultMaxQueryDepth-1),
		"chain at limit":    "x" + strings.Repeat(" + x", DefaultMaxQueryDepth-1),
		"strings":           `{a="` + strings.Repeat("((", 5000) + `\"` + strings.Repeat("+", 5000) + `"} + {b='` + strings.Repeat("(", 5000) + `\''}`,
		"raw string":        "{a=`" + strings.Repeat(`(\`, 5000) + "`}",
		"comment":           "x # " + strings.Repeat("(-", 5000) + "\n+ y",
		"matchers":          "up{" + strings.Repeat(`a!="1",b=~"2",`, 2000) + "}",
		"words":             "sum by (order, android, unlessx, or_x) (x_and_y{orange=\"1\"})",
		"utf-8 label names": `{"foo.bar"="baz", "a(b"="c"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if err := CheckDepth(q, DefaultMaxQueryDepth); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := CheckDepth("x"+strings.Repeat(" + x", DefaultMaxQueryDepth), DefaultMaxQueryDepth); !errors.Is(err, ErrQueryTooDeep) {
		t.Fatalf("one past the limit: %v", err)
	}
}

// The engine built by NewEngine refuses deep queries with a parse error,
// which the HTTP API answers as bad_data (400).
func TestEngineRefusesDeepQuery(t *testing.T) {
	eng := NewEngine(DefaultEngineOptions())
	q := strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000)
	_, err := eng.NewInstantQuery(context.Background(), storage.QueryableFunc(func(int64, int64) (storage.Querier, error) {
		return storage.NoopQuerier(), nil
	}), nil, q, time.Unix(0, 0))
	if !errors.Is(err, ErrQueryTooDeep) {
		t.Fatalf("want ErrQueryTooDeep, got %v", err)
	}
	if _, err := NewParser().ParseMetricSelector("{" + strings.Repeat("(", 2000)); !errors.Is(err, ErrQueryTooDeep) {
		t.Fatalf("selector: %v", err)
	}
	if _, err := NewParser().ParseMetricSelectors([]string{"up", strings.Repeat("[", 2000)}); !errors.Is(err, ErrQueryTooDeep) {
		t.Fatalf("selectors: %v", err)
	}
}

// FuzzCheckDepth: the scan never panics, CheckDepth refuses exactly above
// the bound, and the bound holds: Prometheus' parser builds no deeper tree.
func FuzzCheckDepth(f *testing.F) {
	for _, q := range []string{
		`sum by (job) (rate(x{a="b"}[5m])) / on (job) group_left sum(y)`,
		`-x ^ -2 ^ 3 atan2 z unless w`, `x[5m:1m] offset -5m @ end()`,
		`{a="(\"("} + {'b'=~'\''} # (((`, "topk(3, `x`)", `1e-5 + 0x1F - Inf`,
		`label_replace(up, "a", "$1", "b", "(.*)")`, `x[5m+1m]`, `((((`, `)))`,
	} {
		f.Add(q)
	}
	p := parser.NewParser(parser.Options{})
	f.Fuzz(func(t *testing.T, q string) {
		if len(q) > 4096 {
			return
		}
		d := treeDepth(q, math.MaxInt)
		if d < 0 {
			t.Fatalf("bound %d", d)
		}
		if CheckDepth(q, d) != nil || (d > 0 && CheckDepth(q, d-1) == nil) {
			t.Fatalf("CheckDepth disagrees with the bound %d", d)
		}
		expr, err := p.ParseExpr(q)
		if err != nil {
			return
		}
		if h := treeHeight(expr); h > d {
			t.Fatalf("%q: tree height %d, bound %d", q, h, d)
		}
	})
}

func treeHeight(n parser.Node) int {
	h := 0
	for _, c := range parser.Children(n) {
		h = max(h, treeHeight(c))
	}
	return h + 1
}

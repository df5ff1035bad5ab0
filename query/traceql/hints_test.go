package traceql

import (
	"strings"
	"testing"

	"github.com/weftdb/weft/storage/traceentry"
)

func renderHints(h traceentry.Hints) string {
	if len(h.Conditions) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range h.Conditions {
		f := c.Field.Intrinsic.String()
		if c.Field.Scope != traceentry.ScopeIntrinsic {
			f = c.Field.Scope.String() + "." + c.Field.Name
		}
		parts = append(parts, f+" "+c.Op.String()+" "+c.Operand.String())
	}
	mode := "any"
	if h.AllConditions {
		mode = "all"
	}
	return mode + "[" + strings.Join(parts, ", ") + "]"
}

func TestHints(t *testing.T) {
	for _, tc := range []struct{ q, want string }{
		{`{ }`, `none`},
		{`{ true }`, `none`},
		{`{ resource.service.name = "x" }`, `all[resource.service.name = "x"]`},
		{`{ resource.service.name = "x" && duration > 1s && status = error }`, `all[resource.service.name = "x", duration > 1000000000, status = 2]`},
		{`{ kind = server && span:kind != client }`, `all[kind = 2, kind != 3]`},
		{`{ .a = 1.5 && span.b = true && .c >= -3 }`, `all[.a = 1.5, span.b = true, .c >= -3]`},
		{`{ 5 < .a }`, `all[.a > 5]`},
		{`{ "x" = name }`, `all[name = "x"]`},
		{`{ .a =~ "x.*" }`, `all[.a =~ "^(?:x.*)$"]`},
		{`{ .a !~ "x|y" }`, `all[.a !~ "^(?:x|y)$"]`},
		{`{ span:id = "00AB" && trace:id = "0001" }`, `all[span:id = "ab", trace:id = "1"]`},
		{`{ event.x = "a" && link:spanID = "1" }`, `all[event.x = "a", link:spanID = "1"]`},
		{`{ .a > 10 * 1024 }`, `all[.a > 10240]`},
		// partial: non-simple conjuncts are left out
		{`{ .a = 1 && .b + 1 = 2 && !.c && .d = nil }`, `all[.a = 1]`},
		{`{ .a = 1 || .b = 2 }`, `any[.a = 1, .b = 2]`},
		{`{ .a = 1 || .b + 1 = 2 }`, `none`},
		{`{ .a = 1 || (.b = 2 && .c = 3) }`, `none`},
		{`{ !(.a = 1) }`, `none`},
		{`{ .a != nil }`, `none`},
		{`{ .a = .b }`, `none`},
		{`{ .a = 1 } && { .b = 2 && .c = 3 }`, `all[.b = 2, .c = 3]`},
		{`{ .a = 1 || .d = 4 } && { .b = 2 }`, `all[.b = 2]`},
		{`{ .a = 1 } || { .b = 2 }`, `any[.a = 1, .b = 2]`},
		{`{ .a = 1 } || { }`, `none`},
		{`{ } && { .b = 2 }`, `all[.b = 2]`},
		{`{ .a = 1 } > { .b = 2 && .c = 3 }`, `all[.b = 2, .c = 3]`},
		{`{ .a = 1 } !> { .b = 2 }`, `all[.b = 2]`},
		{`{ .a = 1 && .x = 9 } !< { }`, `none`},
		{`{ .a = 1 } &>> { .b = 2 }`, `all[.a = 1]`},
		{`{ .a = 1 } | { .b = 2 }`, `all[.a = 1, .b = 2]`},
		{`{ .a = 1 } | count() > 2`, `all[.a = 1]`},
		{`{ .a = 1 } | by(.x) | { .b = 2 } | select(.c)`, `all[.a = 1, .b = 2]`},
		{`({ .a = 1 } && { .c = 3 }) | { .b = 2 }`, `all[.a = 1]`}, // either side is necessary; ties keep the first
		{`({ .a = 1 } || { .c = 3 }) | { .b = 2 }`, `all[.b = 2]`},
		{`{ } | max(duration) > 1s`, `all[duration > 1000000000]`},
		{`{ .a = 1 } | max(duration) >= 1s`, `all[.a = 1, duration >= 1000000000]`},
		{`{ .a = 1 } | min(span.x) < 3`, `all[.a = 1, span.x < 3]`},
		{`{ .a = 1 } | max(duration) < 1s`, `all[.a = 1]`},
		{`{ .a = 1 } | avg(duration) > 1s`, `all[.a = 1]`},
		{`max(duration) > 3s | { status = error || .http.status = 500 }`, `any[status = 2, .http.status = 500]`},
		{`count() > 1`, `none`},
		{`{ traceDuration > 5s && rootServiceName = "api" }`, `all[traceDuration > 5000000000, rootServiceName = "api"]`},
	} {
		q, err := Parse(tc.q)
		if err != nil {
			t.Errorf("%s: %v", tc.q, err)
			continue
		}
		if got := renderHints(q.Hints()); got != tc.want {
			t.Errorf("%s: hints %s, want %s", tc.q, got, tc.want)
		}
	}
}

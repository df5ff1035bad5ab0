package traceql

import "testing"

func TestParseLenient(t *testing.T) {
	for _, tc := range []struct{ q, want string }{
		{`{ resource.service.name = "api" }`, `{ resource.service.name = "api" }`},
		{`{ resource.a = "x" && span.b = }`, `{ resource.a = "x" }`},
		{`{ resource.a = "x" && span.b = `, `{ resource.a = "x" }`},
		{`{ .a = "x" && .b = "unterminated`, `{ .a = "x" }`},
		{`{ .a = 1 && .b > 2 && .c =~ }`, `{ .a = 1 && .b > 2 }`},
		{`{ .a = 1 && (.b = 2 || .c = 3) && .d }`, `{ .a = 1 && (.b = 2 || .c = 3) && .d }`},
		{`{ .a = 1 && (.b = 2 || .c = }`, `{ .a = 1 }`},
		{`{ .a = 1 || .b = `, `{ }`},
		{`{ resource.cluster = }`, `{ }`},
		{`{ name = "x" } && {`, `{ name = "x" }`},
		{`{ name = "x" && 1 = "a" }`, `{ name = "x" }`},
		{`{ status = error && kind = }`, `{ status = error }`},
		{`{`, `{ }`},
		{``, `{ }`},
		{`garbage`, `{ }`},
		{`{ .a = 1 && .a = 1 && }`, `{ .a = 1 }`},
		{`{ .a = "x&&y" && .b = }`, `{ .a = "x&&y" }`},
	} {
		if got := ParseLenient(tc.q).String(); got != tc.want {
			t.Errorf("ParseLenient(%q) = %s, want %s", tc.q, got, tc.want)
		}
	}
}

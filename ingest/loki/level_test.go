package loki

import "testing"

func TestDetectLevel(t *testing.T) {
	cases := []struct{ line, want string }{
		{`{"level":"error","msg":"boom"}`, "error"},
		{`{"msg":"x", "severity" : "WARNING"}`, "warn"},
		{`{"level":50,"msg":"pino"}`, "error"},
		{`{"lvl":"dbg"}`, "debug"},
		{`level=info msg="started"`, "info"},
		{`ts=1 level="warn" msg=x`, "warn"},
		{`ts=1 loglevel=error msg=x level=debug`, "debug"},
		{`2024-01-01 ERROR something failed`, "error"},
		{`[Warn] disk almost full`, "warn"},
		{`panic: runtime error`, "fatal"},
		{`errors happened; information`, "unknown"},
		{`just a line`, "unknown"},
		{``, "unknown"},
		{`level=NOTICE`, "info"},
		{`level=custom`, "custom"},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			if got := detectLevel(c.line); got != c.want {
				t.Fatalf("detectLevel(%q) = %q, want %q", c.line, got, c.want)
			}
		})
	}
}

package redact

import "testing"

// BenchmarkString measures the cost of the four built-ins on a typical log
// line without a secret (the common case) and with one.
func BenchmarkString(b *testing.B) {
	r, err := New(Options{Rules: []Rule{{Builtin: "email"}, {Builtin: "bearer_token"}, {Builtin: "aws_key"}, {Builtin: "api_key"}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, line string }{
		{"clean", `level=info ts=2026-12-02T08:00:00Z msg="step done" step=1200 loss=0.2314 rank=3 gpu=GPU-4b1c run_id=r42`},
		{"secret", `level=warn msg="retry" url=https://api.example/v1?api_key=abcdef0123456789 user=bob@corp.example`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.line)))
			for b.Loop() {
				r.String(LogLines, bc.line)
			}
		})
	}
}

package logpattern

import (
	"fmt"
	"testing"
)

// BenchmarkMiner mines realistic lines of eight templates with varying
// IDs, numbers and times; one op is one line. The Loki patterns endpoint
// mines up to 100,000 lines per request (api.LokiOptions.PatternMaxLines).
func BenchmarkMiner(b *testing.B) {
	templates := []string{
		`level=info ts=2026-11-30T12:%02d:%02d.%03dZ caller=http.go:%d msg="request served" method=GET path=/api/users/%d status=200 duration=%dms`,
		`level=warn ts=2026-11-30T12:%02d:%02d.%03dZ caller=pool.go:%d msg="slow query" table=orders rows=%d took=%dms`,
		`level=error ts=2026-11-30T12:%02d:%02d.%03dZ caller=client.go:%d msg="upstream failed" host=10.0.%d.%d err="connection refused"`,
		`{"level":"info","time":"2026-11-30T12:%02d:%02d.%03dZ","line":%d,"msg":"job finished","job_id":"job-%d","duration_ms":%d}`,
		`2026-11-30 12:%02d:%02d,%03d INFO  [worker-%d] Processed batch %d of %d records`,
		`%02d:%02d:%03d GET /static/app.%d.js HTTP/1.1 200 %d "-" "Mozilla/5.0" %dus`,
		`I1130 12:%02d:%02d.%03d   %d reflector.go:255] Listing and watching *v1.Pod from pkg/mod/k8s.io/client-go@v0.%d.%d/tools/cache`,
		`kernel: [%d.%d%d] eth%d: link up, %d Mbps, full duplex, queue %d`,
	}
	lines := make([]string, 4096)
	for i := range lines {
		lines[i] = fmt.Sprintf(templates[i%len(templates)], i%60, i%59, i%1000, i%500, i*7919%100000, i%321)
	}
	b.ReportAllocs()
	m := New(DefaultOptions())
	var bytes int64
	for i := 0; b.Loop(); i++ {
		l := lines[i%len(lines)]
		bytes += int64(len(l))
		m.Add(l, int64(i/1000))
	}
	b.SetBytes(bytes / int64(b.N))
	ps := m.Patterns()
	if len(ps) < 8 || len(ps) > 64 {
		for _, p := range ps {
			b.Log(p.Total, p.Text)
		}
		b.Fatalf("%d patterns from 8 templates", len(ps))
	}
	b.ReportMetric(float64(len(ps)), "patterns")
}

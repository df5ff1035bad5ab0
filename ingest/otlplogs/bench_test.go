package otlplogs

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/weftdb/weft/storage/logstore"
)

type discardPusher struct{}

func (discardPusher) Push(context.Context, []logstore.PushStream) error { return nil }

// BenchmarkIngest maps and validates a typical Collector batch (one pod
// resource, 1,000 records with a trace context and three attributes) into
// a discarding store: the receiver's cost per record without storage.
func BenchmarkIngest(b *testing.B) {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	ra := rl.Resource().Attributes()
	ra.PutStr("service.name", "trainer")
	ra.PutStr("k8s.pod.name", "trainer-0")
	ra.PutStr("k8s.namespace.name", "ml")
	ra.PutStr("ai.run.id", "r42")
	ra.PutStr("host.name", "gpu-node-3")
	ra.PutStr("telemetry.sdk.language", "python")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("trainer.loop")
	const n = 1000
	now := time.Now()
	for i := range n {
		r := sl.LogRecords().AppendEmpty()
		r.SetTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(i) * time.Millisecond)))
		r.SetSeverityText("INFO")
		r.SetSeverityNumber(plog.SeverityNumberInfo)
		r.SetTraceID(pcommon.TraceID{1, 2, 3, byte(i)})
		r.SetSpanID(pcommon.SpanID{4, 5, byte(i)})
		r.Body().SetStr("step " + strconv.Itoa(i) + " loss=0.25 lr=3e-4 tokens_per_s=91234")
		r.Attributes().PutInt("step", int64(i))
		r.Attributes().PutStr("gpu.index", "4")
		r.Attributes().PutStr("code.function", "train_step")
	}
	in, err := New(discardPusher{}, DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := in.Ingest(ctx, ld)
		if err != nil || res.Accepted != n {
			b.Fatalf("%+v %v", res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
	b.ReportMetric(0, "ns/op")
}

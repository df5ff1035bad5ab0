package otlplogs

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/storage/logstore"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// fakePusher records what the Ingester writes; err fails every push.
type fakePusher struct {
	streams []logstore.PushStream
	err     error
}

func (p *fakePusher) Push(_ context.Context, ss []logstore.PushStream) error {
	if p.err != nil {
		return p.err
	}
	p.streams = append(p.streams, ss...)
	return nil
}

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newTestIngester(tb testing.TB, p loki.Pusher, mod func(*Options)) *Ingester {
	tb.Helper()
	opts := DefaultOptions()
	opts.Loki.Now = func() time.Time { return testNow }
	if mod != nil {
		mod(&opts)
	}
	in, err := New(p, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// richLogs exercises every mapping rule.
func richLogs() plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	ra := rl.Resource().Attributes()
	ra.PutStr("service.name", "trainer")
	ra.PutStr("k8s.pod.name", "trainer-0")
	ra.PutStr("k8s.namespace.name", "ml")
	ra.PutStr("ai.run.id", "r42")
	ra.PutStr("k8s.deployment.name", "trainer")
	ra.PutStr("cloud.region", "eu-west-1")
	ra.PutStr("process.pid.text", "77")
	ra.PutInt("telemetry.sdk.version", 3)
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("torch.distributed")
	sl.Scope().SetVersion("2.5")
	sl.Scope().Attributes().PutStr("lib.kind", "collective")
	base := pcommon.NewTimestampFromTime(testNow.Add(-time.Minute))

	r := sl.LogRecords().AppendEmpty()
	r.SetTimestamp(base)
	r.Body().SetStr("step 100 loss=0.25")
	r.SetSeverityText("INFO")
	r.SetSeverityNumber(plog.SeverityNumberInfo)
	r.SetTraceID(pcommon.TraceID{0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c})
	r.SetSpanID(pcommon.SpanID{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74})
	r.SetFlags(plog.DefaultLogRecordFlags.WithIsSampled(true))
	r.Attributes().PutStr("gpu.index", "4")
	r.Attributes().PutStr("lib.kind", "override") // record wins over scope
	r.Attributes().PutStr("level", "debug")       // severity wins over a level attribute
	r.SetObservedTimestamp(base + 5)              // both set: observed_timestamp metadata
	nested := r.Attributes().PutEmptyMap("http")
	nested.PutInt("status.code", 200)
	nested.PutEmptyMap("request").PutStr("method", "GET") // flattened: http_request_method

	r = sl.LogRecords().AppendEmpty()
	r.SetObservedTimestamp(base + 1) // no timestamp: observed time
	r.Body().SetEmptyMap().PutStr("msg", "nccl timeout")
	r.SetSeverityNumber(plog.SeverityNumberError2) // no text: level from number

	r = sl.LogRecords().AppendEmpty()
	r.SetTimestamp(base + 2)
	r.Body().SetInt(42) // no severity: level detected from the line

	// A resource without service.name and without context keys.
	rl = ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("host.name", "gpu-node-3")
	rl.Resource().Attributes().PutStr("deployment.environment", "prod")
	r = rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	r.Body().SetStr("warning: ECC errors rising") // no timestamps at all: now
	return ld
}

func render(ss []logstore.PushStream) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "stream %s\n", s.Labels)
		for _, e := range s.Entries {
			fmt.Fprintf(&b, "  %d %q %s\n", e.Timestamp, e.Line, e.Metadata)
		}
	}
	return b.String()
}

func TestIngestGolden(t *testing.T) {
	p := &fakePusher{}
	in := newTestIngester(t, p, nil)
	res, err := in.Ingest(context.Background(), richLogs())
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 4 || res.Rejected != 0 || res.Message != "" {
		t.Fatalf("result %+v, want 4 accepted", res)
	}
	got := render(p.streams)
	path := filepath.Join("testdata", "rich.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("mapping differs from %s (run with -update and review):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestIngestWorkloadOff(t *testing.T) {
	p := &fakePusher{}
	in := newTestIngester(t, p, func(o *Options) { o.Workload.Rules = nil })
	if _, err := in.Ingest(context.Background(), richLogs()); err != nil {
		t.Fatal(err)
	}
	ls := p.streams[0].Labels
	if ls.Get("pod") != "" || ls.Get("k8s_pod_name") != "trainer-0" || ls.Get("k8s_namespace_name") != "ml" {
		t.Fatalf("labels %s: want Loki's names without context mapping", ls)
	}
	if md := p.streams[0].Entries[0].Metadata; md.Get("ai_run_id") != "r42" {
		t.Fatalf("metadata %s: want ai_run_id", md)
	}
}

func TestIngestRejections(t *testing.T) {
	now := pcommon.NewTimestampFromTime(testNow)
	cases := []struct {
		name               string
		build              func(sl plog.LogRecordSlice)
		accepted, rejected int64
		allRejected        bool
		msg                string
	}{
		{"line too long", func(rs plog.LogRecordSlice) {
			r := rs.AppendEmpty()
			r.SetTimestamp(now)
			r.Body().SetStr(strings.Repeat("x", 300<<10))
			r = rs.AppendEmpty()
			r.SetTimestamp(now)
			r.Body().SetStr("ok")
		}, 1, 1, false, "max entry size"},
		{"too old", func(rs plog.LogRecordSlice) {
			r := rs.AppendEmpty()
			r.SetTimestamp(now - pcommon.Timestamp(8*24*time.Hour))
			r.Body().SetStr("old")
		}, 0, 1, true, "too old"},
		{"too many attributes", func(rs plog.LogRecordSlice) {
			r := rs.AppendEmpty()
			r.SetTimestamp(now)
			for i := range 200 {
				r.Attributes().PutStr(fmt.Sprintf("a%d", i), "v")
			}
			r = rs.AppendEmpty()
			r.SetTimestamp(now)
		}, 1, 1, false, "pairs"},
		{"invalid utf-8 attribute", func(rs plog.LogRecordSlice) {
			r := rs.AppendEmpty()
			r.SetTimestamp(now)
			r.Attributes().PutStr("k", "\xff")
		}, 0, 1, true, "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", "svc")
			c.build(rl.ScopeLogs().AppendEmpty().LogRecords())
			p := &fakePusher{}
			res, err := newTestIngester(t, p, nil).Ingest(context.Background(), ld)
			if c.allRejected != errors.Is(err, ErrAllRejected) {
				t.Fatalf("err %v, want ErrAllRejected %v", err, c.allRejected)
			}
			if !c.allRejected && err != nil {
				t.Fatal(err)
			}
			if res.Accepted != c.accepted || res.Rejected != c.rejected || !strings.Contains(res.Message, c.msg) {
				t.Fatalf("result %+v, want %d accepted, %d rejected, message with %q", res, c.accepted, c.rejected, c.msg)
			}
			stored := 0
			for _, s := range p.streams {
				stored += len(s.Entries)
			}
			if int64(stored) != c.accepted {
				t.Fatalf("%d entries stored, want %d", stored, c.accepted)
			}
		})
	}
}

func TestIngestStoreError(t *testing.T) {
	boom := errors.New("disk on fire")
	in := newTestIngester(t, &fakePusher{err: boom}, nil)
	_, err := in.Ingest(context.Background(), richLogs())
	if !errors.Is(err, boom) || errors.Is(err, ErrAllRejected) {
		t.Fatalf("err %v, want the store's", err)
	}
}

func TestNewInvalidWorkload(t *testing.T) {
	opts := DefaultOptions()
	opts.Workload.Rules = append(opts.Workload.Rules, opts.Workload.Rules[0])
	if _, err := New(&fakePusher{}, opts); err == nil {
		t.Fatal("duplicate workload rule accepted")
	}
}

func TestSeverityLevel(t *testing.T) {
	for n, want := range map[plog.SeverityNumber]string{
		0: "", 1: "trace", 4: "trace", 5: "debug", 9: "info", 13: "warn", 16: "warn", 17: "error", 21: "fatal", 24: "fatal", 25: "",
	} {
		if got := severityLevel(n); got != want {
			t.Errorf("severityLevel(%d) = %q, want %q", n, got, want)
		}
	}
}

// k8sAIResource is what a Collector with the k8sattributes and
// resourcedetection processors sends for a training pod: 20 attributes, 17
// of which would be stream labels (context keys and Loki's index labels).
func k8sAIResource(ra pcommon.Map) {
	for k, v := range map[string]string{
		"service.name": "trainer", "service.namespace": "ml", "service.instance.id": "trainer-0-abc",
		"service.version": "1.4.2", "deployment.environment.name": "prod",
		"k8s.cluster.name": "gpu-eu-1", "k8s.namespace.name": "ml-train", "k8s.pod.name": "trainer-0",
		"k8s.pod.uid": "9f3c", "k8s.container.name": "pytorch", "k8s.node.name": "gpu-node-7",
		"k8s.statefulset.name": "trainer", "host.name": "gpu-node-7", "cloud.region": "eu-west-1",
		"cloud.availability_zone": "eu-west-1a", "ai.run.id": "r77", "ai.model.name": "llama-70b",
		"ai.model.version": "v3", "ai.team": "research", "gpu.uuid": "GPU-1234",
	} {
		ra.PutStr(k, v)
	}
}

func TestIngestManyResourceAttributes(t *testing.T) {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	k8sAIResource(rl.Resource().Attributes())
	rl.Resource().Attributes().PutStr("k8s.deployment.name", strings.Repeat("d", 3000)) // too long for a label
	r := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	r.SetTimestamp(pcommon.NewTimestampFromTime(testNow))
	r.Body().SetStr("step 1")

	for _, limit := range []int{15, 30} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			p := &fakePusher{}
			in := newTestIngester(t, p, func(o *Options) { o.Loki.MaxLabelNamesPerStream = limit })
			res, err := in.Ingest(context.Background(), ld)
			if err != nil || res.Accepted != 1 || res.Rejected != 0 {
				t.Fatalf("result %+v, err %v: want the record stored", res, err)
			}
			ls, md := p.streams[0].Labels, p.streams[0].Entries[0].Metadata
			wantLabels := min(limit+1, 19) // service_name + 18 candidates, job the first (the long one never is a label)
			if ls.Len() != wantLabels {
				t.Fatalf("%d labels %s, want %d", ls.Len(), ls, wantLabels)
			}
			// The first candidates are labels: service_name, job, then context keys.
			if got := ls.Get("job"); got != "ml/trainer" {
				t.Errorf("job %q, want ml/trainer (service.namespace/service.name, as the resource's metrics have it)", got)
			}
			for _, n := range []string{"service_name", "namespace", "pod", "container", "node", "cluster", "host", "model", "run_id"} {
				if !ls.Has(n) {
					t.Errorf("label %s missing from %s", n, ls)
				}
			}
			// Every candidate is either a label or metadata, under one name.
			for _, n := range []string{"service_namespace", "service_instance_id", "deployment_environment_name", "k8s_statefulset_name", "cloud_region", "cloud_availability_zone", "gpu_uuid", "team", "model_version"} {
				if ls.Has(n) == md.Has(n) {
					t.Errorf("%s: label %v, metadata %v; want exactly one", n, ls.Has(n), md.Has(n))
				}
			}
			if md.Get("k8s_deployment_name") == "" || ls.Has("k8s_deployment_name") {
				t.Errorf("a value too long for a label must be metadata: labels %s", ls)
			}
			if md.Get("k8s_pod_uid") != "9f3c" || md.Get("service_version") != "1.4.2" {
				t.Errorf("non-index attributes missing from metadata %s", md)
			}
		})
	}
}

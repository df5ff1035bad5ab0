package api

import (
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/weftdb/weft/storage/logstore"
)

// otlpGRPCFuzzTarget is one OTLP service under the gRPC fuzzer: its Export
// method, a decoder that says whether bytes are a valid request of it, and
// a valid request that must be accepted after any fuzz input.
type otlpGRPCFuzzTarget struct {
	method string
	decode func([]byte) error
	good   []byte
}

// startOTLPGRPCFuzz serves the three OTLP signals on one gRPC server over
// loopback (stores that accept everything and keep nothing) and returns a
// client that sends raw bytes as the request message.
func startOTLPGRPCFuzz(tb testing.TB) *grpc.ClientConn {
	tb.Helper()
	metrics := newMetricsSignal(&rwFakeAppendable{}, DefaultOTLPOptions())
	logs := newLogsSignal(pusherFunc(func(context.Context, []logstore.PushStream) error { return nil }), DefaultOTLPLogsOptions())
	traces := newTracesSignal(&countingPusher{}, DefaultOTLPTracesOptions())
	for _, s := range []*otlpSignal{metrics, logs, traces} {
		if s.initErr != nil {
			tb.Fatal(s.initErr)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	g := grpc.NewServer(otlpGRPCServerOptions(1<<20, nil)...)
	metrics.register(g)
	logs.register(g)
	traces.register(g)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(newOTLPRawCodec())))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		g.Stop()
		<-done
	})
	return conn
}

// fuzzOTLPGRPC sends arbitrary bytes as the Export request of one service:
// the server must never panic, must answer INVALID_ARGUMENT for bytes that
// are not a request of the service, OK or INVALID_ARGUMENT (every item
// invalid) for those that are, and accept a valid request afterwards.
func fuzzOTLPGRPC(f *testing.F, target func(testing.TB) otlpGRPCFuzzTarget) {
	tg := target(f)
	f.Add(tg.good)
	f.Add([]byte{})
	f.Add([]byte("\xff\xff\xff not protobuf"))
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})             // resource with an empty resource
	f.Add([]byte{0x0a, 0x05, 0x12, 0x03, 0x0a, 0x01}) // truncated inner message
	conn := startOTLPGRPCFuzz(f)
	call := func(b []byte) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out otlpRawMessage
		return conn.Invoke(ctx, tg.method, &otlpRawMessage{b: b}, &out)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := call(b)
		code := status.Code(err)
		if tg.decode(b) != nil {
			if code != codes.InvalidArgument {
				t.Fatalf("undecodable request: %v, want InvalidArgument", err)
			}
		} else if code != codes.OK && code != codes.InvalidArgument {
			t.Fatalf("decodable request: %v, want OK or InvalidArgument", err)
		}
		if err := call(tg.good); err != nil {
			t.Fatalf("valid request after fuzz input: %v", err)
		}
	})
}

func FuzzOTLPGRPCMetrics(f *testing.F) {
	fuzzOTLPGRPC(f, func(tb testing.TB) otlpGRPCFuzzTarget {
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("service.name", "fuzz")
		m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("fuzz_canary")
		p := m.SetEmptyGauge().DataPoints().AppendEmpty()
		p.SetTimestamp(1)
		p.SetDoubleValue(1)
		good, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
		if err != nil {
			tb.Fatal(err)
		}
		return otlpGRPCFuzzTarget{
			method: "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
			decode: func(b []byte) error { return pmetricotlp.NewExportRequest().UnmarshalProto(b) },
			good:   good,
		}
	})
}

func FuzzOTLPGRPCLogs(f *testing.F) {
	fuzzOTLPGRPC(f, func(tb testing.TB) otlpGRPCFuzzTarget {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "fuzz")
		r := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		r.SetTimestamp(pcommon.NewTimestampFromTime(time.Now())) // within the log store's window
		r.Body().SetStr("fuzz canary")
		good, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
		if err != nil {
			tb.Fatal(err)
		}
		return otlpGRPCFuzzTarget{
			method: "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
			decode: func(b []byte) error { return plogotlp.NewExportRequest().UnmarshalProto(b) },
			good:   good,
		}
	})
}

func FuzzOTLPGRPCTraces(f *testing.F) {
	fuzzOTLPGRPC(f, func(tb testing.TB) otlpGRPCFuzzTarget {
		good, err := ptraceotlp.NewExportRequestFromTraces(testTraces()).MarshalProto()
		if err != nil {
			tb.Fatal(err)
		}
		return otlpGRPCFuzzTarget{
			method: "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
			decode: func(b []byte) error { return ptraceotlp.NewExportRequest().UnmarshalProto(b) },
			good:   good,
		}
	})
}

package api_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/util/teststorage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"

	"github.com/weftdb/weft/api"
)

// startOTLPGRPC serves the OTLP gRPC receiver on a loopback port.
func startOTLPGRPC(tb testing.TB, app *flakyAppendable, opts api.OTLPOptions) *grpc.ClientConn {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := grpc.NewServer(api.OTLPGRPCServerOptions(opts)...)
	api.RegisterOTLPGRPC(s, app, opts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		s.Stop()
		<-done
	})
	return conn
}

func TestOTLPGRPC(t *testing.T) {
	db := teststorage.New(t)
	flaky := &flakyAppendable{AppendableV2: db}
	opts := api.DefaultOTLPOptions()
	opts.MaxRequestBytes = 64 << 10
	conn := startOTLPGRPC(t, flaky, opts)
	client := pmetricotlp.NewGRPCClient(conn)

	big := otlpGauge("big")
	big.ResourceMetrics().At(0).Resource().Attributes().PutStr("padding", strings.Repeat("x", 70<<10))

	cases := []struct {
		name     string
		md       pmetric.Metrics
		gzip     bool
		fail     bool
		code     codes.Code
		rejected int64
		msg      string
		series   int
	}{
		{name: "rich", md: otlpRich(t), code: codes.OK, series: 14},
		{name: "partial success, gzip", md: otlpMixed(), gzip: true, code: codes.OK, rejected: 1, msg: "invalid label name", series: 15},
		{name: "all invalid", md: otlpAllBad(), code: codes.InvalidArgument, msg: "invalid label name", series: 15},
		{name: "too many labels", md: otlpManyLabels(1000), code: codes.InvalidArgument, msg: "limits.remote_write.max_labels_per_series", series: 15},
		{name: "too large", md: big, code: codes.ResourceExhausted, series: 15},
		{name: "storage unavailable", md: otlpGauge("g1"), fail: true, code: codes.Unavailable, msg: "no space left", series: 15},
		{name: "recovered", md: otlpGauge("g2"), code: codes.OK, series: 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flaky.fail = c.fail
			var callOpts []grpc.CallOption
			if c.gzip {
				callOpts = append(callOpts, grpc.UseCompressor(gzip.Name))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := client.Export(ctx, pmetricotlp.NewExportRequestFromMetrics(c.md), callOpts...)
			st := status.Convert(err)
			if st.Code() != c.code {
				t.Fatalf("code %v (%v), want %v", st.Code(), err, c.code)
			}
			if c.code == codes.OK {
				ps := resp.PartialSuccess()
				if ps.RejectedDataPoints() != c.rejected || !strings.Contains(ps.ErrorMessage(), c.msg) {
					t.Fatalf("partial success %d %q, want %d %q", ps.RejectedDataPoints(), ps.ErrorMessage(), c.rejected, c.msg)
				}
			} else if !strings.Contains(st.Message(), c.msg) {
				t.Fatalf("message %q lacks %q", st.Message(), c.msg)
			}
			if c.code == codes.Unavailable {
				var ri *errdetails.RetryInfo
				for _, d := range st.Details() {
					if r, ok := d.(*errdetails.RetryInfo); ok {
						ri = r
					}
				}
				if ri == nil || ri.GetRetryDelay().AsDuration() != api.DefaultOTLPRetryAfter {
					t.Fatalf("RetryInfo %v, want %v", ri, api.DefaultOTLPRetryAfter)
				}
			}
			if n := countSeries(t, db); n != c.series {
				t.Fatalf("%d series stored, want %d", n, c.series)
			}
		})
	}

	t.Run("logs service not registered", func(t *testing.T) {
		_, err := plogotlp.NewGRPCClient(conn).Export(context.Background(), plogotlp.NewExportRequestFromLogs(plog.NewLogs()))
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("logs Export: %v, want Unimplemented", err)
		}
	})
}

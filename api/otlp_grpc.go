package api

import (
	"context"
	"time"

	promstorage "github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP exporters may gzip their requests.
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// OTLPGRPCServerOptions returns the grpc.ServerOptions the OTLP gRPC
// server needs: a receive limit of opts.MaxRequestBytes (after
// decompression; larger requests fail with RESOURCE_EXHAUSTED before they
// are decoded). Pass them to grpc.NewServer for the -otlp-grpc-addr server.
func OTLPGRPCServerOptions(opts OTLPOptions) []grpc.ServerOption {
	max := opts.MaxRequestBytes
	if max <= 0 {
		max = DefaultOTLPMaxRequestBytes
	}
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(int(max))}
}

// RegisterOTLPGRPC registers the OTLP MetricsService (Export) on s. The
// logs service is registered apart (RegisterOTLPLogsGRPC); traces are not
// implemented, so their clients get UNIMPLEMENTED. Export answers OK with partial_success when
// some points are rejected, INVALID_ARGUMENT when all are, and UNAVAILABLE
// with a RetryInfo detail when storage fails. Create s with
// OTLPGRPCServerOptions(opts) for the request size limit.
func RegisterOTLPGRPC(s *grpc.Server, app promstorage.AppendableV2, opts OTLPOptions) {
	pmetricotlp.RegisterGRPCServer(s, &otlpGRPCServer{r: newOTLPReceiver(app, opts)})
}

type otlpGRPCServer struct {
	pmetricotlp.UnimplementedGRPCServer
	r *otlpReceiver
}

func (s *otlpGRPCServer) Export(ctx context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	resp := pmetricotlp.NewExportResponse()
	if s.r.err != nil {
		return resp, status.Error(codes.Internal, s.r.err.Error())
	}
	res, err := s.r.ingest(ctx, req.Metrics())
	switch classifyOTLP(res, err) {
	case otlpUnavailable:
		s.r.logger.Warn("otlp_ingest_failed", "err", err)
		return resp, retryableStatus(err.Error(), s.r.retryAfter)
	case otlpInvalid:
		return resp, status.Error(codes.InvalidArgument, res.Message)
	}
	if res.Rejected > 0 || res.Message != "" {
		resp.PartialSuccess().SetRejectedDataPoints(res.Rejected)
		resp.PartialSuccess().SetErrorMessage(res.Message)
	}
	return resp, nil
}

// retryableStatus is UNAVAILABLE with a RetryInfo detail, which OTLP
// exporters honour as the throttling delay.
func retryableStatus(msg string, after time.Duration) error {
	st := status.New(codes.Unavailable, msg)
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(after)}); err == nil {
		st = d
	}
	return st.Err()
}

package api

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdb/weft/ingest/loki"
)

// RegisterOTLPLogsGRPC registers the OTLP LogsService (Export) on s, writing
// to p (the log store). Export answers OK (with partial_success
// {rejected_log_records} when some records were rejected; the rest is
// stored), INVALID_ARGUMENT when every record is invalid, and UNAVAILABLE
// with a RetryInfo detail when storage fails. Create s with
// OTLPGRPCServerOptions for the request size limit.
func RegisterOTLPLogsGRPC(s *grpc.Server, p loki.Pusher, opts OTLPLogsOptions) {
	plogotlp.RegisterGRPCServer(s, &otlpLogsGRPCServer{r: newOTLPLogsReceiver(p, opts)})
}

type otlpLogsGRPCServer struct {
	plogotlp.UnimplementedGRPCServer
	r *otlpLogsReceiver
}

func (s *otlpLogsGRPCServer) Export(ctx context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	resp := plogotlp.NewExportResponse()
	if s.r.err != nil {
		return resp, status.Error(codes.Internal, s.r.err.Error())
	}
	res, err := s.r.ingest(ctx, req.Logs())
	switch classifyOTLPLogs(err) {
	case otlpUnavailable:
		s.r.logger.Warn("otlp_logs_ingest_failed", "err", err)
		return resp, retryableStatus(err.Error(), s.r.retryAfter)
	case otlpInvalid:
		return resp, status.Error(codes.InvalidArgument, err.Error())
	}
	if res.Rejected > 0 || res.Message != "" {
		resp.PartialSuccess().SetRejectedLogRecords(res.Rejected)
		resp.PartialSuccess().SetErrorMessage(res.Message)
	}
	return resp, nil
}

package api

import (
	"google.golang.org/grpc"

	"github.com/weftdb/weft/ingest/loki"
)

// RegisterOTLPLogsGRPC registers the OTLP LogsService (Export) on s (built
// with OTLPGRPCServerOptions), writing to p (the log store). Export answers
// OK (with partial_success{rejected_log_records} when some records were
// rejected; the rest is stored), INVALID_ARGUMENT when the body does not
// decode or every record is invalid, and UNAVAILABLE with a RetryInfo
// detail when storage fails.
func RegisterOTLPLogsGRPC(s *grpc.Server, p loki.Pusher, opts OTLPLogsOptions) {
	newLogsSignal(p, opts).register(s)
}

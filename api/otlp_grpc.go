package api

import (
	"context"
	"fmt"
	"time"

	promstorage "github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	weftstorage "github.com/weftdb/weft/storage"
)

// newMetricsSignal is OTLP metrics on the receiver core: decoded with
// pdata, translated and appended by an otlp.Ingester.
func newMetricsSignal(app promstorage.AppendableV2, opts OTLPOptions) *otlpSignal {
	s := &otlpSignal{
		name:    "metrics",
		service: "opentelemetry.proto.collector.metrics.v1.MetricsService",
		limits:  newOTLPLimits(opts.MaxRequestBytes, opts.RetryAfter, opts.Logger, opts.admission),
	}
	// weft's storage refuses invalid label sets with ErrInvalidLabels: a
	// rejected point, not a storage failure.
	ing, err := NewOTLPIngester(app, opts, weftstorage.ErrInvalidLabels)
	counters := newIngestCounters(opts.Registerer)
	s.export = func(ctx context.Context, body []byte, json bool) (otlpResult, error) {
		er := pmetricotlp.NewExportRequest()
		if err := otlpDecode(er, body, json); err != nil {
			return otlpResult{}, decodeErr("metrics", err)
		}
		res, err := ing.Ingest(ctx, er.Metrics())
		counters.observeOTLPMetrics(res, err)
		if err != nil {
			return otlpResult{}, fmt.Errorf("ingest OTLP metrics: %w", err)
		}
		if res.Rejected > 0 && res.Rejected == res.DataPoints {
			return otlpResult{}, invalidOTLP(res.Message)
		}
		return otlpResult{rejected: res.Rejected, message: res.Message}, nil
	}
	s.response = func(r otlpResult, json bool) ([]byte, error) {
		resp := pmetricotlp.NewExportResponse()
		if r != (otlpResult{}) {
			resp.PartialSuccess().SetRejectedDataPoints(r.rejected)
			resp.PartialSuccess().SetErrorMessage(r.message)
		}
		return otlpEncode(resp, json)
	}
	return s.withInitErr(err)
}

// OTLPGRPCServerOptions returns the grpc.ServerOptions the OTLP gRPC
// server needs: the receiver core's raw codec and a receive limit of
// opts.MaxRequestBytes (after decompression; larger requests fail with
// RESOURCE_EXHAUSTED before they are decoded). Pass them to grpc.NewServer
// for the -otlp-grpc-addr server.
func OTLPGRPCServerOptions(opts OTLPOptions) []grpc.ServerOption {
	return otlpGRPCServerOptions(opts.MaxRequestBytes, opts.admission)
}

// RegisterOTLPGRPC registers the OTLP MetricsService (Export) on s, which
// must be built with OTLPGRPCServerOptions. Export answers OK with
// partial_success when some points are rejected, INVALID_ARGUMENT when the
// body does not decode or all points are invalid, and UNAVAILABLE with a
// RetryInfo detail when storage fails.
func RegisterOTLPGRPC(s *grpc.Server, app promstorage.AppendableV2, opts OTLPOptions) {
	newMetricsSignal(app, opts).register(s)
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

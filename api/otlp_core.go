package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP exporters may gzip their requests.
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The OTLP receiver core. Every OTLP signal (metrics, logs, traces) is an
// otlpSignal: how to decode and ingest one export request and how to encode
// its response. The core does the rest alike for every signal and both
// transports: HTTP (POST, protobuf or OTLP/JSON, gzip, the size limit after
// decompression), gRPC (the same bytes through a raw codec, so a malformed
// body answers INVALID_ARGUMENT like HTTP's 400, not grpc-go's INTERNAL),
// partial success, and the mapping of outcomes to statuses:
//
//	outcome                      HTTP                     gRPC
//	stored (maybe partly)        200 + partial_success    OK + partial_success
//	undecodable / all invalid    400 google.rpc.Status    INVALID_ARGUMENT
//	storage failed (retryable)   503 + Retry-After        UNAVAILABLE + RetryInfo
//
// Adding a signal is adding an otlpSignal (its converter and store) and
// nothing else.

// errOTLPInvalid is wrapped by an otlpSignal's export error when the
// request is the client's fault: it does not decode, or every item in it is
// invalid. Other errors are retryable.
var errOTLPInvalid = errors.New("invalid OTLP request")

// otlpResult is what one export stored and rejected.
type otlpResult struct {
	rejected int64  // items not stored because they are invalid
	message  string // why, or a warning about dropped parts; "" if none
}

// otlpSignal is one OTLP signal on the receiver core. Safe for concurrent
// use once built.
type otlpSignal struct {
	name    string // "metrics", "logs", "traces": messages and the /v1/<name> path
	service string // the gRPC service, e.g. opentelemetry.proto.collector.metrics.v1.MetricsService
	// export decodes body (OTLP protobuf, or OTLP/JSON when json is set)
	// and ingests it; see errOTLPInvalid.
	export func(ctx context.Context, body []byte, json bool) (otlpResult, error)
	// response encodes the export response carrying r as partial success
	// (unset when r is zero).
	response func(r otlpResult, json bool) ([]byte, error)
	limits   otlpLimits
	// initErr is set when the signal's options were invalid; every request
	// answers it (wiring code detects it at start-up instead).
	initErr error
}

// ServeHTTP is the OTLP/HTTP receiver of the signal. It does not look at the
// request path.
func (s *otlpSignal) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	t := s.limits.adm.ticket()
	defer t.release()
	ct, raw, release, ok := readOTLPRequest(w, req, s.limits.maxBytes, s.initErr, t)
	if !ok {
		if w.Header().Get("Retry-After") != "" {
			s.limits.adm.refused.WithLabelValues("otlp_" + s.name).Inc()
		}
		return
	}
	defer release()
	json := ct == otlpContentJSON
	if err := t.charge(int64(len(raw)) * (decodedFactor - 1)); err != nil {
		s.limits.adm.refused.WithLabelValues("otlp_" + s.name).Inc()
		w.Header().Set("Retry-After", s.limits.adm.retryAfterSeconds())
		writeOTLPStatus(w, ct, http.StatusTooManyRequests, codes.ResourceExhausted, err.Error()+"; retry later")
		return
	}
	res, err := s.export(req.Context(), raw, json)
	switch {
	case errors.Is(err, errOTLPInvalid):
		writeOTLPStatus(w, ct, http.StatusBadRequest, codes.InvalidArgument, err.Error())
		return
	case err != nil:
		if reason, ok := storageRefusal(err); ok {
			w.Header().Set("Retry-After", retryAfterSeconds(storageRetryAfter))
			code, grpcCode := http.StatusServiceUnavailable, codes.Unavailable
			if storageRefusalCode(err) == http.StatusTooManyRequests {
				code, grpcCode = http.StatusTooManyRequests, codes.ResourceExhausted
			}
			writeOTLPStatus(w, ct, code, grpcCode, reason)
			return
		}
		s.limits.logger.Warn("otlp_ingest_failed", "signal", s.name, "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(int((s.limits.retryAfter+999_999_999)/1e9)))
		writeOTLPStatus(w, ct, http.StatusServiceUnavailable, codes.Unavailable, err.Error())
		return
	}
	out, err := s.response(res, json)
	if err != nil {
		writeOTLPStatus(w, ct, http.StatusInternalServerError, codes.Internal, "encode response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// grpcExport is the gRPC Export of the signal, over raw bytes.
func (s *otlpSignal) grpcExport(ctx context.Context, in *otlpRawMessage) (*otlpRawMessage, error) {
	if s.initErr != nil {
		return nil, status.Error(codes.Internal, s.initErr.Error())
	}
	if int64(len(in.b)) > s.limits.maxBytes { // the server's MaxRecvMsgSize says so first
		return nil, status.Errorf(codes.ResourceExhausted, "request of %d bytes exceeds %d bytes", len(in.b), s.limits.maxBytes)
	}
	// gRPC has read the message already: charge it and its decoded size.
	t := s.limits.adm.ticket()
	defer t.release()
	if err := t.charge(int64(len(in.b)) * decodedFactor); err != nil {
		s.limits.adm.refused.WithLabelValues("otlp_" + s.name).Inc()
		return nil, exhaustedStatus(err.Error()+"; retry later", s.limits.adm.retryAfter)
	}
	res, err := s.export(ctx, in.b, false)
	switch {
	case errors.Is(err, errOTLPInvalid):
		return nil, status.Error(codes.InvalidArgument, err.Error())
	case err != nil:
		if _, ok := storageRefusal(err); ok {
			return nil, storageRefusalStatus(err)
		}
		s.limits.logger.Warn("otlp_ingest_failed", "signal", s.name, "err", err)
		return nil, retryableStatus(err.Error(), s.limits.retryAfter)
	}
	out, err := s.response(res, false)
	if err != nil {
		return nil, status.Error(codes.Internal, "encode response: "+err.Error())
	}
	return &otlpRawMessage{b: out}, nil
}

// register adds the signal's service (one unary method, Export) to g, which
// must be built with otlpGRPCServerOptions.
func (s *otlpSignal) register(g *grpc.Server) {
	g.RegisterService(&grpc.ServiceDesc{
		ServiceName: s.service,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Export",
			Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
				in := new(otlpRawMessage)
				if err := dec(in); err != nil {
					return nil, err
				}
				sig := srv.(*otlpSignal)
				if interceptor == nil {
					return sig.grpcExport(ctx, in)
				}
				info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + s.service + "/Export"}
				return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
					return sig.grpcExport(ctx, req.(*otlpRawMessage))
				})
			},
		}},
	}, s)
}

// withInitErr makes the signal answer every request with err, when not nil
// (invalid options).
func (s *otlpSignal) withInitErr(err error) *otlpSignal {
	if err != nil {
		s.initErr = err
		s.limits.logger.Error("otlp_receiver_misconfigured", "signal", s.name, "err", err)
	}
	return s
}

// otlpRawMessage is a gRPC message kept as its encoded bytes.
type otlpRawMessage struct{ b []byte }

// otlpRawCodec hands OTLP services their request bytes undecoded and sends
// their pre-encoded responses; anything else goes through the proto codec.
// It is forced on the OTLP gRPC server only (otlpGRPCServerOptions).
type otlpRawCodec struct{ proto encoding.CodecV2 }

func newOTLPRawCodec() otlpRawCodec {
	return otlpRawCodec{proto: encoding.GetCodecV2(proto.Name)}
}

func (c otlpRawCodec) Name() string { return proto.Name }

func (c otlpRawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(*otlpRawMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(m.b)}, nil
	}
	return c.proto.Marshal(v)
}

func (c otlpRawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*otlpRawMessage); ok {
		m.b = data.Materialize() // a copy: data's buffers go back to the pool
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

// otlpGRPCServerOptions are the options of a gRPC server for the OTLP
// services: the raw codec, a receive limit of maxBytes after decompression
// (larger requests fail with RESOURCE_EXHAUSTED before they are read into
// memory whole) and, with an admission, a tap that refuses new streams while
// the ingest budget is used up, before their messages are read.
func otlpGRPCServerOptions(maxBytes int64, adm *admission) []grpc.ServerOption {
	if maxBytes <= 0 {
		maxBytes = DefaultOTLPMaxRequestBytes
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(maxBytes)),
		grpc.ForceServerCodecV2(newOTLPRawCodec()),
	}
	if adm != nil {
		opts = append(opts, grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			if adm.full() {
				adm.refused.WithLabelValues("otlp_grpc").Inc()
				return ctx, exhaustedStatus(errOverBudget.Error()+"; retry later", adm.retryAfter)
			}
			return ctx, nil
		}))
	}
	return opts
}

// exhaustedStatus is RESOURCE_EXHAUSTED with a RetryInfo detail: without
// RetryInfo OTLP exporters treat RESOURCE_EXHAUSTED as final.
func exhaustedStatus(msg string, after time.Duration) error {
	st := status.New(codes.ResourceExhausted, msg)
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(after)}); err == nil {
		st = d
	}
	return st.Err()
}

// otlpInvalidError is the client's fault, with the message it is answered
// with; it matches errOTLPInvalid.
type otlpInvalidError struct{ msg string }

func (e *otlpInvalidError) Error() string { return e.msg }
func (e *otlpInvalidError) Unwrap() error { return errOTLPInvalid }

func invalidOTLP(msg string) error { return &otlpInvalidError{msg: msg} }

// decodeErr wraps a body decode error as the client's fault.
func decodeErr(signal string, err error) error {
	return invalidOTLP(fmt.Sprintf("decode OTLP %s: %v", signal, err))
}

// otlpDecode decodes an OTLP body into req, protobuf or OTLP/JSON.
func otlpDecode(req interface {
	UnmarshalProto([]byte) error
	UnmarshalJSON([]byte) error
}, body []byte, json bool) error {
	if json {
		return req.UnmarshalJSON(body)
	}
	return req.UnmarshalProto(body)
}

// otlpEncode encodes an OTLP response, protobuf or OTLP/JSON.
func otlpEncode(resp interface {
	MarshalProto() ([]byte, error)
	MarshalJSON() ([]byte, error)
}, json bool) ([]byte, error) {
	if json {
		return resp.MarshalJSON()
	}
	return resp.MarshalProto()
}

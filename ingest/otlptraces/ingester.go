package otlptraces

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// ErrAllRejected is wrapped by Ingest's error when every span of a
// non-empty request was invalid (nothing was written; a client error).
var ErrAllRejected = errors.New("all spans rejected")

// Pusher stores trace resources: the trace store.
type Pusher interface {
	Push(ctx context.Context, batch []tracestore.ResourceSpans) (tracestore.PushResult, error)
}

// Observer receives the spans of each resource once they are stored (span
// metrics). service is the resource's service.name ("" if none), context
// its workload-context labels. It must not keep or modify spans after it
// returns, and must be safe for concurrent use.
type Observer interface {
	ObserveSpans(service string, context []workload.Label, spans []traceentry.Span)
}

// Ingester maps OTLP traces and writes them to the trace store. Safe for
// concurrent use.
type Ingester struct {
	conv *converter
	p    Pusher
	obs  Observer
}

// New validates opts and returns an Ingester writing to p and, when obs is
// not nil, handing what it stored to obs.
func New(p Pusher, obs Observer, opts Options) (*Ingester, error) {
	m, err := workload.New(opts.Workload)
	if err != nil {
		return nil, fmt.Errorf("workload context: %w", err)
	}
	idx := opts.IndexLabels
	if idx == nil {
		idx = DefaultOptions().IndexLabels
	}
	return &Ingester{conv: newConverter(m, idx), p: p, obs: obs}, nil
}

// Result says what Ingest did with a request.
type Result struct {
	Accepted int64 // spans written
	Rejected int64 // invalid spans, not written
	// Message names the first reasons for rejections ("" when none).
	Message string
}

// Ingest maps and writes td. Invalid spans (all-zero trace or span IDs, an
// end before the start) and spans older than the store's retention are
// rejected one by one and counted in Result (the rest is written, err nil);
// when every span is rejected the error wraps ErrAllRejected. Any other
// error is the store's (retryable: nothing of the request was written).
func (in *Ingester) Ingest(ctx context.Context, td ptrace.Traces) (Result, error) {
	if td.SpanCount() == 0 {
		return Result{}, nil
	}
	var rej rejection
	res := in.conv.convert(td, &rej)
	batch := make([]tracestore.ResourceSpans, len(res))
	for i := range res {
		batch[i] = res[i].rs
	}
	pr, err := in.p.Push(ctx, batch)
	if err != nil {
		return Result{}, err
	}
	if pr.TooOld > 0 {
		for range pr.TooOld {
			rej.add("span older than the trace retention")
		}
	}
	out := Result{Accepted: int64(pr.Accepted), Rejected: rej.n}
	if rej.n > 0 {
		out.Message = fmt.Sprintf("%d spans rejected: %s", rej.n, strings.Join(rej.reasons, "; "))
	}
	if out.Accepted == 0 && out.Rejected > 0 {
		return out, fmt.Errorf("%w: %s", ErrAllRejected, out.Message)
	}
	if in.obs != nil {
		for _, r := range res {
			in.obs.ObserveSpans(r.service, r.ctx, r.rs.Spans)
		}
	}
	return out, nil
}

// ResourceLabels returns, for the trace store's Options.ResourceLabels, the
// resource attributes that always become a stream label when present with
// a non-empty value, and that label: service.name → service_name, the
// first alias of each workload-context key → the key, and each index
// label that is no alias → its normalized name.
func ResourceLabels(opts Options) (map[string]string, error) {
	out := map[string]string{"service.name": ServiceName}
	aliases := map[string]bool{}
	for _, r := range opts.Workload.Rules {
		for _, a := range r.Aliases {
			aliases[a] = true
		}
		if len(r.Aliases) > 0 {
			out[r.Aliases[0]] = r.Name
		}
	}
	idx := opts.IndexLabels
	if idx == nil {
		idx = DefaultOptions().IndexLabels
	}
	var namer otlptranslator.LabelNamer
	for _, a := range idx {
		if aliases[a] || a == "service.name" {
			continue
		}
		if n, err := namer.Build(a); err == nil {
			out[a] = n
		}
	}
	if _, err := workload.New(opts.Workload); err != nil {
		return nil, fmt.Errorf("workload context: %w", err)
	}
	return out, nil
}

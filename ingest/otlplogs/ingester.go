package otlplogs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/workload"
)

// ErrAllRejected is wrapped by Ingest's error when every record of a
// non-empty request was invalid (nothing was written; a client error).
var ErrAllRejected = errors.New("all log records rejected")

// Ingester maps OTLP logs and writes them through a loki.Ingester. Safe for
// concurrent use.
type Ingester struct {
	conv *converter
	li   *loki.Ingester
	now  func() time.Time
}

// New validates opts and returns an Ingester writing to p (the log store).
func New(p loki.Pusher, opts Options) (*Ingester, error) {
	m, err := workload.New(opts.Workload)
	if err != nil {
		return nil, fmt.Errorf("workload context: %w", err)
	}
	idx := opts.IndexLabels
	if idx == nil {
		idx = DefaultIndexLabels
	}
	lo := opts.Loki.WithDefaults()
	return &Ingester{
		conv: newConverter(m, idx, lo.MaxLabelNamesPerStream, lo.MaxLabelValueLength, lo.MaxStructuredMetadataPairs),
		li:   loki.NewIngester(p, lo),
		now:  lo.Now,
	}, nil
}

// Result says what Ingest did with a request.
type Result struct {
	Accepted int64 // records written
	Rejected int64 // invalid records, not written
	// Message names the first reasons for rejections ("" when none).
	Message string
	// ByReason counts the rejected records by reason.
	ByReason [loki.NumReasons]int64
}

// Ingest maps and writes ld. Invalid records are rejected one by one and
// counted in Result (the rest is written, err nil); when every record is
// invalid the error wraps ErrAllRejected. Any other error is the store's
// (retryable: nothing of the request was written).
func (in *Ingester) Ingest(ctx context.Context, ld plog.Logs) (Result, error) {
	total := int64(ld.LogRecordCount())
	if total == 0 {
		return Result{}, nil
	}
	req := in.conv.convert(ld, in.now())
	st, err := in.li.Push(ctx, req)
	var verr *loki.ValidationError
	switch {
	case err == nil:
		return Result{Accepted: int64(st.Entries)}, nil
	case errors.As(err, &verr):
		res := Result{Accepted: int64(st.Entries), Rejected: int64(verr.Rejected), Message: verr.Error()}
		for r, n := range verr.ByReason {
			res.ByReason[r] = int64(n)
		}
		if res.Accepted == 0 {
			return res, fmt.Errorf("%w: %s", ErrAllRejected, res.Message)
		}
		return res, nil
	default:
		return Result{}, err
	}
}

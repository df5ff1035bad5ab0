package ingest

import (
	"log/slog"
	"time"

	"github.com/weftdb/weft/ingest/workload"
)

// Tuning defaults. Each is documented where it is used in Options.
const (
	// DefaultMaxLabelsPerSeries bounds the labels of one series. Real series have
	// tens of labels; a thousand leaves room for rich workload context while a
	// sender that emits 10,000 labels (a bug, or an attack on the index) gets a
	// clear rejection instead of a huge stream key.
	DefaultMaxLabelsPerSeries = 1000

	// DefaultMaxFutureSkew is how far past the receiver's clock a sample may be.
	// Prometheus' receiver uses the same 10 minutes.
	DefaultMaxFutureSkew = 10 * time.Minute

	// DefaultMaxErrorMessages caps how many individual rejection messages a
	// RejectError keeps; the rest are counted. A batch of 10,000 bad series
	// must not produce a megabyte error body.
	DefaultMaxErrorMessages = 10
)

// Options configures a Decoder. The zero value is not useful; start from
// DefaultOptions.
type Options struct {
	// MaxLabelsPerSeries rejects series (and exemplars) with more labels.
	// Zero or negative means DefaultMaxLabelsPerSeries.
	MaxLabelsPerSeries int

	// MaxFutureSkew rejects samples, histograms and exemplars whose timestamp is
	// later than Now()+MaxFutureSkew with ReasonTooFarInFuture.
	// Negative disables the check. Default DefaultMaxFutureSkew.
	MaxFutureSkew time.Duration

	// MaxErrorMessages caps the messages kept in a RejectError.
	// Zero or negative means DefaultMaxErrorMessages.
	MaxErrorMessages int

	// Workload adds, to every series, the canonical workload-context labels
	// its aliases provide (workload.Mapping.AddCanonical: a dcgm-exporter
	// UUID also becomes gpu_uuid). Nil adds none.
	Workload *workload.Mapping

	// Now returns the current time; nil means time.Now. Tests inject a clock.
	Now func() time.Time

	// Logger receives per-request warnings (never per sample). Nil is no-op.
	Logger *slog.Logger
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		MaxLabelsPerSeries: DefaultMaxLabelsPerSeries,
		MaxFutureSkew:      DefaultMaxFutureSkew,
		MaxErrorMessages:   DefaultMaxErrorMessages,
	}
}

func (o Options) withDefaults() Options {
	if o.MaxLabelsPerSeries <= 0 {
		o.MaxLabelsPerSeries = DefaultMaxLabelsPerSeries
	}
	if o.MaxErrorMessages <= 0 {
		o.MaxErrorMessages = DefaultMaxErrorMessages
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

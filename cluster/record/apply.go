package record

import (
	"context"
	"errors"
	"fmt"

	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/tracestore"
)

// LogPusher is where log records are applied: *logstore.Store.
type LogPusher interface {
	Push(ctx context.Context, streams []logstore.PushStream) error
}

// TracePusher is where trace records are applied: *tracestore.Store.
type TracePusher interface {
	Push(ctx context.Context, batch []tracestore.ResourceSpans) (tracestore.PushResult, error)
}

// Applier writes records into a store, as the single-node ingest paths
// would have: metric samples through one appender transaction per Apply,
// log streams through one push, trace resources through one push. A nil
// store's records are counted as rejected. Safe for concurrent use if the
// stores are.
type Applier struct {
	Metrics promstorage.AppendableV2
	Logs    LogPusher
	Traces  TracePusher
}

// Applied counts what one Apply wrote and dropped.
type Applied struct {
	Samples, Histograms, Exemplars, Entries, Spans int
	// Rejected are samples and entries the store refused as data errors
	// (out of order or window, duplicate with another value, invalid
	// labels, too old for the retention): the same a single node would
	// have refused, dropped here because the write was acknowledged long
	// before. Keyed by reason.
	Rejected map[string]int
}

func (a *Applied) reject(reason string, n int) {
	if a.Rejected == nil {
		a.Rejected = map[string]int{}
	}
	a.Rejected[reason] += n
}

// Apply writes recs in order. When it returns nil every sample is in the
// metric store's WAL (committed), every entry in the log store and every
// span in the trace store (synced pushes). An error is the store's (closed,
// disk failing): nothing of recs' metrics is committed, and Apply may be
// retried with the same records (metric samples are idempotent; log streams
// of recs may be partly stored; spans stored twice are read once).
func (ap *Applier) Apply(ctx context.Context, recs []Record) (Applied, error) {
	var out Applied
	var streams []logstore.PushStream
	var resources []tracestore.ResourceSpans
	var app promstorage.AppenderV2
	for i := range recs {
		switch recs[i].Kind {
		case KindMetrics:
			if ap.Metrics == nil {
				out.reject("no_metric_store", countSamples(recs[i].Series))
				continue
			}
			if app == nil {
				app = ap.Metrics.AppenderV2(ctx)
			}
			if err := appendSeries(app, recs[i].Series, &out); err != nil {
				return Applied{}, errors.Join(err, app.Rollback())
			}
		case KindLogs:
			streams = append(streams, recs[i].Streams...)
		case KindTraces:
			resources = append(resources, recs[i].Resources...)
		}
	}
	if app != nil {
		if err := app.Commit(); err != nil {
			return Applied{}, fmt.Errorf("commit metric samples: %w", err)
		}
	}
	switch {
	case len(streams) == 0:
	case ap.Logs == nil:
		for _, s := range streams {
			out.reject("no_log_store", len(s.Entries))
		}
	default:
		if err := ap.pushLogs(ctx, streams, &out); err != nil {
			return Applied{}, err
		}
	}
	if len(resources) == 0 {
		return out, nil
	}
	n := 0
	for _, r := range resources {
		n += len(r.Spans)
	}
	if ap.Traces == nil {
		out.reject("no_trace_store", n)
		return out, nil
	}
	res, err := ap.Traces.Push(ctx, resources)
	if err != nil {
		return Applied{}, fmt.Errorf("push spans: %w", err)
	}
	out.Spans += res.Accepted
	if res.TooOld > 0 {
		out.reject("too_old", res.TooOld)
	}
	return out, nil
}

func countSamples(series []Series) int {
	n := 0
	for _, s := range series {
		n += len(s.Samples)
	}
	return n
}

// appendSeries appends series' samples; it returns only storage failures.
func appendSeries(app promstorage.AppenderV2, series []Series, out *Applied) error {
	for _, s := range series {
		var ref promstorage.SeriesRef
		for _, smp := range s.Samples {
			opts := promstorage.AppendV2Options{MetricFamilyName: s.FamilyName, Metadata: s.Metadata, Exemplars: smp.Exemplars, RejectOutOfOrder: smp.RejectOOO}
			r, err := app.Append(ref, s.Labels, smp.ST, smp.T, smp.V, smp.H, smp.FH, opts)
			var partial *promstorage.AppendPartialError
			switch {
			case err == nil:
			case errors.As(err, &partial):
				out.reject("exemplar", len(partial.ExemplarErrors))
				err = nil
			default:
				reason, data := dataError(err)
				if !data {
					return fmt.Errorf("append %s: %w", s.Labels, err)
				}
				out.reject(reason, 1)
				continue
			}
			ref = r
			switch {
			case smp.H != nil || smp.FH != nil:
				out.Histograms++
			default:
				out.Samples++
			}
			out.Exemplars += len(smp.Exemplars)
		}
	}
	return nil
}

// dataError classifies an append error: a refusal of the data (with its
// reason) or a storage failure.
func dataError(err error) (string, bool) {
	switch {
	case errors.Is(err, storage.ErrOutOfWindow), errors.Is(err, promstorage.ErrOutOfOrderSample), errors.Is(err, promstorage.ErrTooOldSample):
		return "out_of_order", true
	case errors.Is(err, storage.ErrDuplicateSample), errors.Is(err, promstorage.ErrDuplicateSampleForTimestamp):
		return "duplicate_sample", true
	case errors.Is(err, storage.ErrTooFarInFuture), errors.Is(err, promstorage.ErrOutOfBounds):
		return "too_far_in_future", true
	case errors.Is(err, storage.ErrInvalidLabels):
		return "invalid_labels", true
	case errors.Is(err, promstorage.ErrNativeHistogramsDisabled):
		return "invalid_histogram", true
	}
	return "", false
}

// pushLogs pushes streams in one synced batch. The log store refuses a whole
// push for one stream without labels or one entry older than its retention;
// then the streams go one by one and the refused entries are dropped.
func (ap *Applier) pushLogs(ctx context.Context, streams []logstore.PushStream, out *Applied) error {
	err := ap.Logs.Push(ctx, streams)
	if err == nil {
		for _, s := range streams {
			out.Entries += len(s.Entries)
		}
		return nil
	}
	if !logDataError(err) {
		return fmt.Errorf("push log streams: %w", err)
	}
	for _, s := range streams {
		if err := ap.Logs.Push(ctx, []logstore.PushStream{s}); err == nil {
			out.Entries += len(s.Entries)
			continue
		} else if !logDataError(err) {
			return fmt.Errorf("push log stream: %w", err)
		}
		for _, e := range s.Entries {
			err := ap.Logs.Push(ctx, []logstore.PushStream{{Labels: s.Labels, Entries: []logentry.Entry{e}}})
			switch {
			case err == nil:
				out.Entries++
			case logDataError(err):
				out.reject(logReason(err), 1)
			default:
				return fmt.Errorf("push log entry: %w", err)
			}
		}
	}
	return nil
}

func logDataError(err error) bool {
	return errors.Is(err, logstore.ErrTooOld) || errors.Is(err, logstore.ErrEmptyLabels)
}

func logReason(err error) string {
	if errors.Is(err, logstore.ErrEmptyLabels) {
		return "empty_labels"
	}
	return "too_old"
}

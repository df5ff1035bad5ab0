package otlp

import (
	"errors"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// checkedAppender sits between the converter and storage. It classifies
// append errors: a rejection (the sample itself is invalid: out of order, out
// of bounds, invalid histogram, ...) is counted once per OTLP data point and
// hidden from the converter so that the rest of the request is still
// appended; any other error is fatal (retryable), recorded, and every later
// Append becomes a no-op so the request can be rolled back.
//
// Not safe for concurrent use (neither is the AppenderV2 it wraps).
type checkedAppender struct {
	storage.AppenderV2
	isRejection func(error) bool
	targetInfo  string

	// rejected holds one key per rejected OTLP data point: the hash of the
	// series labels without __name__, le and quantile, the metric family and
	// the timestamp, so that a classic histogram's _bucket/_sum/_count
	// samples count as one point.
	rejected map[uint64]string // → the reason (storageReason)
	firstErr error
	fatal    error
	// exemplarErrs counts exemplars the storage refused (the sample was kept).
	exemplarErrs int
	buf          []byte

	// series are the labels weft built for the data points (prepare); a
	// series the converter appends with pointRefAttr gets them (expand).
	series []labels.Labels
	lb     *labels.Builder
}

func newCheckedAppender(app storage.AppenderV2, isRejection func(error) bool, targetInfo string) *checkedAppender {
	return &checkedAppender{AppenderV2: app, isRejection: isRejection, targetInfo: targetInfo}
}

// Append implements storage.AppenderV2.
func (a *checkedAppender) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if a.fatal != nil {
		return 0, nil
	}
	ls = a.expand(ls)
	r, err := a.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
	if err == nil {
		return r, nil
	}
	var pe *storage.AppendPartialError
	if errors.As(err, &pe) {
		// Only exemplars failed; the sample is stored.
		a.exemplarErrs += len(pe.ExemplarErrors)
		return r, nil
	}
	if !a.isRejection(err) {
		a.fatal = err
		return 0, nil
	}
	if a.firstErr == nil {
		a.firstErr = err
	}
	if opts.MetricFamilyName == a.targetInfo {
		// target_info is derived from the resource, not a data point.
		return 0, nil
	}
	if a.rejected == nil {
		a.rejected = make(map[uint64]string)
	}
	var hsh uint64
	hsh, a.buf = ls.HashWithoutLabels(a.buf[:0], labels.BucketLabel, "quantile")
	a.buf = a.buf[:0]
	a.buf = append(a.buf, opts.MetricFamilyName...)
	a.buf = append(a.buf, byte(hsh), byte(hsh>>8), byte(hsh>>16), byte(hsh>>24), byte(hsh>>32), byte(hsh>>40), byte(hsh>>48), byte(hsh>>56))
	a.buf = append(a.buf, byte(t), byte(t>>8), byte(t>>16), byte(t>>24), byte(t>>32), byte(t>>40), byte(t>>48), byte(t>>56))
	a.rejected[xxhash.Sum64(a.buf)] = storageReason(err)
	return 0, nil
}

// defaultRejectionErrors are storage errors that mean the sample itself is
// invalid and retrying cannot help. weft's storage sentinels match these
// through errors.Is (see docs/architecture.md).
var defaultRejectionErrors = []error{
	storage.ErrOutOfOrderSample,
	storage.ErrOutOfBounds,
	storage.ErrTooOldSample,
	storage.ErrDuplicateSampleForTimestamp,
	storage.ErrNativeHistogramsDisabled,
	storage.ErrOutOfOrderST,
	storage.ErrSTNewerThanSample,
}

// rejectionClassifier returns the predicate deciding whether an append error
// rejects the sample (true) or fails the request retryably (false).
func rejectionClassifier(extra []error) func(error) bool {
	all := append(append([]error(nil), defaultRejectionErrors...), extra...)
	return func(err error) bool {
		var he histogram.Error
		if errors.As(err, &he) {
			return true
		}
		for _, e := range all {
			if errors.Is(err, e) {
				return true
			}
		}
		return false
	}
}

// expand replaces the converter's labels of a data point's series (its
// pointRefAttr, __name__ and the converter's le or quantile) by the labels
// weft built for the point, with the converter's labels but pointRefAttr
// over them. Linear in the labels.
func (a *checkedAppender) expand(ls labels.Labels) labels.Labels {
	ref := ls.Get(pointRefAttr)
	if ref == "" {
		return ls
	}
	i, err := strconv.Atoi(ref)
	if err != nil || i < 0 || i >= len(a.series) {
		return ls // BUG: a reference prepare did not write; storage sees it as sent
	}
	if a.lb == nil {
		a.lb = labels.NewBuilder(labels.EmptyLabels())
	}
	a.lb.Reset(a.series[i])
	ls.Range(func(l labels.Label) {
		if l.Name != pointRefAttr {
			a.lb.Set(l.Name, l.Value)
		}
	})
	return a.lb.Labels()
}

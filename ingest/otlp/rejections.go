package otlp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/storage"
)

// maxMessages bounds the distinct reasons quoted in a partial-success
// message, so a request with a million bad points answers in a few lines.
const maxMessages = 3

// Rejection reasons of Result.ByReason (weft_ingest_rejected_total's reason
// label). Storage refusals use the remote-write receiver's names.
const (
	ReasonInvalidDataPoint = "invalid_data_point" // no type, invalid name or attribute, temporality unspecified, too old for its resource
	ReasonDeltaConversion  = "delta_conversion"   // delta to cumulative failed (reset, gap, out of order)
	ReasonConversion       = "conversion_failed"  // the OTLP → Prometheus translator refused it
	ReasonLabelLimit       = "label_limit"        // its series breaks a label limit (count, name or value length)
	ReasonOutOfOrder       = "out_of_order"
	ReasonOutOfWindow      = "out_of_window"
	ReasonDuplicate        = "duplicate_sample"
	ReasonInvalidHistogram = "invalid_histogram"
	ReasonStorageRejected  = "storage_rejected" // any other storage refusal (invalid labels, ...)
	ReasonTooFarInFuture   = "too_far_in_future"
)

// storageReason names a storage refusal.
func storageReason(err error) string {
	var he histogram.Error
	switch {
	case errors.As(err, &he), errors.Is(err, storage.ErrNativeHistogramsDisabled):
		return ReasonInvalidHistogram
	case errors.Is(err, storage.ErrOutOfOrderSample), errors.Is(err, storage.ErrOutOfOrderST), errors.Is(err, storage.ErrSTNewerThanSample):
		return ReasonOutOfOrder
	case errors.Is(err, storage.ErrOutOfBounds):
		return ReasonTooFarInFuture
	case errors.Is(err, storage.ErrTooOldSample):
		return ReasonOutOfWindow
	case errors.Is(err, storage.ErrDuplicateSampleForTimestamp):
		return ReasonDuplicate
	}
	return ReasonStorageRejected
}

// rejections accumulates rejected data points and the first few reasons.
type rejections struct {
	n        int64
	msgs     []string
	more     int
	warned   []string
	byReason map[string]int64
}

func (r *rejections) add(reason string, n int64, msg string) {
	r.n += n
	if r.byReason == nil {
		r.byReason = map[string]int64{}
	}
	r.byReason[reason] += n
	for _, m := range r.msgs {
		if m == msg {
			return
		}
	}
	if len(r.msgs) < maxMessages {
		r.msgs = append(r.msgs, msg)
	} else {
		r.more++
	}
}

// addQuiet is add without a message when msg is empty.
func (r *rejections) addQuiet(reason string, n int64, msg string) {
	if msg != "" {
		r.add(reason, n, msg)
		return
	}
	r.n += n
	if r.byReason == nil {
		r.byReason = map[string]int64{}
	}
	r.byReason[reason] += n
}

// warn records a reason for something dropped that is not a data point.
func (r *rejections) warn(msg string) {
	if len(r.warned) < maxMessages {
		r.warned = append(r.warned, msg)
	}
}

func (r *rejections) message() string {
	if r.n == 0 && len(r.warned) == 0 {
		return ""
	}
	var b strings.Builder
	if r.n > 0 {
		fmt.Fprintf(&b, "rejected %d data points: %s", r.n, strings.Join(r.msgs, "; "))
		if r.more > 0 {
			fmt.Fprintf(&b, " (and %d more reasons)", r.more)
		}
	}
	if len(r.warned) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("dropped: ")
		b.WriteString(strings.Join(r.warned, "; "))
	}
	return b.String()
}

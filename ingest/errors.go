package ingest

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels. Inspect with errors.Is.
var (
	// ErrMalformed reports a request body that is not a valid protobuf encoding
	// of the expected message. Nothing of such a request is appended.
	ErrMalformed = errors.New("malformed remote write request")

	// ErrRejected matches every *RejectError: some series or samples were
	// invalid or refused by storage as a client error (out of window,
	// duplicate, ...). The rest of the batch was appended.
	ErrRejected = errors.New("remote write data rejected")

	// ErrUnavailable reports that the write path could not take the data
	// for now (a scale-out distributor's produce to the ingest log was not
	// acknowledged): nothing of the request may be assumed stored, and a
	// retry may succeed. Receivers answer 503 with Retry-After (gRPC
	// UNAVAILABLE).
	ErrUnavailable = errors.New("write path unavailable")
)

// Reason classifies why a series, sample or exemplar was rejected. It is the
// label value of the rejected-samples counter.
type Reason uint8

// Rejection reasons.
const (
	ReasonInvalidLabels    Reason = iota // bad UTF-8, empty or duplicate name, missing __name__, empty set, bad symbol reference
	ReasonTooManyLabels                  // more than Options.MaxLabelsPerSeries
	ReasonEmptySeries                    // RW2 series without samples or histograms
	ReasonInvalidMetadata                // RW2 metadata refers outside the symbols table
	ReasonOutOfOrder                     // storage.ErrOutOfOrderSample
	ReasonOutOfWindow                    // storage.ErrTooOldSample or storage.ErrOutOfBounds from storage
	ReasonTooFarInFuture                 // later than now + Options.MaxFutureSkew
	ReasonDuplicate                      // storage.ErrDuplicateSampleForTimestamp
	ReasonInvalidHistogram               // histogram.Validate failed or unknown schema
	ReasonInvalidExemplar                // bad exemplar labels or refused exemplar (out of order, ...)
	NumReasons                           // number of reasons; not a reason
)

var reasonNames = [NumReasons]string{
	ReasonInvalidLabels:    "invalid_labels",
	ReasonTooManyLabels:    "too_many_labels",
	ReasonEmptySeries:      "empty_series",
	ReasonInvalidMetadata:  "invalid_metadata",
	ReasonOutOfOrder:       "out_of_order",
	ReasonOutOfWindow:      "out_of_window",
	ReasonTooFarInFuture:   "too_far_in_future",
	ReasonDuplicate:        "duplicate_sample",
	ReasonInvalidHistogram: "invalid_histogram",
	ReasonInvalidExemplar:  "invalid_exemplar",
}

// reasonText is how a reason starts an error message ("out of window: series ...").
var reasonText = [NumReasons]string{
	ReasonInvalidLabels:    "invalid labels",
	ReasonTooManyLabels:    "too many labels",
	ReasonEmptySeries:      "empty series",
	ReasonInvalidMetadata:  "invalid metadata",
	ReasonOutOfOrder:       "out of order",
	ReasonOutOfWindow:      "out of window",
	ReasonTooFarInFuture:   "too far in the future",
	ReasonDuplicate:        "duplicate sample",
	ReasonInvalidHistogram: "invalid histogram",
	ReasonInvalidExemplar:  "invalid exemplar",
}

// String returns the snake_case name used as a metric label value.
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// RejectError reports the client errors of one batch: the first
// Options.MaxErrorMessages messages and the total count. It matches
// ErrRejected and, through Unwrap, the storage sentinels of the kept
// messages (for example storage.ErrOutOfOrderSample).
type RejectError struct {
	Messages []error // first messages, in batch order
	Total    int     // all rejections, including those not kept
}

// Error joins the kept messages one per line, like Prometheus' receiver.
func (e *RejectError) Error() string {
	var sb strings.Builder
	for i, m := range e.Messages {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(m.Error())
	}
	if more := e.Total - len(e.Messages); more > 0 {
		fmt.Fprintf(&sb, "\n(and %d more rejections)", more)
	}
	return sb.String()
}

// Is reports whether target is ErrRejected.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }

// Unwrap returns the kept messages so errors.Is sees their causes.
func (e *RejectError) Unwrap() []error { return e.Messages }

// rejection is one kept message: "<reason>: <detail>[: <cause>]".
type rejection struct {
	reason Reason
	detail string
	cause  error
}

func (r *rejection) Error() string {
	if r.cause == nil {
		return reasonText[r.reason] + ": " + r.detail
	}
	return reasonText[r.reason] + ": " + r.detail + ": " + r.cause.Error()
}

func (r *rejection) Unwrap() error { return r.cause }

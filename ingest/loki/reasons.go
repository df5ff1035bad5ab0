package loki

import "fmt"

// Reason classifies why entries were rejected. Its names are Loki's discard
// reasons (the reason label of loki_discarded_samples_total) where Loki has
// one, so that dashboards and alerts written for Loki read weft's counters
// the same way.
type Reason uint8

// Rejection reasons.
const (
	ReasonInvalidLabels       Reason = iota // unparsable selector, invalid name, invalid UTF-8
	ReasonMissingLabels                     // a stream without labels
	ReasonMaxLabelNames                     // more than MaxLabelNamesPerStream
	ReasonLabelNameTooLong                  // longer than MaxLabelNameLength
	ReasonLabelValueTooLong                 // longer than MaxLabelValueLength
	ReasonDuplicateLabelNames               // a label name twice
	ReasonLineTooLong                       // longer than MaxLineSize
	ReasonTooOld                            // older than now - RejectOlderThan
	ReasonTooFarInFuture                    // later than now + CreationGracePeriod
	ReasonMetadataTooLarge                  // structured metadata over MaxStructuredMetadataSize
	ReasonMetadataTooMany                   // more than MaxStructuredMetadataPairs pairs
	ReasonInvalidMetadata                   // invalid or duplicate structured metadata name, invalid UTF-8
	NumReasons                              // number of reasons; not a reason
)

var reasonNames = [NumReasons]string{
	ReasonInvalidLabels:       "invalid_labels",
	ReasonMissingLabels:       "missing_labels",
	ReasonMaxLabelNames:       "max_label_names_per_series",
	ReasonLabelNameTooLong:    "label_name_too_long",
	ReasonLabelValueTooLong:   "label_value_too_long",
	ReasonDuplicateLabelNames: "duplicate_label_names",
	ReasonLineTooLong:         "line_too_long",
	ReasonTooOld:              "greater_than_max_sample_age",
	ReasonTooFarInFuture:      "too_far_in_future",
	ReasonMetadataTooLarge:    "structured_metadata_too_large",
	ReasonMetadataTooMany:     "structured_metadata_too_many",
	ReasonInvalidMetadata:     "invalid_structured_metadata",
}

// String returns the reason's snake_case name (a metric label value).
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

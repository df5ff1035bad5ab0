//go:build !slicelabels && !dedupelabels

package ingest

import (
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
)

// unsafeString returns a string sharing b's memory. It is safe here because
// with the default stringlabels build, labels.ScratchBuilder.Labels copies
// every name and value into one new string, so no string handed to storage
// points into the pooled request buffer. Builds with slicelabels or
// dedupelabels, whose builders keep the strings they are given, use the
// copying variant in unsafe_copy.go.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// labelsFromEncoded returns the labels.Labels whose stringlabels encoding is
// data (see labelEncoder). labels.Labels is a struct holding just that
// string in this build; labelenc_test.go checks the result against
// labels.FromStrings so that a change of layout in a new Prometheus version
// fails the tests rather than corrupting labels.
func labelsFromEncoded(data string) (labels.Labels, bool) {
	return *(*labels.Labels)(unsafe.Pointer(&data)), true
}

// A compile-time guard: labels.Labels must be exactly one string wide.
var _ [unsafe.Sizeof(labels.Labels{}) - unsafe.Sizeof("")]byte
var _ [unsafe.Sizeof("") - unsafe.Sizeof(labels.Labels{})]byte

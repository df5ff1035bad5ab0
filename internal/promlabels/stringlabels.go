//go:build !slicelabels && !dedupelabels

package promlabels

import (
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
)

// FromEncoded returns the labels.Labels whose encoding is data. In this
// build labels.Labels is a struct holding just that string;
// promlabels_test.go checks the result against labels.FromStrings, so that a
// change of layout in a new Prometheus version fails the tests rather than
// corrupting labels.
func FromEncoded(data string) (labels.Labels, bool) {
	return *(*labels.Labels)(unsafe.Pointer(&data)), true
}

// Compile-time guards: labels.Labels must be exactly one string wide.
var (
	_ [unsafe.Sizeof(labels.Labels{}) - unsafe.Sizeof("")]byte
	_ [unsafe.Sizeof("") - unsafe.Sizeof(labels.Labels{})]byte
)

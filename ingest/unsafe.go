//go:build !slicelabels && !dedupelabels

package ingest

import "unsafe"

// unsafeString returns a string sharing b's memory. It is safe here because
// with the default stringlabels build, both labelEncoder and
// labels.ScratchBuilder.Labels copy every name and value into a new string
// (or, for an appender that copies labels, into the batch's own label
// buffer), so no string handed to storage points into the pooled request
// buffer. Builds with slicelabels or
// dedupelabels, whose builders keep the strings they are given, use the
// copying variant in unsafe_copy.go.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

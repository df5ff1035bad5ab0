// Package promlabels builds Prometheus labels.Labels directly in the
// encoding of Prometheus' default label build (stringlabels), for the hot
// paths that would otherwise fill a labels.ScratchBuilder and copy its
// result: the remote-write receiver and the index's label lookups.
//
// The encoding, per label in name order: the name's length, the name, the
// value's length, the value. A length below 255 is one byte; a longer one is
// 0xFF and three bytes little-endian (at most MaxStringBytes).
//
// FromEncoded exists only in that build; with the slicelabels or
// dedupelabels build tags it reports false and callers use
// labels.ScratchBuilder.
package promlabels

// MaxStringBytes is the longest name or value the encoding can hold.
const MaxStringBytes = 1<<24 - 1

// AppendString appends s with its length prefix to buf. s must be at most
// MaxStringBytes long.
func AppendString(buf []byte, s string) []byte {
	if n := len(s); n < 255 {
		buf = append(buf, byte(n))
	} else {
		buf = append(buf, 255, byte(n), byte(n>>8), byte(n>>16))
	}
	return append(buf, s...)
}

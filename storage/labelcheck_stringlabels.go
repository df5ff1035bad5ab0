//go:build !slicelabels && !dedupelabels

package storage

import (
	"encoding/binary"

	"github.com/prometheus/prometheus/model/labels"
)

// checkLabelsFast decides the common case of checkNewLabels in one pass over
// ls's stringlabels encoding (what ls.Bytes returns in this build: per label
// the name, then the value, each a size byte — 255: three more size bytes —
// and the bytes), copied to the stack: if every byte is ASCII, every size is
// below 128 and every name and value is valid UTF-8, so what is left is the
// order of the names and the empty strings. Anything else (non-ASCII bytes,
// an encoding it does not expect) is labelsUnknown, and checkLabelsRange
// decides. labelcheck_test.go checks it against checkLabelsRange, so a change
// of the encoding in a new Prometheus version fails the tests.
func checkLabelsFast(ls labels.Labels) labelsVerdict {
	var buf [512]byte
	data := ls.Bytes(buf[:0])
	if !isASCII(data) {
		return labelsUnknown
	}
	var prev []byte
	first, empty := true, false
	for p := 0; p < len(data); {
		n := int(data[p])
		p++
		if n > len(data)-p-1 { // the name and at least the value's size byte
			return labelsUnknown
		}
		name := data[p : p+n]
		p += n
		m := int(data[p])
		p++
		if m > len(data)-p {
			return labelsUnknown
		}
		p += m
		if m == 0 {
			empty = true // dropped before the set is checked again
			continue
		}
		if n == 0 || (!first && string(name) <= string(prev)) {
			return labelsUnknown // invalid: checkLabelsRange builds the error
		}
		prev, first = name, false
	}
	if empty {
		return labelsEmptyValue
	}
	return labelsValid
}

// isASCII reports whether every byte of b is below 0x80.
func isASCII(b []byte) bool {
	var acc uint64
	for len(b) >= 8 {
		acc |= binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	for _, c := range b {
		acc |= uint64(c)
	}
	return acc&0x8080808080808080 == 0
}

package ingest

import (
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/internal/promlabels"
)

// maxLabelBytes is the longest label name or value Prometheus' label
// encoding can hold (a 3-byte length); longer ones are rejected.
const maxLabelBytes = promlabels.MaxStringBytes

// labelEncoder builds a series' labels straight into the encoding of
// Prometheus' default (stringlabels) labels.Labels: for each pair, the
// name's length, the name, the value's length, the value, with a length
// below 255 taking one byte and a longer one 0xFF plus three bytes
// little-endian. It replaces labels.ScratchBuilder on the common path: no
// []Label of string headers to fill, one copy of the bytes, one allocation
// and, for RW 1.0, one UTF-8 check over the whole label set instead of one
// per string.
//
// It handles only the common case: names non-empty and strictly ascending,
// __name__ present, every length at most maxLabelBytes. Anything else makes
// finish report false and the caller takes the general path, which sorts
// and produces the precise error message.
//
// The buffer is passed in and returned by add rather than kept in the
// struct, and the struct holds no pointers: the caller keeps both in local
// variables, so the per-pair stores need no GC write barriers. Not safe for
// concurrent use.
type labelEncoder struct {
	prevOff, prevEnd int  // the previous name is buf[prevOff:prevEnd]
	named            bool // __name__ with a non-empty value was added
	failed           bool // the general path must build these labels
	wideLens         bool // a length byte is >= 0x80, so buf is not ASCII outside the strings
}

// add appends one pair to buf; empty values are dropped (an empty label is
// no label, as in the general path).
func (e *labelEncoder) add(buf []byte, name, value string) []byte {
	if e.failed || value == "" {
		return buf
	}
	if name == "" || (e.prevEnd > 0 && name <= string(buf[e.prevOff:e.prevEnd])) ||
		len(name) > maxLabelBytes || len(value) > maxLabelBytes {
		e.failed = true
		return buf
	}
	if name == model.MetricNameLabel {
		e.named = true
	}
	e.wideLens = e.wideLens || len(name) >= utf8.RuneSelf || len(value) >= utf8.RuneSelf
	buf = promlabels.AppendString(buf, name)
	e.prevOff, e.prevEnd = len(buf)-len(name), len(buf)
	return promlabels.AppendString(buf, value)
}

// validUTF8 reports whether every name and value in buf is valid UTF-8.
// When every length byte is ASCII the encoding is valid UTF-8 exactly when
// each string is (an ASCII byte can neither complete nor start a multi-byte
// sequence), so one pass over the buffer decides; otherwise each string is
// checked on its own.
func (e *labelEncoder) validUTF8(buf []byte) bool {
	if !e.wideLens {
		return utf8.Valid(buf)
	}
	for i := 0; i < len(buf); {
		n := int(buf[i])
		i++
		if n == 255 {
			n = int(buf[i]) | int(buf[i+1])<<8 | int(buf[i+2])<<16
			i += 3
		}
		if !utf8.Valid(buf[i : i+n]) {
			return false
		}
		i += n
	}
	return true
}

// finish returns the labels encoded in buf, or false when the general path
// must build them. checkUTF8 is false when the caller validated the strings
// already (RW 2.0 checks each symbol once per request). With borrow the
// labels share buf's memory, valid until buf is next written: only for an
// appender that copies what it keeps (labelCopier).
func (e *labelEncoder) finish(buf []byte, checkUTF8, borrow bool) (labels.Labels, bool) {
	if e.failed || !e.named || (checkUTF8 && !e.validUTF8(buf)) {
		return labels.EmptyLabels(), false
	}
	if borrow {
		return promlabels.FromEncoded(unsafeString(buf))
	}
	return promlabels.FromEncoded(string(buf))
}

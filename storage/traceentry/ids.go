package traceentry

import (
	"encoding/hex"
	"errors"
	"strings"
)

// TraceID is a 16-byte OTLP trace ID. The zero value is invalid in OTLP.
type TraceID [16]byte

// SpanID is an 8-byte OTLP span ID. The zero value is invalid in OTLP and,
// as a parent span ID, means "no parent" (a root span).
type SpanID [8]byte

// ErrInvalidID is returned by ParseTraceID and ParseSpanID.
var ErrInvalidID = errors.New("invalid id")

// IsZero reports whether id is all zeros.
func (id TraceID) IsZero() bool { return id == TraceID{} }

// IsZero reports whether id is all zeros.
func (id SpanID) IsZero() bool { return id == SpanID{} }

// String returns the 32-digit lowercase hex form (OTLP/JSON's spelling).
func (id TraceID) String() string { return hex.EncodeToString(id[:]) }

// String returns the 16-digit lowercase hex form (OTLP/JSON's spelling).
func (id SpanID) String() string { return hex.EncodeToString(id[:]) }

// ParseTraceID parses a hex trace ID of 1 to 32 digits, either case; a
// shorter one is left-padded with zeros, as Tempo does for IDs whose leading
// zeros were trimmed.
func ParseTraceID(s string) (TraceID, error) {
	var id TraceID
	err := parseHexID(id[:], s)
	return id, err
}

// ParseSpanID parses a hex span ID of 1 to 16 digits, either case,
// left-padded with zeros.
func ParseSpanID(s string) (SpanID, error) {
	var id SpanID
	err := parseHexID(id[:], s)
	return id, err
}

func parseHexID(dst []byte, s string) error {
	if s == "" || len(s) > 2*len(dst) {
		return ErrInvalidID
	}
	if len(s)%2 == 1 {
		s = "0" + s
	}
	s = strings.Repeat("00", len(dst)-len(s)/2) + s
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		return ErrInvalidID
	}
	return nil
}

package traceql

import (
	"errors"
	"fmt"
)

// Sentinels. Every error from Parse matches ErrParse; those about valid
// TraceQL that weft does not implement (metrics functions, parent.) also
// match ErrUnsupported. Search returns errors that match ErrBadRequest for
// invalid request values. The HTTP layer maps all three to 400.
var (
	ErrParse       = errors.New("parse error")
	ErrUnsupported = errors.New("unsupported")
	ErrBadRequest  = errors.New("bad request")
)

// ParseError is a syntax or semantic error in a query, with the 1-based
// line and column (in characters) where it was found.
type ParseError struct {
	Line, Col   int
	Msg         string
	Unsupported bool // valid TraceQL that weft does not implement
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("parse error at line %d, col %d: %s", e.Line, e.Col, e.Msg)
}

// Is makes errors.Is(err, ErrParse) true, and errors.Is(err, ErrUnsupported)
// for unsupported features.
func (e *ParseError) Is(target error) bool {
	return target == ErrParse || (e.Unsupported && target == ErrUnsupported)
}

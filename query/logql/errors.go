package logql

import (
	"errors"
	"fmt"
)

// ErrParse matches every *ParseError with errors.Is.
var ErrParse = errors.New("parse error")

// ParseError is a syntax or semantic error in a query, with the position
// (1-based line and column) where it was found. The HTTP layer maps it to 400.
type ParseError struct {
	Line, Col int
	Msg       string
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return "parse error : " + e.Msg
	}
	return fmt.Sprintf("parse error at line %d, col %d: %s", e.Line, e.Col, e.Msg)
}

// Is makes errors.Is(err, ErrParse) true.
func (e *ParseError) Is(target error) bool { return target == ErrParse }

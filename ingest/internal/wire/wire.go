// Package wire is weft's one protobuf wire toolkit for the hand-written
// decoders of the ingest paths (remote write 1.0 and 2.0, Loki push): varints,
// tags, length-delimited values and unknown-field skipping that follow the
// generated gogo/protobuf code Prometheus' and Loki's own receivers use, not
// the stricter protowire.Consume* functions, so that weft accepts every body
// they accept: a varint has at most 10 bytes and bits beyond 64 are dropped;
// a field number is the low 32 bits of tag>>3; groups of unknown fields nest
// by depth. Nothing here panics on input; errors are plain (callers wrap
// them with their own sentinel and context).
package wire

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Errors, in one block; callers wrap them.
var (
	ErrVarint    = errors.New("varint overflow or truncated")
	ErrEOF       = errors.New("unexpected end of data")
	ErrTag       = errors.New("illegal tag")
	ErrEndGroup  = errors.New("unexpected end group")
	ErrWireType  = errors.New("illegal wire type")
	ErrLength    = errors.New("invalid length")
	ErrTruncated = errors.New("truncated field")
)

// Varint decodes a base-128 varint; n is 0 when b holds no complete varint.
func Varint(b []byte) (v uint64, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	for i := 0; i < 10 && i < len(b); i++ {
		c := b[i]
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// Tag decodes a field tag: its number, wire type and length in b.
func Tag(b []byte) (protowire.Number, protowire.Type, int, error) {
	v, n := Varint(b)
	if n == 0 {
		return 0, 0, 0, fmt.Errorf("tag: %w", ErrVarint)
	}
	num, typ := int32(v>>3), protowire.Type(v&7)
	if typ == protowire.EndGroupType {
		return 0, 0, 0, ErrEndGroup
	}
	if num <= 0 {
		return 0, 0, 0, fmt.Errorf("%w %d", ErrTag, num)
	}
	return protowire.Number(num), typ, n, nil
}

// LengthPrefixed returns the payload of a length-delimited value at b and
// the bytes it took.
func LengthPrefixed(b []byte) ([]byte, int, error) {
	l, n := Varint(b)
	if n == 0 {
		return nil, 0, ErrVarint
	}
	if int(l) < 0 || l > uint64(len(b)-n) {
		return nil, 0, ErrLength
	}
	end := n + int(l)
	return b[n:end], end, nil
}

// SkipValue consumes a value of wire type typ (after its tag), nesting
// groups by depth like gogo's skip functions, and returns its length.
func SkipValue(typ protowire.Type, b []byte) (int, error) {
	depth, i := 0, 0
	for {
		switch typ {
		case protowire.VarintType:
			_, n := Varint(b[i:])
			if n == 0 {
				return 0, ErrVarint
			}
			i += n
		case protowire.Fixed64Type:
			i += 8
		case protowire.BytesType:
			_, n, err := LengthPrefixed(b[i:])
			if err != nil {
				return 0, err
			}
			i += n
		case protowire.StartGroupType:
			depth++
		case protowire.EndGroupType:
			if depth == 0 {
				return 0, ErrEndGroup
			}
			depth--
		case protowire.Fixed32Type:
			i += 4
		default:
			return 0, ErrWireType
		}
		if i > len(b) {
			return 0, ErrTruncated
		}
		if depth == 0 {
			return i, nil
		}
		if i >= len(b) {
			return 0, ErrEOF
		}
		v, n := Varint(b[i:])
		if n == 0 {
			return 0, ErrVarint
		}
		i += n
		typ = protowire.Type(v & 7)
	}
}

// EachField walks the fields of one message: f gets each field's number and
// wire type, for a bytes field the payload v, for a varint its value x.
// Fixed-width fields are skipped over (f sees them with v and x zero);
// groups are skipped whole.
func EachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n, err := Tag(b)
		if err != nil {
			return err
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = Varint(b)
			if n == 0 {
				return fmt.Errorf("field %d: %w", num, ErrVarint)
			}
		case protowire.BytesType:
			v, n, err = LengthPrefixed(b)
		default:
			n, err = SkipValue(typ, b)
		}
		if err != nil {
			return fmt.Errorf("field %d: %w", num, err)
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

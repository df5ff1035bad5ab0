package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Hand-written protobuf wire helpers. Every function validates lengths and wire
// types, returns an error wrapping ErrMalformed instead of panicking, and
// accepts both packed and unpacked encodings of repeated scalars, as the
// protobuf specification requires of parsers.

// Varints, tags, lengths and unknown-field skipping follow the generated
// gogo/protobuf code that Prometheus' own receiver uses, not the stricter
// protowire.Consume* functions, so that weft accepts every body Prometheus
// accepts: a varint has at most 10 bytes and bits beyond 64 are dropped; a
// field number is the low 32 bits of tag>>3; groups of unknown fields nest
// by depth.

var (
	errVarint    = errors.New("varint overflow or truncated")
	errEOF       = errors.New("unexpected end of data")
	errTag       = errors.New("illegal tag")
	errEndGroup  = errors.New("unexpected end group")
	errWireType  = errors.New("illegal wire type")
	errLength    = errors.New("invalid length")
	errTruncated = errors.New("truncated field")
)

// varint decodes a base-128 varint; n is 0 when b holds no complete varint.
func varint(b []byte) (v uint64, n int) {
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

// consumeTag decodes a field tag of a message.
func consumeTag(msg string, b []byte) (protowire.Number, protowire.Type, int, error) {
	v, n := varint(b)
	if n == 0 {
		return 0, 0, 0, fmt.Errorf("%w: %s tag: %w", ErrMalformed, msg, errVarint)
	}
	num, typ := int32(v>>3), protowire.Type(v&7)
	if typ == protowire.EndGroupType {
		return 0, 0, 0, fmt.Errorf("%w: %s: %w", ErrMalformed, msg, errEndGroup)
	}
	if num <= 0 {
		return 0, 0, 0, fmt.Errorf("%w: %s: %w %d", ErrMalformed, msg, errTag, num)
	}
	return protowire.Number(num), typ, n, nil
}

// lengthPrefixed returns the payload of a length-delimited value at b.
func lengthPrefixed(b []byte) ([]byte, int, error) {
	l, n := varint(b)
	if n == 0 {
		return nil, 0, errVarint
	}
	if int(l) < 0 || l > uint64(len(b)-n) {
		return nil, 0, errLength
	}
	end := n + int(l)
	return b[n:end], end, nil
}

func malformed(what string, n int) error {
	if n < 0 {
		return fmt.Errorf("%w: %s: %w", ErrMalformed, what, protowire.ParseError(n))
	}
	return fmt.Errorf("%w: %s", ErrMalformed, what)
}

// wrongType reports a known field encoded with an unexpected wire type.
func wrongType(msg string, num protowire.Number, typ protowire.Type) error {
	return fmt.Errorf("%w: %s field %d has wire type %d", ErrMalformed, msg, num, typ)
}

// skipField consumes an unknown field's value (after its tag), nesting
// groups by depth like gogo's skip functions.
func skipField(msg string, _ protowire.Number, typ protowire.Type, b []byte) (int, error) {
	n, err := skipValue(typ, b)
	if err != nil {
		return 0, fmt.Errorf("%w: %s unknown field: %w", ErrMalformed, msg, err)
	}
	return n, nil
}

func skipValue(typ protowire.Type, b []byte) (int, error) {
	depth, i := 0, 0
	for {
		switch typ {
		case protowire.VarintType:
			_, n := varint(b[i:])
			if n == 0 {
				return 0, errVarint
			}
			i += n
		case protowire.Fixed64Type:
			i += 8
		case protowire.BytesType:
			_, n, err := lengthPrefixed(b[i:])
			if err != nil {
				return 0, err
			}
			i += n
		case protowire.StartGroupType:
			depth++
		case protowire.EndGroupType:
			if depth == 0 {
				return 0, errEndGroup
			}
			depth--
		case protowire.Fixed32Type:
			i += 4
		default:
			return 0, errWireType
		}
		if i > len(b) {
			return 0, errTruncated
		}
		if depth == 0 {
			return i, nil
		}
		if i >= len(b) {
			return 0, errEOF
		}
		v, n := varint(b[i:])
		if n == 0 {
			return 0, errVarint
		}
		i += n
		typ = protowire.Type(v & 7)
	}
}

func consumeVarint(msg string, typ protowire.Type, num protowire.Number, b []byte) (uint64, int, error) {
	if typ != protowire.VarintType {
		return 0, 0, wrongType(msg, num, typ)
	}
	v, n := varint(b)
	if n == 0 {
		return 0, 0, malformed(msg, 0)
	}
	return v, n, nil
}

func consumeDouble(msg string, typ protowire.Type, num protowire.Number, b []byte) (float64, int, error) {
	if typ != protowire.Fixed64Type {
		return 0, 0, wrongType(msg, num, typ)
	}
	v, n := protowire.ConsumeFixed64(b)
	if n < 0 {
		return 0, 0, malformed(msg, n)
	}
	return math.Float64frombits(v), n, nil
}

func consumeBytes(msg string, typ protowire.Type, num protowire.Number, b []byte) ([]byte, int, error) {
	if typ != protowire.BytesType {
		return nil, 0, wrongType(msg, num, typ)
	}
	v, n, err := lengthPrefixed(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %w", ErrMalformed, msg, err)
	}
	return v, n, nil
}

// packedBounds reads the length of a packed repeated field at b and returns
// where its elements start and end.
func packedBounds(msg string, b []byte) (start, end int, err error) {
	_, n, err := lengthPrefixed(b)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s: %w", ErrMalformed, msg, err)
	}
	_, hn := varint(b)
	return hn, n, nil
}

// The packed decoders below read elements while their start lies inside the
// packed length, and an element may run past it into the rest of the
// message: that is what the generated gogo code of Prometheus' receiver does,
// and weft accepts what Prometheus accepts. The returned n is where decoding
// of the enclosing message resumes.

// appendUint32s decodes a repeated uint32 field occurrence (packed or not).
// Values wider than 32 bits are truncated, as protobuf does.
func appendUint32s(dst []uint32, msg string, typ protowire.Type, num protowire.Number, b []byte) ([]uint32, int, error) {
	switch typ {
	case protowire.VarintType:
		v, n := varint(b)
		if n == 0 {
			return dst, 0, malformed(msg, 0)
		}
		return append(dst, uint32(v)), n, nil
	case protowire.BytesType:
		i, end, err := packedBounds(msg, b)
		if err != nil {
			return dst, 0, err
		}
		for i < end {
			v, m := varint(b[i:])
			if m == 0 {
				return dst, 0, malformed(msg, 0)
			}
			dst = append(dst, uint32(v))
			i += m
		}
		return dst, i, nil
	default:
		return dst, 0, wrongType(msg, num, typ)
	}
}

// appendSint64s decodes a repeated sint64 (zigzag) field occurrence.
func appendSint64s(dst []int64, msg string, typ protowire.Type, num protowire.Number, b []byte) ([]int64, int, error) {
	switch typ {
	case protowire.VarintType:
		v, n := varint(b)
		if n == 0 {
			return dst, 0, malformed(msg, 0)
		}
		return append(dst, protowire.DecodeZigZag(v)), n, nil
	case protowire.BytesType:
		i, end, err := packedBounds(msg, b)
		if err != nil {
			return dst, 0, err
		}
		for i < end {
			v, m := varint(b[i:])
			if m == 0 {
				return dst, 0, malformed(msg, 0)
			}
			dst = append(dst, protowire.DecodeZigZag(v))
			i += m
		}
		return dst, i, nil
	default:
		return dst, 0, wrongType(msg, num, typ)
	}
}

// appendDoubles decodes a repeated double field occurrence.
func appendDoubles(dst []float64, msg string, typ protowire.Type, num protowire.Number, b []byte) ([]float64, int, error) {
	switch typ {
	case protowire.Fixed64Type:
		if len(b) < 8 {
			return dst, 0, malformed(msg, 0)
		}
		return append(dst, math.Float64frombits(binary.LittleEndian.Uint64(b))), 8, nil
	case protowire.BytesType:
		i, end, err := packedBounds(msg, b)
		if err != nil {
			return dst, 0, err
		}
		for i < end {
			if len(b)-i < 8 {
				return dst, 0, malformed(msg, 0)
			}
			dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(b[i:])))
			i += 8
		}
		return dst, i, nil
	default:
		return dst, 0, wrongType(msg, num, typ)
	}
}

package ingest

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/weftdb/weft/ingest/internal/wire"
)

// Hand-written protobuf wire helpers over ingest/internal/wire (the one
// toolkit, shared with Loki push): every function validates lengths and wire
// types, returns an error wrapping ErrMalformed instead of panicking, and
// accepts both packed and unpacked encodings of repeated scalars, as the
// protobuf specification requires of parsers.

var (
	varint         = wire.Varint
	lengthPrefixed = wire.LengthPrefixed
)

// consumeTag decodes a field tag of a message.
func consumeTag(msg string, b []byte) (protowire.Number, protowire.Type, int, error) {
	num, typ, n, err := wire.Tag(b)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w: %s %w", ErrMalformed, msg, err)
	}
	return num, typ, n, nil
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
	n, err := wire.SkipValue(typ, b)
	if err != nil {
		return 0, fmt.Errorf("%w: %s unknown field: %w", ErrMalformed, msg, err)
	}
	return n, nil
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

package traceentry

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
)

// ValueType is the type of an attribute Value, one per OTLP AnyValue case.
type ValueType uint8

// The value types. ValueEmpty is an AnyValue with no value set.
const (
	ValueEmpty ValueType = iota
	ValueString
	ValueInt
	ValueFloat
	ValueBool
	ValueBytes
	ValueArray
	ValueMap
)

var valueTypeNames = [...]string{"empty", "string", "int", "float", "bool", "bytes", "array", "map"}

// String returns the type's lowercase name ("string", "int", ...).
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return "ValueType(" + strconv.Itoa(int(t)) + ")"
}

// Value is an attribute value of any OTLP type. The zero Value is
// ValueEmpty. Values are immutable once built: the constructors copy nothing
// they are given (an ArrayValue keeps the slice it was passed), so callers
// must not modify a slice after handing it over.
type Value struct {
	str  string     // ValueString, ValueBytes
	num  uint64     // ValueInt (two's complement), ValueFloat (IEEE bits), ValueBool (0/1)
	comp *composite // ValueArray, ValueMap
	typ  ValueType
}

type composite struct {
	arr []Value
	kvs []KeyValue
}

// KeyValue is one attribute: a key and its value.
type KeyValue struct {
	Key   string
	Value Value
}

// StringValue returns a string Value.
func StringValue(s string) Value { return Value{typ: ValueString, str: s} }

// IntValue returns an int64 Value.
func IntValue(i int64) Value { return Value{typ: ValueInt, num: uint64(i)} }

// FloatValue returns a float64 Value.
func FloatValue(f float64) Value { return Value{typ: ValueFloat, num: math.Float64bits(f)} }

// BoolValue returns a bool Value.
func BoolValue(b bool) Value {
	v := Value{typ: ValueBool}
	if b {
		v.num = 1
	}
	return v
}

// BytesValue returns a bytes Value holding a copy of b.
func BytesValue(b []byte) Value { return Value{typ: ValueBytes, str: string(b)} }

// ArrayValue returns an array Value of elems (kept, not copied).
func ArrayValue(elems ...Value) Value {
	return Value{typ: ValueArray, comp: &composite{arr: elems}}
}

// MapValue returns a map (OTLP kvlist) Value of kvs in the order given (kept,
// not copied).
func MapValue(kvs ...KeyValue) Value {
	return Value{typ: ValueMap, comp: &composite{kvs: kvs}}
}

// Type returns the value's type.
func (v Value) Type() ValueType { return v.typ }

// Str returns the string of a ValueString (and the raw bytes of a
// ValueBytes), "" for other types.
func (v Value) Str() string {
	if v.typ == ValueString || v.typ == ValueBytes {
		return v.str
	}
	return ""
}

// Int returns the integer of a ValueInt, 0 for other types.
func (v Value) Int() int64 {
	if v.typ == ValueInt {
		return int64(v.num)
	}
	return 0
}

// Float returns the number of a ValueFloat, 0 for other types.
func (v Value) Float() float64 {
	if v.typ == ValueFloat {
		return math.Float64frombits(v.num)
	}
	return 0
}

// Bool returns the boolean of a ValueBool, false for other types.
func (v Value) Bool() bool { return v.typ == ValueBool && v.num == 1 }

// Bytes returns a copy of the bytes of a ValueBytes, nil for other types.
func (v Value) Bytes() []byte {
	if v.typ == ValueBytes {
		return []byte(v.str)
	}
	return nil
}

// Array returns the elements of a ValueArray (shared, do not modify), nil
// for other types.
func (v Value) Array() []Value {
	if v.typ == ValueArray && v.comp != nil {
		return v.comp.arr
	}
	return nil
}

// Map returns the entries of a ValueMap (shared, do not modify), nil for
// other types.
func (v Value) Map() []KeyValue {
	if v.typ == ValueMap && v.comp != nil {
		return v.comp.kvs
	}
	return nil
}

// Equal reports whether v and o have the same type and the same value,
// recursively for arrays and maps (map entries compared in order). Floats
// compare by bits, so NaN equals the same NaN.
func (v Value) Equal(o Value) bool {
	if v.typ != o.typ || v.str != o.str || v.num != o.num {
		return false
	}
	a, b := v.Array(), o.Array()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	m, n := v.Map(), o.Map()
	if len(m) != len(n) {
		return false
	}
	for i := range m {
		if m[i].Key != n[i].Key || !m[i].Value.Equal(n[i].Value) {
			return false
		}
	}
	return true
}

// String renders the value for people and tests: strings quoted as Go
// does, numbers and booleans plain, bytes as base64 in b"...", arrays as
// [a, b] and maps as {k=v, ...}; an empty value is "<empty>".
func (v Value) String() string {
	var b strings.Builder
	v.appendTo(&b)
	return b.String()
}

func (v Value) appendTo(b *strings.Builder) {
	switch v.typ {
	case ValueString:
		b.WriteString(strconv.Quote(v.str))
	case ValueInt:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case ValueFloat:
		b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case ValueBool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case ValueBytes:
		b.WriteString(`b"`)
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(v.str)))
		b.WriteByte('"')
	case ValueArray:
		b.WriteByte('[')
		for i, e := range v.Array() {
			if i > 0 {
				b.WriteString(", ")
			}
			e.appendTo(b)
		}
		b.WriteByte(']')
	case ValueMap:
		b.WriteByte('{')
		for i, kv := range v.Map() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(kv.Key))
			b.WriteByte('=')
			kv.Value.appendTo(b)
		}
		b.WriteByte('}')
	default:
		b.WriteString("<empty>")
	}
}

// Attributes is a list of attributes in the order OTLP sent them. Keys are
// expected to be unique (OTLP requires it); Get returns the first match.
type Attributes []KeyValue

// Get returns the value of key and whether it is present. It scans the list
// (attribute lists are short) and does not allocate.
func (a Attributes) Get(key string) (Value, bool) {
	for i := range a {
		if a[i].Key == key {
			return a[i].Value, true
		}
	}
	return Value{}, false
}

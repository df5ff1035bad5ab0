package traceql

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/weftdb/weft/storage/traceentry"
)

// vtype is the type of a value during evaluation, and the static type of an
// expression during checking.
type vtype uint8

const (
	vNil vtype = iota
	vBool
	vInt
	vFloat
	vDuration // nanoseconds in n
	vString
	vStatus // traceentry.StatusCode in n
	vKind   // traceentry.SpanKind in n
	vID     // a span or trace ID: id[:n]
	vArray  // an array attribute: arr
	vOther  // a bytes or map attribute: present, equal to nothing
	vAttr   // static only: an attribute, typed at evaluation
	vNum    // static only: arithmetic over attributes (int, float or duration)
)

var vtypeNames = [...]string{"nil", "boolean", "int", "float", "duration", "string", "status", "kind", "id", "array", "other", "attribute", "number"}

func (t vtype) String() string { return vtypeNames[t] }

func (t vtype) numeric() bool { return t == vInt || t == vFloat || t == vDuration }

// static is a value. It is a plain struct so that evaluation passes values
// without allocating.
type static struct {
	t   vtype
	n   int64   // vBool (0/1), vInt, vDuration, vStatus, vKind, vID (length)
	f   float64 // vFloat
	s   string  // vString
	id  [16]byte
	arr []traceentry.Value
}

var (
	nilValue   = static{}
	trueValue  = static{t: vBool, n: 1}
	falseValue = static{t: vBool}
)

func boolValue(b bool) static {
	if b {
		return trueValue
	}
	return falseValue
}

func intValue(n int64) static      { return static{t: vInt, n: n} }
func durationValue(n int64) static { return static{t: vDuration, n: n} }
func floatValue(f float64) static  { return static{t: vFloat, f: f} }
func stringValue(s string) static  { return static{t: vString, s: s} }
func (v static) isTrue() bool      { return v.t == vBool && v.n == 1 }

func (v static) float() float64 {
	if v.t == vFloat {
		return v.f
	}
	return float64(v.n)
}

func spanIDValue(id traceentry.SpanID) static {
	v := static{t: vID, n: 8}
	copy(v.id[:], id[:])
	return v
}

func traceIDValue(id traceentry.TraceID) static { return static{t: vID, n: 16, id: id} }

// fromValue converts an attribute value. An empty OTLP value reads as nil.
func fromValue(v traceentry.Value) static {
	switch v.Type() {
	case traceentry.ValueString:
		return stringValue(v.Str())
	case traceentry.ValueInt:
		return intValue(v.Int())
	case traceentry.ValueFloat:
		return floatValue(v.Float())
	case traceentry.ValueBool:
		return boolValue(v.Bool())
	case traceentry.ValueArray:
		return static{t: vArray, arr: v.Array()}
	case traceentry.ValueEmpty:
		return nilValue
	}
	return static{t: vOther}
}

// toValue converts a value for search results, as Tempo shows them:
// durations as Go duration strings, enums by name, IDs as hex.
func (v static) toValue() traceentry.Value {
	switch v.t {
	case vBool:
		return traceentry.BoolValue(v.n == 1)
	case vInt:
		return traceentry.IntValue(v.n)
	case vFloat:
		return traceentry.FloatValue(v.f)
	case vString:
		return traceentry.StringValue(v.s)
	case vArray:
		return traceentry.ArrayValue(v.arr...)
	}
	return traceentry.StringValue(v.String())
}

// String renders a value for results and messages.
func (v static) String() string {
	switch v.t {
	case vNil:
		return "nil"
	case vBool:
		return strconv.FormatBool(v.n == 1)
	case vInt:
		return strconv.FormatInt(v.n, 10)
	case vFloat:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case vDuration:
		return time.Duration(v.n).String()
	case vString:
		return v.s
	case vStatus:
		return traceentry.StatusCode(v.n).String()
	case vKind:
		return traceentry.SpanKind(v.n).String()
	case vID:
		return hex.EncodeToString(v.id[:v.n])
	case vArray:
		return traceentry.ArrayValue(v.arr...).String()
	}
	return v.t.String()
}

// normalizeHexID lowercases a hex ID and trims its leading zeros, the form
// IDs are compared in ("0001" equals "1").
func normalizeHexID(s string) string {
	return strings.TrimLeft(strings.ToLower(s), "0")
}

// idEqualsHex reports whether id equals the normalized hex string h, without
// allocating.
func idEqualsHex(v *static, h string) bool {
	var buf [32]byte
	hex.Encode(buf[:], v.id[:v.n])
	i := 0
	for i < int(2*v.n) && buf[i] == '0' {
		i++
	}
	return string(buf[i:2*v.n]) == h
}

func idsEqual(a, b *static) bool {
	var buf [32]byte
	hex.Encode(buf[:], b.id[:b.n])
	return idEqualsHex(a, strings.TrimLeft(string(buf[:2*b.n]), "0"))
}

// compare applies a comparison operator other than the regex ones, with
// TraceQL's rules: numbers (int, float, duration) compare by value, strings
// lexicographically, booleans, statuses and kinds only for equality, IDs
// with hex strings ignoring leading zeros and case; any other mix, and any
// nil operand, is false (nil literals are handled by the caller). An array
// matches = and ordering when any element does, != when no element equals.
func compare(op binOp, a, b *static) bool {
	if a.t == vArray || b.t == vArray {
		return compareArray(op, a, b)
	}
	switch {
	case a.t.numeric() && b.t.numeric():
		if a.t != vFloat && b.t != vFloat {
			return cmpOrdered(op, a.n, b.n)
		}
		x, y := a.float(), b.float()
		if op == opNeq {
			return x != y
		}
		return cmpOrdered(op, x, y)
	case a.t == vString && b.t == vString:
		return cmpOrdered(op, a.s, b.s)
	case a.t == vID || b.t == vID:
		var eq bool
		switch {
		case a.t == vID && b.t == vID:
			eq = idsEqual(a, b)
		case a.t == vID && b.t == vString:
			eq = idEqualsHex(a, normalizeHexIDNoAlloc(b.s))
		case b.t == vID && a.t == vString:
			eq = idEqualsHex(b, normalizeHexIDNoAlloc(a.s))
		default:
			return false
		}
		switch op {
		case opEq:
			return eq
		case opNeq:
			return !eq
		}
		return false
	case a.t == b.t && (a.t == vBool || a.t == vStatus || a.t == vKind):
		switch op {
		case opEq:
			return a.n == b.n
		case opNeq:
			return a.n != b.n
		}
	}
	return false
}

// normalizeHexIDNoAlloc trims leading zeros; literals are lowercased by the
// checker, so only attribute strings with upper case pay for ToLower.
func normalizeHexIDNoAlloc(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'F' {
			return normalizeHexID(s)
		}
	}
	return strings.TrimLeft(s, "0")
}

type ordered interface{ ~int64 | ~float64 | ~string }

func cmpOrdered[T ordered](op binOp, x, y T) bool {
	switch op {
	case opEq:
		return x == y
	case opNeq:
		return x != y
	case opLt:
		return x < y
	case opLte:
		return x <= y
	case opGt:
		return x > y
	case opGte:
		return x >= y
	}
	return false
}

func compareArray(op binOp, a, b *static) bool {
	if a.t == vArray && b.t == vArray {
		return false
	}
	arr, other, swapped := a.arr, b, false
	if b.t == vArray {
		arr, other, swapped = b.arr, a, true
	}
	elemOp := op
	if op == opNeq {
		elemOp = opEq
	}
	found := false
	for _, e := range arr {
		ev := fromValue(e)
		if ev.t == vArray {
			continue // nested arrays match nothing
		}
		var ok bool
		if swapped {
			ok = compare(elemOp, other, &ev)
		} else {
			ok = compare(elemOp, &ev, other)
		}
		if ok {
			found = true
			break
		}
	}
	if op == opNeq {
		return !found
	}
	return found
}

// arith applies an arithmetic operator to numbers; anything else gives nil.
// Integers and durations stay integral for + - * % (wrapping on overflow; a
// duration operand makes a duration), / and ^ give floats; % by zero is nil.
func arith(op binOp, a, b static) static {
	if !a.t.numeric() || !b.t.numeric() {
		return nilValue
	}
	if a.t != vFloat && b.t != vFloat && op != opDiv && op != opPow {
		t := vInt
		if a.t == vDuration || b.t == vDuration {
			t = vDuration
		}
		var n int64
		switch op {
		case opAdd:
			n = a.n + b.n
		case opSub:
			n = a.n - b.n
		case opMul:
			n = a.n * b.n
		case opMod:
			if b.n == 0 {
				return nilValue
			}
			if b.n == -1 {
				n = 0 // avoid the MinInt64 % -1 trap
			} else {
				n = a.n % b.n
			}
		}
		return static{t: t, n: n}
	}
	x, y := a.float(), b.float()
	switch op {
	case opAdd:
		return floatValue(x + y)
	case opSub:
		return floatValue(x - y)
	case opMul:
		return floatValue(x * y)
	case opDiv:
		return floatValue(x / y)
	case opMod:
		return floatValue(math.Mod(x, y))
	}
	return floatValue(math.Pow(x, y))
}

package api

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// jsonCodec is the Prometheus API's JSON codec with its own encoder for the
// large answers: instant vectors and matrices of float samples, and
// /series label sets. It writes exactly the bytes v1.JSONCodec writes (a
// differential test holds it to that) at about three times its speed,
// appending to one buffer instead of going through jsoniter's reflection
// and stream. Every other answer is v1.JSONCodec's.
type jsonCodec struct{ v1.JSONCodec }

func (c jsonCodec) Encode(resp *v1.Response) ([]byte, error) {
	if resp.Status != "success" || resp.ErrorType != "" || resp.Error != "" {
		return c.JSONCodec.Encode(resp)
	}
	b := make([]byte, 0, sizeHint(resp.Data))
	b = append(b, `{"status":"success","data":`...)
	switch d := resp.Data.(type) {
	case *v1.QueryData:
		if d.Stats != nil || d.Cost != nil {
			return c.JSONCodec.Encode(resp)
		}
		switch r := d.Result.(type) {
		case promql.Vector:
			if r == nil || hasHistograms(r) {
				return c.JSONCodec.Encode(resp)
			}
			b = append(b, `{"resultType":"vector","result":`...)
			b = appendPromVector(b, r)
		case promql.Matrix:
			if r == nil || matrixHasHistograms(r) {
				return c.JSONCodec.Encode(resp)
			}
			b = append(b, `{"resultType":"matrix","result":`...)
			b = appendPromMatrix(b, r)
		default:
			return c.JSONCodec.Encode(resp)
		}
		if string(d.ResultType) != string(d.Result.Type()) {
			return c.JSONCodec.Encode(resp)
		}
		b = append(b, '}')
	case []labels.Labels:
		if d == nil {
			return c.JSONCodec.Encode(resp)
		}
		b = append(b, '[')
		for i, ls := range d {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPromLabels(b, ls)
		}
		b = append(b, ']')
	default:
		return c.JSONCodec.Encode(resp)
	}
	b = appendPromStrings(b, `,"warnings":`, resp.Warnings)
	b = appendPromStrings(b, `,"infos":`, resp.Infos)
	return append(b, '}'), nil
}

// sizeHint estimates the encoded size of data from its first series, so
// that a 50 MB answer is not copied through a dozen buffer doublings.
func sizeHint(data any) int {
	const sample = 16
	var per, n int
	switch d := data.(type) {
	case *v1.QueryData:
		switch r := d.Result.(type) {
		case promql.Vector:
			n = len(r)
			var b []byte
			for i := range min(n, sample) {
				b = appendPromLabels(b[:0], r[i].Metric)
				per += len(b) + 48
			}
		case promql.Matrix:
			n = len(r)
			var b []byte
			for i := range min(n, sample) {
				b = appendPromLabels(b[:0], r[i].Metric)
				per += len(b) + 40*len(r[i].Floats) + 32
			}
		}
	case []labels.Labels:
		n = len(d)
		var b []byte
		for i := range min(n, sample) {
			b = appendPromLabels(b[:0], d[i])
			per += len(b) + 1
		}
	}
	if n == 0 {
		return 1024
	}
	return 1024 + per/min(n, sample)*n*9/8
}

func hasHistograms(v promql.Vector) bool {
	for i := range v {
		if v[i].H != nil {
			return true
		}
	}
	return false
}

func matrixHasHistograms(m promql.Matrix) bool {
	for i := range m {
		if len(m[i].Histograms) > 0 {
			return true
		}
	}
	return false
}

func appendPromVector(b []byte, v promql.Vector) []byte {
	b = append(b, '[')
	for i := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"metric":`...)
		b = appendPromLabels(b, v[i].Metric)
		b = append(b, `,"value":[`...)
		b = appendPromTimestamp(b, v[i].T)
		b = append(b, ',')
		b = appendPromFloat(b, v[i].F)
		b = append(b, "]}"...)
	}
	return append(b, ']')
}

func appendPromMatrix(b []byte, m promql.Matrix) []byte {
	b = append(b, '[')
	for i := range m {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"metric":`...)
		b = appendPromLabels(b, m[i].Metric)
		for j, p := range m[i].Floats {
			if j == 0 {
				b = append(b, `,"values":[`...)
			} else {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = appendPromTimestamp(b, p.T)
			b = append(b, ',')
			b = appendPromFloat(b, p.F)
			b = append(b, ']')
		}
		if len(m[i].Floats) > 0 {
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendPromLabels writes a label set as Prometheus' marshalLabelsJSON does.
func appendPromLabels(b []byte, ls labels.Labels) []byte {
	return appendLabelObject(b, ls, appendPromString)
}

// appendPromTimestamp writes milliseconds as seconds, as jsonutil.MarshalTimestamp.
func appendPromTimestamp(b []byte, t int64) []byte {
	if t < 0 {
		b = append(b, '-')
		t = -t
	}
	b = strconv.AppendInt(b, t/1000, 10)
	if f := t % 1000; f != 0 {
		b = append(b, '.')
		if f < 100 {
			b = append(b, '0')
		}
		if f < 10 {
			b = append(b, '0')
		}
		b = strconv.AppendInt(b, f, 10)
	}
	return b
}

// appendPromFloat writes a sample value as a string, as jsonutil.MarshalFloat.
func appendPromFloat(b []byte, f float64) []byte {
	b = append(b, '"')
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendPromString writes s as jsoniter's Stream.WriteString: quotes,
// backslashes and control characters escaped, everything else (bytes of
// invalid UTF-8 too) as is.
func appendPromString(b []byte, s string) []byte {
	b = append(b, '"')
	start, i := 0, 0
	// Eight bytes at a time while none needs escaping: the SWAR tests
	// "some byte < 0x20" and "some byte is zero" (after xoring '"' or '\\'
	// in) never miss one; a false alarm only ends the fast loop early.
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		q, bs := w^(ones*'"'), w^(ones*'\\')
		if ((w-ones*0x20)&^w|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c > 31 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		b = appendPromEscaped(b, c)
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendPromEscaped(b []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// appendPromStrings writes a non-empty string list field (omitempty) as the
// standard-library-compatible encoder does: HTML characters escaped,
// invalid UTF-8 replaced, U+2028 and U+2029 escaped.
func appendPromStrings(b []byte, field string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	return appendStringArrayWith(append(b, field...), ss, appendPromHTMLString)
}

func appendPromHTMLString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c > 31 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendPromEscaped(b, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

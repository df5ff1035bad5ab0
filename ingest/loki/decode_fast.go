package loki

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// fastJSON decodes the common shape of a JSON push body without
// reflection: {"streams":[{"stream":{...},"values":[["ns","line"(,{...})]]}]}
// with only those keys, string values, no duplicate keys in an object and
// nothing after the body. Anything else (null, other keys, other types,
// malformed input) returns ok false, and DecodeJSON decodes the body with
// encoding/json, whose answer (or error) stands; so the fast path never
// changes what a body means. Lines, names and values are substrings of one
// copy of the body.
type fastJSON struct {
	s   string
	i   int
	bad bool
	// arena holds unescaped strings back to back; sized to the body (an
	// unescaped string is never longer than its JSON form), so it never
	// grows and the strings made from it stay put.
	arena []byte
}

func decodeJSONFast(body []byte) (*Request, bool) {
	d := &fastJSON{s: string(body)}
	req := &Request{}
	d.ws()
	if !d.eat('{') {
		return nil, false
	}
	seen := false
	if !d.object(func(key string) bool {
		if key != "streams" || seen {
			return false
		}
		seen = true
		return d.array(func() bool {
			s, ok := d.stream()
			req.Streams = append(req.Streams, s)
			return ok
		})
	}) {
		return nil, false
	}
	d.ws()
	if d.i != len(d.s) || d.bad {
		return nil, false
	}
	if req.Streams == nil {
		req.Streams = []Stream{}
	}
	return req, true
}

func (d *fastJSON) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastJSON) eat(c byte) bool {
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads the members of an object whose '{' was read, calling f with
// each key positioned at its value.
func (d *fastJSON) object(f func(key string) bool) bool {
	if d.eat('}') {
		return true
	}
	for {
		k, ok := d.str()
		if !ok || !d.eat(':') || !f(k) {
			return false
		}
		if d.eat('}') {
			return true
		}
		if !d.eat(',') {
			return false
		}
	}
}

// array reads an array (including '['), calling f at each element.
func (d *fastJSON) array(f func() bool) bool {
	if !d.eat('[') {
		return false
	}
	if d.eat(']') {
		return true
	}
	for {
		if !f() {
			return false
		}
		if d.eat(']') {
			return true
		}
		if !d.eat(',') {
			return false
		}
	}
}

// str reads a string. One without escapes that is valid UTF-8 is a
// substring of the body; one with the short escapes (\" \\ \/ \b \f \n
// \r \t) is unescaped here; others (\u escapes, invalid UTF-8, which
// encoding/json replaces) are decoded by encoding/json.
func (d *fastJSON) str() (string, bool) {
	d.ws()
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return "", false
	}
	start := d.i + 1
	escapes, other := false, false
	for j := start; j < len(d.s); j++ {
		c := d.s[j]
		switch {
		case c == '"':
			d.i = j + 1
			raw := d.s[start:j]
			switch {
			case other:
				var v string
				if err := json.Unmarshal([]byte(d.s[start-1:j+1]), &v); err != nil {
					return "", false
				}
				return v, true
			case escapes:
				return d.unescape(raw)
			}
			return raw, true
		case c == '\\':
			if j+1 >= len(d.s) {
				return "", false
			}
			escapes = true
			if d.s[j+1] == 'u' {
				other = true
			}
			j++ // the escaped byte cannot end the string
		case c < 0x20:
			return "", false // invalid in JSON
		case c >= 0x80:
			r, size := utf8.DecodeRuneInString(d.s[j:])
			if r == utf8.RuneError && size == 1 {
				other = true
			}
			j += size - 1
		}
	}
	return "", false
}

// unescape resolves the short escapes of a JSON string's contents.
func (d *fastJSON) unescape(s string) (string, bool) {
	if d.arena == nil {
		d.arena = make([]byte, 0, len(d.s))
	}
	start := len(d.arena)
	b := d.arena
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		i++
		switch s[i] {
		case '"', '\\', '/':
			b = append(b, s[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		default:
			return "", false
		}
	}
	d.arena = b
	if len(b) == start {
		return "", true
	}
	return unsafe.String(&b[start], len(b)-start), true
}

// pairs reads an object of string values (including '{'); a repeated key
// is left to encoding/json (the last one wins there).
func (d *fastJSON) pairs(dst []Pair) ([]Pair, bool) {
	if !d.eat('{') {
		return dst, false
	}
	start := len(dst)
	ok := d.object(func(key string) bool {
		v, ok := d.str()
		if !ok {
			return false
		}
		for _, p := range dst[start:] {
			if p.Name == key {
				return false
			}
		}
		dst = append(dst, Pair{key, v})
		return true
	})
	return dst, ok
}

func (d *fastJSON) stream() (Stream, bool) {
	var s Stream
	if !d.eat('{') {
		return s, false
	}
	var seenStream, seenValues bool
	ok := d.object(func(key string) bool {
		switch {
		case key == "stream" && !seenStream:
			seenStream = true
			var ok bool
			s.Labels, ok = d.pairs(make([]Pair, 0, 8))
			return ok
		case key == "values" && !seenValues:
			seenValues = true
			return d.array(func() bool {
				e, ok := d.entry()
				s.Entries = append(s.Entries, e)
				return ok
			})
		}
		return false
	})
	if s.Labels == nil {
		s.Labels = []Pair{}
	}
	if s.Entries == nil {
		s.Entries = []Entry{}
	}
	return s, ok
}

func (d *fastJSON) entry() (Entry, bool) {
	var e Entry
	if !d.eat('[') {
		return e, false
	}
	ts, ok := d.str()
	if !ok {
		return e, false
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || !d.eat(',') {
		return e, false
	}
	e.Timestamp = t
	if e.Line, ok = d.str(); !ok {
		return e, false
	}
	if d.eat(',') {
		if e.Metadata, ok = d.pairs(nil); !ok {
			return e, false
		}
	}
	return e, d.eat(']')
}

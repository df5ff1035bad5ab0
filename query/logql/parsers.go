package logql

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

func (s *ParserStage) process(line string, lb *lbuilder) string {
	switch s.Kind {
	case "json":
		if len(s.Exprs) > 0 {
			s.jsonExprs(line, lb)
		} else {
			parseJSONLine(line, lb, s.need)
		}
	case "logfmt":
		s.logfmt(line, lb)
	case "regexp":
		m := s.re.FindStringSubmatchIndex(line)
		if m == nil {
			return line
		}
		for i, name := range s.names {
			if name == "" || m[2*i] < 0 {
				continue
			}
			lb.setParsed(name, line[m[2*i]:m[2*i+1]])
		}
	case "pattern":
		s.pat.extract(line, lb)
	case "unpack":
		return unpack(line, lb)
	}
	return line
}

// sanitizeLabelName makes s a valid label name: other characters become '_',
// a leading digit gets a '_' prefix.
func sanitizeLabelName(s string) string {
	ok := s != ""
	for i := 0; i < len(s) && ok; i++ {
		c := s[i]
		if !(isLetter(c) || c == '_' || (i > 0 && isDigit(c))) {
			ok = false
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	if s != "" && isDigit(s[0]) {
		b.WriteByte('_')
	}
	for _, r := range s {
		if r < utf8.RuneSelf && (isLetter(byte(r)) || isDigit(byte(r)) || r == '_') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ---- json ----

func parseJSONLine(line string, lb *lbuilder, need map[string]bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &obj); err != nil || obj == nil {
		lb.setErr(errJSON, jsonErrDetails(err))
		return
	}
	flattenJSON("", obj, lb, 0, need)
}

func jsonErrDetails(err error) string {
	if err == nil {
		return "expected a JSON object"
	}
	return err.Error()
}

func flattenJSON(prefix string, obj map[string]json.RawMessage, lb *lbuilder, depth int, need map[string]bool) {
	for k, raw := range obj {
		name := sanitizeLabelName(k)
		if prefix != "" {
			name = prefix + "_" + name
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		switch raw[0] {
		case '{':
			if depth > 64 {
				continue
			}
			var sub map[string]json.RawMessage
			if json.Unmarshal(raw, &sub) == nil {
				flattenJSON(name, sub, lb, depth+1, need)
			}
		case '[':
			// arrays are not extracted without an expression
		default:
			if need != nil && !need[name] {
				continue
			}
			if v, ok := jsonScalar(raw); ok {
				lb.setParsed(name, v)
			}
		}
	}
}

func jsonScalar(raw json.RawMessage) (string, bool) {
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case 'n':
		return "", true
	case '{', '[':
		return string(raw), true
	}
	return string(raw), true
}

type jsonPathElem struct {
	key   string
	index int // -1 for keys
}

// parseJSONPath parses `a.b[0]["c d"]`.
func parseJSONPath(s string) ([]jsonPathElem, error) {
	var out []jsonPathElem
	i := 0
	for i < len(s) {
		switch s[i] {
		case '.':
			i++
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, errors.New("unterminated [")
			}
			inner := s[i+1 : i+end]
			if strings.HasPrefix(inner, "\"") {
				// quoted key may contain ']'
				j := i + 2
				for j < len(s) && s[j] != '"' {
					if s[j] == '\\' {
						j++
					}
					j++
				}
				if j+1 >= len(s) || s[j+1] != ']' {
					return nil, errors.New("bad quoted key")
				}
				k, err := strconv.Unquote(s[i+1 : j+1])
				if err != nil {
					return nil, err
				}
				out = append(out, jsonPathElem{key: k, index: -1})
				i = j + 2
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad index %q", inner)
			}
			out = append(out, jsonPathElem{index: n})
			i += end + 1
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			out = append(out, jsonPathElem{key: s[i:j], index: -1})
			i = j
		}
	}
	if len(out) == 0 {
		return nil, errors.New("empty expression")
	}
	return out, nil
}

func (s *ParserStage) jsonExprs(line string, lb *lbuilder) {
	var root json.RawMessage
	if err := json.Unmarshal([]byte(line), &root); err != nil {
		lb.setErr(errJSON, err.Error())
		return
	}
	// The root object is decoded once for all expressions: each would
	// otherwise decode the whole line again.
	var rootObj map[string]json.RawMessage
	rootDecoded := false
	for i, e := range s.Exprs {
		cur := root
		found := true
		for k, pe := range s.paths[i] {
			cur = bytes.TrimSpace(cur)
			if pe.index < 0 {
				var obj map[string]json.RawMessage
				if k == 0 {
					if !rootDecoded {
						rootDecoded = true
						if len(cur) == 0 || cur[0] != '{' || json.Unmarshal(cur, &rootObj) != nil {
							rootObj = nil
						}
					}
					obj = rootObj
				} else if len(cur) == 0 || cur[0] != '{' || json.Unmarshal(cur, &obj) != nil {
					obj = nil
				}
				if obj == nil {
					found = false
					break
				}
				v, ok := obj[pe.key]
				if !ok {
					found = false
					break
				}
				cur = v
			} else {
				var arr []json.RawMessage
				if len(cur) == 0 || cur[0] != '[' || json.Unmarshal(cur, &arr) != nil || pe.index >= len(arr) {
					found = false
					break
				}
				cur = arr[pe.index]
			}
		}
		name := sanitizeLabelName(e.Name)
		if !found {
			lb.setParsed(name, "")
			continue
		}
		v, _ := jsonScalar(bytes.TrimSpace(cur))
		lb.setParsed(name, v)
	}
}

func unpack(line string, lb *lbuilder) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &obj); err != nil || obj == nil {
		lb.setErr(errUnpack, jsonErrDetails(err))
		return line
	}
	out := line
	for k, raw := range obj {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] != '"' {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		if k == "_entry" {
			out = v
			continue
		}
		lb.setParsed(sanitizeLabelName(k), v)
	}
	return out
}

// ---- logfmt ----

func (s *ParserStage) logfmt(line string, lb *lbuilder) {
	want := map[string]string(nil)
	if len(s.Exprs) > 0 {
		want = make(map[string]string, len(s.Exprs))
		for _, e := range s.Exprs {
			want[e.Expr] = sanitizeLabelName(e.Name)
		}
	}
	i := 0
	for i < len(line) {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			break
		}
		ks := i
		for i < len(line) && line[i] != '=' && line[i] != ' ' && line[i] != '\t' && line[i] != '"' {
			i++
		}
		key := line[ks:i]
		if key == "" {
			if s.Strict {
				lb.setErr(errLogfmt, fmt.Sprintf("logfmt syntax error at pos %d : unexpected '%c'", i+1, line[i]))
				return
			}
			// skip the offending token
			for i < len(line) && line[i] != ' ' {
				i++
			}
			continue
		}
		val, hasVal := "", false
		if i < len(line) && line[i] == '=' {
			hasVal = true
			i++
			if i < len(line) && line[i] == '"' {
				j := i + 1
				for j < len(line) && line[j] != '"' {
					if line[j] == '\\' {
						j++
					}
					j++
				}
				if j >= len(line) {
					if s.Strict {
						lb.setErr(errLogfmt, fmt.Sprintf("logfmt syntax error at pos %d : unterminated quoted value", i+1))
						return
					}
					val = line[i+1:]
					i = len(line)
				} else {
					uq, err := strconv.Unquote(line[i : j+1])
					if err != nil {
						uq = line[i+1 : j]
					}
					val = uq
					i = j + 1
				}
			} else {
				vs := i
				for i < len(line) && line[i] != ' ' && line[i] != '\t' {
					i++
				}
				val = line[vs:i]
			}
		} else if i < len(line) && line[i] == '"' {
			if s.Strict {
				lb.setErr(errLogfmt, fmt.Sprintf("logfmt syntax error at pos %d : unexpected '\"'", i+1))
				return
			}
			i++
			continue
		}
		if !hasVal && !s.KeepEmpty {
			continue
		}
		name := sanitizeLabelName(key)
		if s.need != nil && !s.need[name] {
			continue
		}
		if want != nil {
			n, ok := want[key]
			if !ok {
				continue
			}
			name = n
		}
		lb.setParsed(name, val)
	}
}

// ---- bytes ----

var bytesUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "ki": 1 << 10, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mi": 1 << 20, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gi": 1 << 30, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "ti": 1 << 40, "tib": 1 << 40,
	"p": 1e15, "pb": 1e15, "pi": 1 << 50, "pib": 1 << 50,
	"e": 1e18, "eb": 1e18, "ei": 1 << 60, "eib": 1 << 60,
}

// parseBytes parses "10", "10KB", "1.5 MiB" (SI and IEC units, any case).
func parseBytes(s string) (uint64, error) {
	i := 0
	for i < len(s) && (isDigit(s[i]) || s[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid bytes %q", s)
	}
	num, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("invalid bytes %q", s)
	}
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	m, ok := bytesUnits[unit]
	if !ok {
		return 0, fmt.Errorf("invalid bytes unit %q", s[i:])
	}
	return uint64(num * float64(m)), nil
}

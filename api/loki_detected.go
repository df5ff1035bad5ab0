package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/query/logql"
)

// Detected fields: weft samples the newest lines of the query (line_limit,
// default 1000) and reports the fields of their structured metadata and of
// the lines themselves (JSON objects, else logfmt), with a type guessed from
// the values and the exact cardinality among the sampled lines.

type detectedField struct {
	label    string
	typ      string
	values   map[string]struct{}
	parsers  []string
	jsonPath []string
}

func (a *lokiAPI) collectFields(r *http.Request) (map[string]*detectedField, int, error) {
	start, end, err := a.rangeParams(r, a.opts.DefaultLookback)
	if err != nil {
		return nil, 0, err
	}
	q := r.FormValue("query")
	if strings.TrimSpace(q) == "" {
		q = `{service_name=~".+"}`
	}
	lineLimit := 1000
	if v := r.FormValue("line_limit"); v != "" {
		if lineLimit, err = strconv.Atoi(v); err != nil || lineLimit <= 0 {
			return nil, 0, fmt.Errorf("%w: invalid line_limit %q", errBadParam, v)
		}
	}
	limit, err := a.limitParam(r, 1000)
	if err != nil {
		return nil, 0, err
	}
	e, err := logql.ParseExpr(q)
	if err != nil {
		return nil, 0, err
	}
	if _, ok := e.(*logql.LogSelectorExpr); !ok {
		return nil, 0, fmt.Errorf("%w: detected fields need a log query, not %q", errBadParam, q)
	}
	res, err := a.engine.Query(r.Context(), logql.QueryParams{Query: q, Start: start, End: end + 1, Direction: logql.Backward, Limit: lineLimit})
	if err != nil {
		return nil, 0, err
	}
	fields := map[string]*detectedField{}
	add := func(name, value, parser string, path []string) {
		f := fields[name]
		if f == nil {
			f = &detectedField{label: name, values: map[string]struct{}{}, jsonPath: path}
			fields[name] = f
		}
		f.values[value] = struct{}{}
		if parser != "" && !slices.Contains(f.parsers, parser) {
			f.parsers = append(f.parsers, parser)
		}
		f.typ = mergeType(f.typ, fieldType(value))
	}
	for _, s := range res.Streams {
		for _, en := range s.Entries {
			en.StructuredMetadata.Range(func(l labels.Label) { add(l.Name, l.Value, "", nil) })
			en.Parsed.Range(func(l labels.Label) {
				if l.Name != "__error__" && l.Name != "__error_details__" {
					add(l.Name, l.Value, "", nil)
				}
			})
			lineFields(en.Line, add)
		}
	}
	return fields, limit, nil
}

func (a *lokiAPI) detectedFields(w http.ResponseWriter, r *http.Request) {
	fields, limit, err := a.collectFields(r)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > limit {
		names = names[:limit]
	}
	b := []byte(`{"fields":[`)
	for i, n := range names {
		f := fields[n]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"label":`...)
		b = appendJSONString(b, f.label)
		b = append(b, `,"type":`...)
		b = appendJSONString(b, f.typ)
		b = append(b, `,"cardinality":`...)
		b = strconv.AppendInt(b, int64(len(f.values)), 10)
		b = append(b, `,"parsers":`...)
		if len(f.parsers) == 0 {
			b = append(b, "null"...)
		} else {
			b = appendStringArray(b, f.parsers)
		}
		if len(f.jsonPath) > 0 {
			b = append(b, `,"jsonPath":`...)
			b = appendStringArray(b, f.jsonPath)
		}
		b = append(b, '}')
	}
	b = append(b, `],"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	writeJSON(w, append(b, '}'))
}

func (a *lokiAPI) detectedFieldValues(w http.ResponseWriter, r *http.Request) {
	fields, limit, err := a.collectFields(r)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	var vals []string
	if f := fields[r.PathValue("name")]; f != nil {
		for v := range f.values {
			vals = append(vals, v)
		}
	}
	slices.Sort(vals)
	if len(vals) > limit {
		vals = vals[:limit]
	}
	b := appendStringArray([]byte(`{"values":`), vals)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	writeJSON(w, append(b, '}'))
}

func (a *lokiAPI) detectedLabels(w http.ResponseWriter, r *http.Request) {
	start, end, ms, ok := a.rangeAndSelector(w, r, a.opts.DefaultLookback)
	if !ok {
		return
	}
	ss, err := a.store.Series(r.Context(), start, end+1, ms...)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	card := map[string]map[string]struct{}{}
	for _, ls := range ss {
		ls.Range(func(l labels.Label) {
			if card[l.Name] == nil {
				card[l.Name] = map[string]struct{}{}
			}
			card[l.Name][l.Value] = struct{}{}
		})
	}
	names := make([]string, 0, len(card))
	for n := range card {
		names = append(names, n)
	}
	slices.Sort(names)
	b := []byte(`{"detectedLabels":[`)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"label":`...)
		b = appendJSONString(b, n)
		b = append(b, `,"cardinality":`...)
		b = strconv.AppendInt(b, int64(len(card[n])), 10)
		b = append(b, '}')
	}
	writeJSON(w, append(b, "]}"...))
}

func appendStringArray(b []byte, ss []string) []byte {
	return appendStringArrayWith(b, ss, appendJSONString)
}

// appendStringArrayWith appends ss as a JSON array, its strings written
// by str.
func appendStringArrayWith(b []byte, ss []string, str func([]byte, string) []byte) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = str(b, s)
	}
	return append(b, ']')
}

// lineFields reports the fields of a JSON object line (flattened with "_",
// jsonPath the keys) or of a logfmt line.
func lineFields(line string, add func(name, value, parser string, path []string)) {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) == nil {
			flattenJSON(m, make([]string, 0, 8), add)
			return
		}
	}
	for _, kv := range logfmtPairs(line) {
		add(sanitizeFieldName(kv[0]), kv[1], "logfmt", nil)
	}
}

// maxFieldDepth bounds the nesting flattenJSON follows, as the json
// parser stage does; deeper objects are not reported.
const maxFieldDepth = 64

// flattenJSON reports the leaves of m. path is the keys above m; add gets
// a path of its own (the recursion shares one stack, so that a deep object
// costs memory linear in its size).
func flattenJSON(m map[string]any, path []string, add func(name, value, parser string, path []string)) {
	for k, v := range m {
		p := append(path, k)
		if sub, ok := v.(map[string]any); ok {
			if len(p) < maxFieldDepth {
				flattenJSON(sub, p, add)
			}
			continue
		}
		var val string
		switch x := v.(type) {
		case []any:
			raw, _ := json.Marshal(x)
			val = string(raw)
		case string:
			val = x
		case json.Number:
			val = x.String()
		case bool:
			val = strconv.FormatBool(x)
		default: // null
			continue
		}
		add(sanitizeFieldName(strings.Join(p, "_")), val, "json", slices.Clone(p))
	}
}

var invalidFieldChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

func sanitizeFieldName(s string) string {
	s = invalidFieldChars.ReplaceAllString(s, "_")
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	return s
}

// logfmtPairs splits key=value and key="quoted value" pairs; words without
// = are skipped.
func logfmtPairs(s string) [][2]string {
	var out [][2]string
	for i := 0; i < len(s); {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		j := i
		for j < len(s) && s[j] != '=' && s[j] != ' ' && s[j] != '\t' {
			j++
		}
		key := s[i:j]
		if j >= len(s) || s[j] != '=' || key == "" {
			i = j + 1
			continue
		}
		j++
		var val string
		if j < len(s) && s[j] == '"' {
			k := j + 1
			var buf bytes.Buffer
			for k < len(s) && s[k] != '"' {
				if s[k] == '\\' && k+1 < len(s) {
					k++
				}
				buf.WriteByte(s[k])
				k++
			}
			val, i = buf.String(), k+1
		} else {
			k := j
			for k < len(s) && s[k] != ' ' && s[k] != '\t' {
				k++
			}
			val, i = s[j:k], k
		}
		out = append(out, [2]string{key, val})
	}
	return out
}

// fieldType guesses Loki's detected field types.
func fieldType(v string) string {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return "int"
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return "float"
	}
	if _, err := strconv.ParseBool(v); err == nil {
		return "boolean"
	}
	if _, err := time.ParseDuration(v); err == nil {
		return "duration"
	}
	if isBytes(v) {
		return "bytes"
	}
	return "string"
}

var bytesRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)? ?([KMGTPE]i?)?B$`)

func isBytes(v string) bool { return bytesRe.MatchString(v) }

// mergeType: a field keeps its type while every value has it; ints widen
// to floats; anything else mixed is a string.
func mergeType(old, cur string) string {
	switch {
	case old == "" || old == cur:
		return cur
	case (old == "int" && cur == "float") || (old == "float" && cur == "int"):
		return "float"
	}
	return "string"
}

package logql

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode"

	"github.com/grafana/regexp"
)

// tmplHolder is a parsed line_format / label_format template. Executions
// are serialized per holder because the __line__ and __timestamp__
// functions read the current entry.
type tmplHolder struct {
	mu   sync.Mutex
	t    *template.Template
	line string
	ts   int64
	buf  bytes.Buffer
	lit  bool // no actions: the template text is the output
}

func newTmpl(text string) (*tmplHolder, error) {
	h := &tmplHolder{}
	fm := template.FuncMap{}
	for k, v := range tmplFuncs {
		fm[k] = v
	}
	fm["__line__"] = func() string { return h.line }
	fm["__timestamp__"] = func() time.Time { return time.Unix(0, h.ts).UTC() }
	t, err := template.New("").Option("missingkey=zero").Funcs(fm).Parse(text)
	if err != nil {
		return nil, err
	}
	h.t = t
	h.lit = !strings.Contains(text, "{{")
	return h, nil
}

func (h *tmplHolder) exec(lb *lbuilder, line string, ts int64) (string, error) {
	if h.lit {
		return h.t.Root.String(), nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.line, h.ts = line, ts
	h.buf.Reset()
	if err := h.t.Execute(&h.buf, lb.templateData()); err != nil {
		return "", err
	}
	return h.buf.String(), nil
}

func toF(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case string:
		f, _ := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

func toI(v any) int64 {
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) {
			return int64(f)
		}
		return 0
	case float64:
		return int64(x)
	}
	return int64(toF(v))
}

func toS(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case []byte:
		return string(x)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

func toTime(v any) time.Time {
	switch x := v.(type) {
	case time.Time:
		return x
	case int64:
		return time.Unix(x, 0).UTC()
	case int:
		return time.Unix(int64(x), 0).UTC()
	case string:
		if i, err := strconv.ParseInt(x, 10, 64); err == nil {
			return time.Unix(i, 0).UTC()
		}
	}
	return time.Time{}
}

var tmplFuncs = template.FuncMap{
	"ToLower":    strings.ToLower,
	"ToUpper":    strings.ToUpper,
	"lower":      strings.ToLower,
	"upper":      strings.ToUpper,
	"Replace":    strings.Replace,
	"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
	"Trim":       strings.Trim,
	"TrimLeft":   strings.TrimLeft,
	"TrimRight":  strings.TrimRight,
	"TrimPrefix": strings.TrimPrefix,
	"TrimSuffix": strings.TrimSuffix,
	"TrimSpace":  strings.TrimSpace,
	"trim":       strings.TrimSpace,
	"trimAll":    func(cut, s string) string { return strings.Trim(s, cut) },
	"trimPrefix": func(p, s string) string { return strings.TrimPrefix(s, p) },
	"trimSuffix": func(p, s string) string { return strings.TrimSuffix(s, p) },
	"title":      titleCase,
	"Title":      titleCase,
	"trunc": func(n int, s string) string {
		if n >= 0 && len(s) > n {
			return s[:n]
		}
		if n < 0 && len(s) > -n {
			return s[len(s)+n:]
		}
		return s
	},
	"substr": func(start, end int, s string) string {
		if start < 0 {
			return s[:min(max(end, 0), len(s))]
		}
		if end < 0 || end > len(s) {
			end = len(s)
		}
		if start > end {
			return ""
		}
		return s[start:end]
	},
	"contains":  func(sub, s string) bool { return strings.Contains(s, sub) },
	"hasPrefix": func(p, s string) bool { return strings.HasPrefix(s, p) },
	"hasSuffix": func(p, s string) bool { return strings.HasSuffix(s, p) },
	"repeat": func(n int, s string) string {
		if n < 0 || n > 1000 {
			return s
		}
		return strings.Repeat(s, n)
	},
	"count": func(sub, s string) int { return strings.Count(s, sub) },
	"indent": func(n int, s string) string {
		p := strings.Repeat(" ", clampN(n))
		return p + strings.ReplaceAll(s, "\n", "\n"+p)
	},
	"nindent": func(n int, s string) string {
		p := strings.Repeat(" ", clampN(n))
		return "\n" + p + strings.ReplaceAll(s, "\n", "\n"+p)
	},
	"regexReplaceAll": func(re, s, repl string) (string, error) {
		r, err := regexp.Compile(re)
		if err != nil {
			return "", err
		}
		return r.ReplaceAllString(s, repl), nil
	},
	"regexReplaceAllLiteral": func(re, s, repl string) (string, error) {
		r, err := regexp.Compile(re)
		if err != nil {
			return "", err
		}
		return r.ReplaceAllLiteralString(s, repl), nil
	},
	"default": func(def any, given ...any) any {
		if len(given) == 0 || isEmpty(given[0]) {
			return def
		}
		return given[0]
	},
	"add": func(vs ...any) int64 {
		var s int64
		for _, v := range vs {
			s += toI(v)
		}
		return s
	},
	"sub": func(a, b any) int64 { return toI(a) - toI(b) },
	"mul": func(a any, vs ...any) int64 {
		p := toI(a)
		for _, v := range vs {
			p *= toI(v)
		}
		return p
	},
	"div": func(a, b any) (int64, error) {
		if toI(b) == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		return toI(a) / toI(b), nil
	},
	"mod": func(a, b any) (int64, error) {
		if toI(b) == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		return toI(a) % toI(b), nil
	},
	"addf": func(vs ...any) float64 {
		var s float64
		for _, v := range vs {
			s += toF(v)
		}
		return s
	},
	"subf": func(a any, vs ...any) float64 {
		r := toF(a)
		for _, v := range vs {
			r -= toF(v)
		}
		return r
	},
	"mulf": func(a any, vs ...any) float64 {
		r := toF(a)
		for _, v := range vs {
			r *= toF(v)
		}
		return r
	},
	"divf": func(a any, vs ...any) float64 {
		r := toF(a)
		for _, v := range vs {
			r /= toF(v)
		}
		return r
	},
	"max": func(a any, vs ...any) int64 {
		r := toI(a)
		for _, v := range vs {
			r = max(r, toI(v))
		}
		return r
	},
	"min": func(a any, vs ...any) int64 {
		r := toI(a)
		for _, v := range vs {
			r = min(r, toI(v))
		}
		return r
	},
	"maxf": func(a any, vs ...any) float64 {
		r := toF(a)
		for _, v := range vs {
			r = math.Max(r, toF(v))
		}
		return r
	},
	"minf": func(a any, vs ...any) float64 {
		r := toF(a)
		for _, v := range vs {
			r = math.Min(r, toF(v))
		}
		return r
	},
	"ceil":  func(a any) float64 { return math.Ceil(toF(a)) },
	"floor": func(a any) float64 { return math.Floor(toF(a)) },
	"round": func(a any, p int) float64 {
		m := math.Pow(10, float64(p))
		return math.Round(toF(a)*m) / m
	},
	"int":     func(a any) int64 { return toI(a) },
	"float64": func(a any) float64 { return toF(a) },
	"unixEpoch": func(t time.Time) string {
		return strconv.FormatInt(t.Unix(), 10)
	},
	"unixEpochMillis": func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) },
	"unixEpochNanos":  func(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) },
	"unixToTime": func(s string) (time.Time, error) {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, err
		}
		switch {
		case len(s) <= 10:
			return time.Unix(i, 0).UTC(), nil
		case len(s) <= 13:
			return time.UnixMilli(i).UTC(), nil
		case len(s) <= 16:
			return time.UnixMicro(i).UTC(), nil
		}
		return time.Unix(0, i).UTC(), nil
	},
	"toDate": func(layout, s string) time.Time {
		t, _ := time.ParseInLocation(layout, s, time.UTC)
		return t
	},
	"toDateInZone": func(layout, zone, s string) time.Time {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			loc = time.UTC
		}
		t, _ := time.ParseInLocation(layout, s, loc)
		return t
	},
	"date": func(layout string, t any) string { return toTime(t).UTC().Format(layout) },
	"now":  func() time.Time { return time.Now().UTC() },
	"alignLeft": func(n int, s string) string {
		n = clampN(n)
		if len(s) >= n {
			return s[:n]
		}
		return s + strings.Repeat(" ", n-len(s))
	},
	"alignRight": func(n int, s string) string {
		n = clampN(n)
		if len(s) >= n {
			return s[len(s)-n:]
		}
		return strings.Repeat(" ", n-len(s)) + s
	},
	"b64enc": func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
	"b64dec": func(s string) string {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return err.Error()
		}
		return string(b)
	},
	"urlencode": url.QueryEscape,
	"urldecode": func(s string) (string, error) { return url.QueryUnescape(s) },
	"bytes": func(s string) (float64, error) {
		b, err := parseBytes(s)
		return float64(b), err
	},
	"duration": func(s string) (float64, error) {
		d, err := time.ParseDuration(s)
		return d.Seconds(), err
	},
	"duration_seconds": func(s string) (float64, error) {
		d, err := time.ParseDuration(s)
		return d.Seconds(), err
	},
	"printf": fmt.Sprintf,
}

func clampN(n int) int {
	if n < 0 {
		return 0
	}
	if n > 1000 {
		return 1000
	}
	return n
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case int, int64, float64:
		return toF(x) == 0
	}
	return false
}

func titleCase(s string) string {
	prev := ' '
	return strings.Map(func(r rune) rune {
		defer func() { prev = r }()
		// word boundaries as strings.Title: anything but letters, digits and '_'
		if !(unicode.IsLetter(prev) || unicode.IsDigit(prev) || prev == '_') {
			return unicode.ToTitle(r)
		}
		return r
	}, s)
}

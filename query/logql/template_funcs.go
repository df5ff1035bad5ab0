package logql

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode"

	"github.com/grafana/regexp"
)

// Template functions. Those that only return (parts of) their arguments
// are plain; those that build a string charge it to the execution's budget
// (h.str); those whose result can be much larger than their arguments
// (repeat, replace, indent, regexReplaceAll, printf and the print, html,
// js and urlquery built-ins, overridden here) check a bound of it first
// (h.reserve), so that nesting them cannot allocate past the budget.

// expansion bounds how many bytes the escaping functions (printf's %q
// and %x, html, js) write per input byte: js writes \u003C for '<'.
const expansion = 6

func (h *tmplHolder) funcs() template.FuncMap {
	lower := func(s string) (string, error) { return h.str(strings.ToLower(s)) }
	upper := func(s string) (string, error) { return h.str(strings.ToUpper(s)) }
	title := func(s string) (string, error) { return h.str(titleCase(s)) }
	replace := func(s, old, new string, n int) (string, error) {
		if err := h.reserve(replaceBound(s, old, new, n)); err != nil {
			return "", err
		}
		return h.str(strings.Replace(s, old, new, n))
	}
	indent := func(n int, s string, nl string) (string, error) {
		n = clampN(n)
		if err := h.reserve(int64(len(s)) + int64(n)*int64(strings.Count(s, "\n")+1) + 1); err != nil {
			return "", err
		}
		p := strings.Repeat(" ", n)
		return h.str(nl + p + strings.ReplaceAll(s, "\n", "\n"+p))
	}
	return template.FuncMap{
		"__line__":      func() string { return h.line },
		"__timestamp__": func() time.Time { return time.Unix(0, h.ts).UTC() },
		rangeGuardFunc:  h.rangeGuard,

		"ToLower":    lower,
		"ToUpper":    upper,
		"lower":      lower,
		"upper":      upper,
		"title":      title,
		"Title":      title,
		"Replace":    replace,
		"replace":    func(old, new, s string) (string, error) { return replace(s, old, new, -1) },
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
		"repeat": func(n int, s string) (string, error) {
			if n < 0 || n > 1000 {
				return s, nil
			}
			if err := h.reserve(int64(n) * int64(len(s))); err != nil {
				return "", err
			}
			return h.str(strings.Repeat(s, n))
		},
		"count":   func(sub, s string) int { return strings.Count(s, sub) },
		"indent":  func(n int, s string) (string, error) { return indent(n, s, "") },
		"nindent": func(n int, s string) (string, error) { return indent(n, s, "\n") },
		"regexReplaceAll": func(re, s, repl string) (string, error) {
			return h.regexReplace(re, s, repl, false)
		},
		"regexReplaceAllLiteral": func(re, s, repl string) (string, error) {
			return h.regexReplace(re, s, repl, true)
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
			t, _ := time.ParseInLocation(layout, s, h.zone(zone))
			return t
		},
		"date": func(layout string, t any) (string, error) {
			// A layout element writes at most 10 bytes (".000000000") for
			// every 2 bytes of layout.
			if err := h.reserve(5*int64(len(layout)) + 32); err != nil {
				return "", err
			}
			return h.str(toTime(t).UTC().Format(layout))
		},
		"now": func() time.Time { return time.Now().UTC() },
		"alignLeft": func(n int, s string) (string, error) {
			n = clampN(n)
			if len(s) >= n {
				return s[:n], nil
			}
			return h.str(s + strings.Repeat(" ", n-len(s)))
		},
		"alignRight": func(n int, s string) (string, error) {
			n = clampN(n)
			if len(s) >= n {
				return s[len(s)-n:], nil
			}
			return h.str(strings.Repeat(" ", n-len(s)) + s)
		},
		"b64enc": func(s string) (string, error) {
			return h.str(base64.StdEncoding.EncodeToString([]byte(s)))
		},
		"b64dec": func(s string) (string, error) {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return err.Error(), nil
			}
			return h.str(string(b))
		},
		"urlencode": func(s string) (string, error) { return h.str(url.QueryEscape(s)) },
		"urldecode": func(s string) (string, error) {
			u, err := url.QueryUnescape(s)
			if err != nil {
				return "", err
			}
			return h.str(u)
		},
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
		"printf": func(format string, args ...any) (string, error) {
			if err := h.reserve(printfBound(format, args)); err != nil {
				return "", err
			}
			return h.str(fmt.Sprintf(format, args...))
		},
		// text/template built-ins that build strings.
		"print": func(args ...any) (string, error) {
			if err := h.reserve(argsBound(args, 1)); err != nil {
				return "", err
			}
			return h.str(fmt.Sprint(args...))
		},
		"println": func(args ...any) (string, error) {
			if err := h.reserve(argsBound(args, 1) + 1); err != nil {
				return "", err
			}
			return h.str(fmt.Sprintln(args...))
		},
		"html": func(args ...any) (string, error) {
			if err := h.reserve(argsBound(args, expansion)); err != nil {
				return "", err
			}
			return h.str(template.HTMLEscaper(args...))
		},
		"js": func(args ...any) (string, error) {
			if err := h.reserve(argsBound(args, expansion)); err != nil {
				return "", err
			}
			return h.str(template.JSEscaper(args...))
		},
		"urlquery": func(args ...any) (string, error) {
			if err := h.reserve(argsBound(args, 3)); err != nil {
				return "", err
			}
			return h.str(template.URLQueryEscaper(args...))
		},
	}
}

// replaceBound bounds the length of strings.Replace(s, old, new, n).
func replaceBound(s, old, new string, n int) int64 {
	if len(new) <= len(old) || n == 0 {
		return int64(len(s))
	}
	k := strings.Count(s, old) // for old == "": runes + 1, as Replace
	if n > 0 && n < k {
		k = n
	}
	return int64(len(s)) + int64(k)*int64(len(new)-len(old))
}

type regexpOrErr struct {
	re  *regexp.Regexp
	err error
}

type zoneOrErr struct{ loc *time.Location }

// regexp compiles re, keeping up to maxTemplateCache of them.
func (h *tmplHolder) regexp(re string) (*regexp.Regexp, error) {
	if c, ok := h.res[re]; ok {
		return c.re, c.err
	}
	r, err := regexp.Compile(re)
	if h.res == nil {
		h.res = map[string]*regexpOrErr{}
	}
	if len(h.res) < maxTemplateCache {
		h.res[re] = &regexpOrErr{r, err}
	}
	return r, err
}

// zone loads a time zone (UTC when unknown), keeping up to
// maxTemplateCache of them.
func (h *tmplHolder) zone(name string) *time.Location {
	if z, ok := h.zones[name]; ok {
		return z.loc
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = time.UTC
	}
	if h.zones == nil {
		h.zones = map[string]*zoneOrErr{}
	}
	if len(h.zones) < maxTemplateCache {
		h.zones[name] = &zoneOrErr{loc}
	}
	return loc
}

// regexReplace is sprig's regexReplaceAll(Literal) within the budget. A
// first pass counts the matches and their bytes: every expansion of repl
// writes at most its own bytes plus, for each $ in it, the bytes of the
// match (submatches lie inside it), so the result's size is bounded
// before it is built.
func (h *tmplHolder) regexReplace(expr, s, repl string, literal bool) (string, error) {
	re, err := h.regexp(expr)
	if err != nil {
		return "", err
	}
	var matches, matched int64
	re.ReplaceAllStringFunc(s, func(m string) string {
		matches++
		matched += int64(len(m))
		return ""
	})
	if matches == 0 {
		return s, nil
	}
	refs := int64(0)
	if !literal {
		refs = int64(strings.Count(repl, "$"))
	}
	bound := int64(len(s)) + matches*int64(len(repl)) + refs*matched
	if err := h.reserve(bound); err != nil {
		return "", err
	}
	if literal {
		return h.str(re.ReplaceAllLiteralString(s, repl))
	}
	return h.str(re.ReplaceAllString(s, repl))
}

// valueBound bounds the bytes fmt's %v writes for a template value.
func valueBound(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	case map[string]string: // the template's dot: the entry's labels
		n := int64(len("map[]"))
		for k, v := range x {
			n += int64(len(k) + len(v) + 2)
		}
		return n
	}
	return 64 // numbers, times, bools, nil
}

// argsBound bounds fmt.Sprint of args written with factor bytes per byte.
func argsBound(args []any, factor int64) int64 {
	var n int64
	for _, a := range args {
		n += (valueBound(a) + 1) * factor
	}
	return n
}

// printfBound bounds the length of fmt.Sprintf(format, args...): the
// format, each argument escaped at worst (when the format has a verb or
// flag that escapes), and every width and precision (fmt caps each at
// 10^6; `*` takes it from an argument).
func printfBound(format string, args []any) int64 {
	factor := int64(1)
	if strings.ContainsAny(format, "qxXU#+") {
		factor = expansion
	}
	n := int64(len(format)) + argsBound(args, factor) + 32*int64(len(args))
	const fmtMaxWidth = 1_000_000 // fmt's bound on a width or precision
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
	verb:
		for i++; i < len(format); i++ {
			c := format[i]
			switch {
			case c >= '0' && c <= '9':
				j := i
				for j < len(format) && format[j] >= '0' && format[j] <= '9' {
					j++
				}
				w, err := strconv.Atoi(format[i:j])
				if err != nil || w > fmtMaxWidth {
					w = fmtMaxWidth
				}
				n += int64(w)
				i = j - 1
				continue
			case c == '*':
				n += fmtMaxWidth
				continue
			case strings.IndexByte("+-# .[]", c) >= 0:
				continue
			}
			break verb
		}
	}
	return n
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

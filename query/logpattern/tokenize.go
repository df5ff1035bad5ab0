package logpattern

import (
	"strings"
	"unicode/utf8"
)

// Wildcard is how a variable token is written in a pattern (LogQL's
// unnamed capture).
const Wildcard = "<_>"

// token is one piece of a line. space says whether a space precedes it in
// the line, so that a template is written back with the line's spacing.
type token struct {
	text  string
	space bool
	wild  bool // a variable part (only in templates)
}

// tokenize splits line into tokens, appending to dst: words at single
// spaces (so "a  b" has an empty middle word and is written back exactly),
// then each word after the "=" of a logfmt key ("level=" "info") and at JSON
// keys ("{\"level\":" "\"info\"" ",\"msg\":" ...), so that a key stays
// literal while its value varies. Lines longer than maxBytes are cut (at a
// rune boundary) and more than maxTokens tokens are cut to maxTokens; in both
// cases a final wildcard token stands for the rest. It never panics, for any
// input.
func tokenize(dst []token, line string, maxTokens, maxBytes int) []token {
	cut := false
	if maxBytes > 0 && len(line) > maxBytes {
		n := maxBytes
		for n > 0 && !utf8.RuneStart(line[n]) {
			n--
		}
		line, cut = line[:n], true
	}
	if maxTokens < 2 {
		maxTokens = 2
	}
	start := len(dst)
	space := false
	for {
		word, rest, more := strings.Cut(line, " ")
		dst = splitWord(dst, word, space)
		if len(dst)-start >= maxTokens {
			if len(dst)-start > maxTokens || more {
				dst = append(dst[:start+maxTokens-1], token{text: Wildcard, wild: true, space: dst[start+maxTokens-1].space})
			}
			return dst
		}
		if !more {
			break
		}
		line, space = rest, true
	}
	if cut {
		dst = append(dst, token{text: Wildcard, wild: true})
	}
	return dst
}

// splitWord appends the pieces of one space-free word.
func splitWord(dst []token, w string, space bool) []token {
	// logfmt: key=value, the key a plain identifier-like run.
	if i := strings.IndexByte(w, '='); i > 0 && isKey(w[:i]) {
		dst = append(dst, token{text: w[:i+1], space: space})
		return append(dst, token{text: w[i+1:]})
	}
	// JSON: cut after each `":` and before each `,"`.
	for len(w) > 0 {
		i := jsonCut(w)
		if i <= 0 || i >= len(w) {
			break
		}
		dst = append(dst, token{text: w[:i], space: space})
		w, space = w[i:], false
	}
	return append(dst, token{text: w, space: space})
}

// jsonCut returns where to cut w after its first JSON key separator `":`
// or before a `,"` that follows a value, or -1.
func jsonCut(w string) int {
	for i := 1; i < len(w); i++ {
		switch {
		case w[i] == ':' && w[i-1] == '"':
			return i + 1
		case w[i] == ',' && i+1 < len(w) && w[i+1] == '"':
			return i
		}
	}
	return -1
}

// isKey reports whether s looks like a logfmt key: letters, digits, "_",
// ".", "-" and "/", starting with a letter or "_".
func isKey(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-' || c == '/'):
		default:
			return false
		}
	}
	return true
}

// hasDigit reports whether s contains an ASCII digit: such tokens are
// routed to the wildcard child of the prefix tree (IDs, numbers, times).
func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

// numeric reports whether s is number-like: at least half of its letters
// and digits are digits ("42", "12ms", "10.0.0.7", timestamps, most hex
// IDs), so it is variable from a cluster's first line on. Words with a
// few digits ("sda1", "http2", "backup-17") stay literal until they vary.
func numeric(s string) bool {
	digits, alnum := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
			alnum++
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			alnum++
		}
	}
	return digits > 0 && 2*digits >= alnum
}

// looksLikeCapture reports whether s has a "<" before a ">": LogQL's
// pattern syntax has no escape, so such text cannot stay literal.
func looksLikeCapture(s string) bool {
	i := strings.IndexByte(s, '<')
	return i >= 0 && strings.IndexByte(s[i:], '>') > 0
}

// render writes a template: tokens joined with their spaces, each run of
// wildcards that touch (no literal text between them) written as one
// "<_>", since LogQL patterns reject adjacent captures.
func render(ts []token) string {
	var b strings.Builder
	prevWild := false
	for _, t := range ts {
		if t.wild {
			if prevWild && !t.space {
				continue
			}
			if t.space {
				b.WriteByte(' ')
			}
			b.WriteString(Wildcard)
			prevWild = true
			continue
		}
		if t.space {
			b.WriteByte(' ')
		}
		if t.text == "" && prevWild && !t.space {
			continue // an empty literal does not separate two wildcards
		}
		b.WriteString(t.text)
		prevWild = prevWild && t.text == ""
	}
	return b.String()
}

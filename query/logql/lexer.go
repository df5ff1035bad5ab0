package logql

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tString // value already unquoted
	tNumber // number, duration or bytes literal: classified by the parser
	tOp     // punctuation and operators
)

type token struct {
	kind tokKind
	text string // identifier, operator, raw number or unquoted string
	pos  int    // byte offset
}

// lexer splits a query into tokens. It never panics on input.
type lexer struct {
	src  string
	toks []token
}

// ops longest first.
var lexOps = []string{
	"|=", "|~", "|>", "!=", "!~", "!>", "=~", "==", ">=", "<=",
	"{", "}", "(", ")", "[", "]", ",", "=", ">", "<", "|", "+", "-", "*", "/", "%", "^",
}

func lex(src string) ([]token, *ParseError) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '#': // comment to end of line
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '"' || c == '`':
			s, n, err := lexString(src[i:])
			if err != "" {
				return nil, posErr(src, i, err)
			}
			toks = append(toks, token{kind: tString, text: s, pos: i})
			i += n
			continue
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j := i
			for j < len(src) {
				d := src[j]
				if isDigit(d) || isLetter(d) || d == '.' {
					j++
					continue
				}
				if (d == '+' || d == '-') && j > i && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.ContainsAny(src[i:j-1], "abcdfghijklmnopqrstuvwxyzABCDFGHIJKLMNOPQRSTUVWXYZ") {
					j++
					continue
				}
				break
			}
			toks = append(toks, token{kind: tNumber, text: src[i:j], pos: i})
			i = j
			continue
		case isLetter(c) || c == '_':
			j := i
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j]) || src[j] == '_') {
				j++
			}
			toks = append(toks, token{kind: tIdent, text: src[i:j], pos: i})
			i = j
			continue
		}
		matched := false
		for _, op := range lexOps {
			if strings.HasPrefix(src[i:], op) {
				toks = append(toks, token{kind: tOp, text: op, pos: i})
				i += len(op)
				matched = true
				break
			}
		}
		if !matched {
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, posErr(src, i, "syntax error: unexpected character "+strconv.QuoteRune(r))
		}
	}
	toks = append(toks, token{kind: tEOF, pos: len(src)})
	return toks, nil
}

func lexString(s string) (val string, n int, err string) {
	q := s[0]
	if q == '`' {
		end := strings.IndexByte(s[1:], '`')
		if end < 0 {
			return "", 0, "syntax error: unterminated raw string"
		}
		return s[1 : end+1], end + 2, ""
	}
	j := 1
	for j < len(s) {
		switch s[j] {
		case '\\':
			j += 2
			continue
		case '"':
			v, uerr := strconv.Unquote(s[:j+1])
			if uerr != nil {
				return "", 0, "syntax error: invalid quoted string"
			}
			return v, j + 1, ""
		case '\n':
			return "", 0, "syntax error: newline in string"
		}
		j++
	}
	return "", 0, "syntax error: unterminated quoted string"
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func posErr(src string, off int, msg string) *ParseError {
	if off > len(src) {
		off = len(src)
	}
	line := 1 + strings.Count(src[:off], "\n")
	col := off + 1
	if k := strings.LastIndexByte(src[:off], '\n'); k >= 0 {
		col = off - k
	}
	return &ParseError{Line: line, Col: col, Msg: msg}
}

package traceql

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/weftdb/weft/storage/traceentry"
)

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokLBrace
	tokRBrace
	tokLParen
	tokRParen
	tokComma
	tokPipe
	tokEq       // =
	tokNeq      // !=
	tokLt       // <  (also the parent operator)
	tokLte      // <=
	tokGt       // >  (also the child operator)
	tokGte      // >=
	tokRe       // =~
	tokNre      // !~ (also the not-sibling operator)
	tokAnd      // &&
	tokOr       // ||
	tokNot      // !
	tokPlus     // +
	tokMinus    // -
	tokMul      // *
	tokDiv      // /
	tokMod      // %
	tokPow      // ^
	tokDesc     // >>
	tokAnc      // <<
	tokSibling  // ~
	tokNotChild // !>
	tokNotPar   // !<
	tokNotDesc  // !>>
	tokNotAnc   // !<<
	tokUChild   // &>
	tokUPar     // &<
	tokUDesc    // &>>
	tokUAnc     // &<<
	tokUSib     // &~
	tokString
	tokInt
	tokFloat
	tokDuration
	tokIdent     // keywords, enum values, function names
	tokAttr      // scope + attribute name
	tokIntrinsic // scoped intrinsic such as span:name
)

var tokText = map[tokKind]string{
	tokEOF: "end of query", tokLBrace: "{", tokRBrace: "}", tokLParen: "(", tokRParen: ")",
	tokComma: ",", tokPipe: "|", tokEq: "=", tokNeq: "!=", tokLt: "<", tokLte: "<=", tokGt: ">",
	tokGte: ">=", tokRe: "=~", tokNre: "!~", tokAnd: "&&", tokOr: "||", tokNot: "!", tokPlus: "+",
	tokMinus: "-", tokMul: "*", tokDiv: "/", tokMod: "%", tokPow: "^", tokDesc: ">>", tokAnc: "<<",
	tokSibling: "~", tokNotChild: "!>", tokNotPar: "!<", tokNotDesc: "!>>", tokNotAnc: "!<<",
	tokUChild: "&>", tokUPar: "&<", tokUDesc: "&>>", tokUAnc: "&<<", tokUSib: "&~",
}

// token is one lexeme with its position.
type token struct {
	kind      tokKind
	text      string // source text (identifiers, numbers) or decoded string / attribute name
	line, col int
	scope     traceentry.Scope // tokAttr
	num       int64            // tokInt, tokDuration (ns)
	fnum      float64          // tokFloat
	parent    bool             // tokAttr with the unsupported parent. scope
	off, end  int              // byte offsets in the query
}

func (t token) describe() string {
	switch t.kind {
	case tokString:
		return strconv.Quote(t.text)
	case tokInt, tokFloat, tokDuration, tokIdent, tokIntrinsic:
		return t.text
	case tokAttr:
		return "attribute " + t.text
	}
	return tokText[t.kind]
}

// lexer turns a query into tokens. It never panics; a lexical error is
// reported as a *ParseError with the position of the offending character.
type lexer struct {
	src       string
	pos       int
	line, col int
	startOff  int // offset of the token being scanned
}

func newLexer(src string) *lexer { return &lexer{src: src, line: 1, col: 1} }

func (l *lexer) errAt(line, col int, msg string) *ParseError {
	return &ParseError{Line: line, Col: col, Msg: msg}
}

func (l *lexer) peekRune() (rune, int) {
	if l.pos >= len(l.src) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(l.src[l.pos:])
}

func (l *lexer) advance(n int) {
	for _, r := range l.src[l.pos : l.pos+n] {
		if r == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
	}
	l.pos += n
}

func (l *lexer) hasPrefix(s string) bool { return strings.HasPrefix(l.src[l.pos:], s) }

// operators, longest first within each leading character.
var operators = []struct {
	text string
	kind tokKind
}{
	{"!>>", tokNotDesc}, {"!<<", tokNotAnc}, {"&>>", tokUDesc}, {"&<<", tokUAnc},
	{"!=", tokNeq}, {"!~", tokNre}, {"!>", tokNotChild}, {"!<", tokNotPar}, {"!", tokNot},
	{"&&", tokAnd}, {"&>", tokUChild}, {"&<", tokUPar}, {"&~", tokUSib},
	{"||", tokOr}, {"|", tokPipe},
	{"=~", tokRe}, {"=", tokEq},
	{">>", tokDesc}, {">=", tokGte}, {">", tokGt},
	{"<<", tokAnc}, {"<=", tokLte}, {"<", tokLt},
	{"~", tokSibling}, {"{", tokLBrace}, {"}", tokRBrace}, {"(", tokLParen}, {")", tokRParen},
	{",", tokComma}, {"+", tokPlus}, {"-", tokMinus}, {"*", tokMul}, {"/", tokDiv}, {"%", tokMod},
	{"^", tokPow},
}

// attributeScopes are the words that, followed by '.', start a scoped attribute.
var attributeScopes = map[string]traceentry.Scope{
	"span": traceentry.ScopeSpan, "resource": traceentry.ScopeResource, "event": traceentry.ScopeEvent,
	"link": traceentry.ScopeLink, "instrumentation": traceentry.ScopeInstrumentation,
}

// intrinsicScopes are the words that, followed by ':', start a scoped intrinsic.
var intrinsicScopes = map[string]bool{"span": true, "trace": true, "event": true, "link": true, "instrumentation": true}

func (l *lexer) next() (token, error) {
	t, err := l.scan()
	t.end = l.pos
	return t, err
}

func (l *lexer) scan() (token, error) {
	for {
		r, n := l.peekRune()
		if r < 0 {
			return token{kind: tokEOF, line: l.line, col: l.col, off: l.pos}, nil
		}
		if !unicode.IsSpace(r) {
			break
		}
		l.advance(n)
	}
	l.startOff = l.pos
	line, col := l.line, l.col
	t, err := l.scanToken(line, col)
	t.off = l.startOff
	return t, err
}

func (l *lexer) scanToken(line, col int) (token, error) {
	r, n := l.peekRune()
	switch {
	case r == utf8.RuneError && n == 1:
		return token{}, l.errAt(line, col, "invalid UTF-8 in query")
	case r == '"' || r == '`':
		s, err := l.lexString()
		if err != nil {
			return token{}, err
		}
		return token{kind: tokString, text: s, line: line, col: col}, nil
	case r >= '0' && r <= '9':
		return l.lexNumber()
	case r == '.':
		l.advance(1)
		name, err := l.lexAttrName(line, col)
		if err != nil {
			return token{}, err
		}
		return token{kind: tokAttr, scope: traceentry.ScopeUnscoped, text: name, line: line, col: col}, nil
	case r == '_' || unicode.IsLetter(r):
		return l.lexWord()
	}
	for _, op := range operators {
		if l.hasPrefix(op.text) {
			l.advance(len(op.text))
			return token{kind: op.kind, text: op.text, line: line, col: col}, nil
		}
	}
	return token{}, l.errAt(line, col, "unexpected character "+strconv.QuoteRune(r))
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func (l *lexer) lexWord() (token, error) {
	line, col := l.line, l.col
	start := l.pos
	for {
		r, n := l.peekRune()
		if r < 0 || !isWordRune(r) {
			break
		}
		l.advance(n)
	}
	word := l.src[start:l.pos]
	r, _ := l.peekRune()
	if r == '.' {
		scope, ok := attributeScopes[word]
		if ok || word == "parent" {
			l.advance(1)
			name, err := l.lexAttrName(line, col)
			if err != nil {
				return token{}, err
			}
			return token{kind: tokAttr, scope: scope, text: name, line: line, col: col, parent: word == "parent"}, nil
		}
	}
	if r == ':' && intrinsicScopes[word] {
		l.advance(1)
		s := l.pos
		for {
			r, n := l.peekRune()
			if r < 0 || !isWordRune(r) {
				break
			}
			l.advance(n)
		}
		if s == l.pos {
			return token{}, l.errAt(l.line, l.col, "expected an intrinsic name after "+word+":")
		}
		return token{kind: tokIntrinsic, text: l.src[start:l.pos], line: line, col: col}, nil
	}
	return token{kind: tokIdent, text: word, line: line, col: col}, nil
}

// isAttributeRune reports whether r may appear in an unquoted attribute
// name: anything but white space and the characters that end an attribute
// in TraceQL.
func isAttributeRune(r rune) bool {
	if r < 0 || unicode.IsSpace(r) {
		return false
	}
	switch r {
	case '{', '}', '(', ')', '=', '~', '!', '<', '>', '&', '|', '^', ',', '"':
		return false
	}
	return true
}

// lexAttrName reads an attribute name after its scope's '.': unquoted runs
// and "quoted" runs (only \" and \\ are escapes there), concatenated.
func (l *lexer) lexAttrName(line, col int) (string, error) {
	var b strings.Builder
	quoted := false
	for {
		r, n := l.peekRune()
		switch {
		case r == '"':
			quoted = true
			l.advance(1)
			for {
				r, n := l.peekRune()
				if r < 0 {
					return "", l.errAt(line, col, "unterminated quoted attribute name")
				}
				if r == utf8.RuneError && n == 1 {
					return "", l.errAt(l.line, l.col, "invalid UTF-8 in query")
				}
				l.advance(n)
				if r == '"' {
					break
				}
				if r == '\\' {
					if e, _ := l.peekRune(); e == '"' || e == '\\' {
						b.WriteRune(e)
						l.advance(1)
						continue
					}
				}
				b.WriteRune(r)
			}
		case isAttributeRune(r):
			if r == utf8.RuneError && n == 1 {
				return "", l.errAt(l.line, l.col, "invalid UTF-8 in query")
			}
			b.WriteRune(r)
			l.advance(n)
		default:
			if b.Len() == 0 && !quoted {
				return "", l.errAt(line, col, "expected an attribute name")
			}
			return b.String(), nil
		}
	}
}

func (l *lexer) lexString() (string, error) {
	line, col := l.line, l.col
	q := l.src[l.pos]
	i := l.pos + 1
	for i < len(l.src) {
		c := l.src[i]
		if c == '\\' && q == '"' {
			i += 2
			continue
		}
		if c == q {
			break
		}
		if c == '\n' && q == '"' {
			return "", l.errAt(line, col, "newline in string")
		}
		i++
	}
	if i >= len(l.src) {
		return "", l.errAt(line, col, "unterminated string")
	}
	raw := l.src[l.pos : i+1]
	s, err := strconv.Unquote(raw)
	if err != nil {
		return "", l.errAt(line, col, "invalid string "+raw)
	}
	l.advance(len(raw))
	return s, nil
}

func isDurationRune(r rune) bool { return (r >= 'a' && r <= 'z') || r == 'µ' || r == 'μ' }

func (l *lexer) lexNumber() (token, error) {
	line, col := l.line, l.col
	start := l.pos
	digits := func() {
		for l.pos < len(l.src) && l.src[l.pos] >= '0' && l.src[l.pos] <= '9' {
			l.advance(1)
		}
	}
	digits()
	isFloat, hasExp := false, false
	if l.pos+1 < len(l.src) && l.src[l.pos] == '.' && l.src[l.pos+1] >= '0' && l.src[l.pos+1] <= '9' {
		isFloat = true
		l.advance(1)
		digits()
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		j := l.pos + 1
		if j < len(l.src) && (l.src[j] == '+' || l.src[j] == '-') {
			j++
		}
		if j < len(l.src) && l.src[j] >= '0' && l.src[j] <= '9' {
			isFloat, hasExp = true, true
			l.advance(j - l.pos)
			digits()
		}
	}
	if r, _ := l.peekRune(); isDurationRune(r) && !hasExp {
		// A duration: digits, fractions and units, as Go's time.ParseDuration reads them.
		for {
			r, n := l.peekRune()
			if r < 0 || !(isDurationRune(r) || r == '.' || (r >= '0' && r <= '9')) {
				break
			}
			l.advance(n)
		}
		text := l.src[start:l.pos]
		d, err := time.ParseDuration(strings.ReplaceAll(text, "μ", "µ"))
		if err != nil {
			return token{}, l.errAt(line, col, "invalid duration "+strconv.Quote(text))
		}
		return token{kind: tokDuration, text: text, num: int64(d), line: line, col: col}, nil
	}
	if r, _ := l.peekRune(); isWordRune(r) {
		return token{}, l.errAt(l.line, l.col, "unexpected character "+strconv.QuoteRune(r)+" after number")
	}
	text := l.src[start:l.pos]
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return token{}, l.errAt(line, col, "invalid number "+text)
		}
		return token{kind: tokFloat, text: text, fnum: f, line: line, col: col}, nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return token{}, l.errAt(line, col, "integer out of range "+text)
	}
	return token{kind: tokInt, text: text, num: n, line: line, col: col}, nil
}

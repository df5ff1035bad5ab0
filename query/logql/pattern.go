package logql

import (
	"errors"
	"strings"
)

// pattern is a parsed `pattern` expression: literals and <captures>.
type pattern struct {
	parts []patPart
	names []string
}

type patPart struct {
	lit     string
	capture bool
	name    string // "" for <_>
}

func parsePattern(s string) (*pattern, error) {
	p := &pattern{}
	seen := map[string]bool{}
	i := 0
	lit := strings.Builder{}
	flush := func() {
		if lit.Len() > 0 {
			p.parts = append(p.parts, patPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i < len(s) {
		if s[i] == '<' {
			end := strings.IndexByte(s[i:], '>')
			if end > 1 {
				name := s[i+1 : i+end]
				if isPatternName(name) {
					flush()
					if n := len(p.parts); n > 0 && p.parts[n-1].capture {
						return nil, errors.New("consecutive captures are not allowed")
					}
					part := patPart{capture: true}
					if name != "_" {
						if seen[name] {
							return nil, errors.New("duplicate capture name " + name)
						}
						seen[name] = true
						part.name = name
						p.names = append(p.names, name)
					}
					p.parts = append(p.parts, part)
					i += end + 1
					continue
				}
			}
		}
		lit.WriteByte(s[i])
		i++
	}
	flush()
	if len(p.parts) == 0 {
		return nil, errors.New("empty pattern")
	}
	hasCapture := false
	for _, pt := range p.parts {
		hasCapture = hasCapture || pt.capture
	}
	if !hasCapture {
		return nil, errors.New("at least one capture is required")
	}
	return p, nil
}

func isPatternName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || c == '_' || (i > 0 && isDigit(c))) {
			return false
		}
	}
	return true
}

// match calls f for each named capture; it reports whether the line matched.
func (p *pattern) match(line string, f func(name, value string)) bool {
	pos := 0
	for i := 0; i < len(p.parts); i++ {
		pt := p.parts[i]
		if !pt.capture {
			if !strings.HasPrefix(line[pos:], pt.lit) {
				return false
			}
			pos += len(pt.lit)
			continue
		}
		if i+1 < len(p.parts) {
			next := p.parts[i+1].lit
			idx := strings.Index(line[pos:], next)
			if idx < 0 {
				return false
			}
			if f != nil && pt.name != "" {
				f(pt.name, line[pos:pos+idx])
			}
			pos += idx + len(next)
			i++
			continue
		}
		if f != nil && pt.name != "" {
			f(pt.name, line[pos:])
		}
		pos = len(line)
	}
	return true
}

func (p *pattern) matches(line string) bool { return p.match(line, nil) }

func (p *pattern) extract(line string, lb *lbuilder) {
	// Captures are only set when the whole pattern matches.
	var tmp [8][2]string
	caps := tmp[:0]
	if !p.match(line, func(n, v string) { caps = append(caps, [2]string{n, v}) }) {
		return
	}
	for _, c := range caps {
		lb.setParsed(c[0], c[1])
	}
}

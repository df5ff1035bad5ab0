package traceql

import "strings"

// ParseLenient parses the q parameter of Tempo's tag-values endpoint, a
// single spanset filter that the user may still be typing. It never fails:
//
//   - a query that parses is returned as it is;
//   - otherwise the first { ... } (closed or not) is split at its top-level
//     && and the pieces that parse on their own are kept, joined by && (so
//     `{ resource.a = "x" && span.b = }` becomes `{ resource.a = "x" }`);
//   - a top-level || (dropping an alternative would narrow the filter),
//     or no valid piece, gives `{ }`, which matches every span.
//
// Dropping a conjunct only widens the filter, so the values it lets through
// include every value the complete query would.
func ParseLenient(q string) *Query {
	if query, err := Parse(q); err == nil {
		return query
	}
	everything := &Query{pipeline: &pipeline{stages: []stage{&spansetFilter{}}}}
	lx := newLexer(q)
	var pieces []string
	depth, start, inFilter := 0, -1, false
	for {
		t, err := lx.next()
		if err != nil || t.kind == tokEOF {
			if inFilter && start >= 0 {
				end := len(q)
				if err != nil {
					end = lx.startOff // up to the token that does not lex
				}
				if end >= start {
					pieces = append(pieces, q[start:end])
				}
			}
			break
		}
		if !inFilter {
			if t.kind == tokLBrace {
				inFilter, start = true, t.end
			}
			continue
		}
		switch {
		case t.kind == tokLParen:
			depth++
		case t.kind == tokRParen:
			depth--
		case t.kind == tokOr && depth == 0:
			return everything
		case t.kind == tokAnd && depth == 0:
			pieces = append(pieces, q[start:t.off])
			start = t.end
			continue
		case t.kind == tokRBrace && depth <= 0:
			pieces = append(pieces, q[start:t.off])
			start = -1
		}
		if start < 0 {
			break
		}
	}
	var kept []string
	seen := map[string]bool{}
	for _, p := range pieces {
		p = strings.TrimSpace(p)
		if p == "" || seen[p] {
			continue
		}
		if _, err := Parse("{ " + p + " }"); err == nil {
			kept = append(kept, p)
			seen[p] = true
		}
	}
	if len(kept) == 0 {
		return everything
	}
	query, err := Parse("{ " + strings.Join(kept, " && ") + " }")
	if err != nil {
		return everything
	}
	return query
}

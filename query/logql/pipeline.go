package logql

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/regexp"
)

// process runs one stage over an entry. It returns the (possibly new) line
// and whether the entry is kept.
func (s *LineFilterStage) process(line string) bool {
	var any bool
	switch s.Op {
	case "|=", "!=":
		for _, v := range s.Values {
			if strings.Contains(line, v) {
				any = true
				break
			}
		}
	case "|~", "!~":
		for _, re := range s.res {
			if re.MatchString(line) {
				any = true
				break
			}
		}
	case "|>", "!>":
		for _, pt := range s.pats {
			if pt.matches(line) {
				any = true
				break
			}
		}
	}
	if s.Op[0] == '!' {
		return !any
	}
	return any
}

// filterPrefix returns how many leading stages are line filters: those run
// on the raw line before the entry's labels are built.
func filterPrefix(stages []Stage) int {
	for i, st := range stages {
		if _, ok := st.(*LineFilterStage); !ok {
			return i
		}
	}
	return len(stages)
}

// lineFiltersMatch runs leading line filter stages over a raw line.
func lineFiltersMatch(stages []Stage, line string) bool {
	for _, st := range stages {
		if !st.(*LineFilterStage).process(line) {
			return false
		}
	}
	return true
}

// runStages runs the pipeline over one entry; lb holds its labels. It
// reports whether the entry is kept; an error (a template past its
// budget, ErrTemplateLimit) fails the query.
func runStages(stages []Stage, ts int64, line string, lb *lbuilder) (string, bool, error) {
	for _, st := range stages {
		switch s := st.(type) {
		case *LineFilterStage:
			if !s.process(line) {
				return line, false, nil
			}
		case *ParserStage:
			line = s.process(line, lb)
		case *LabelFilterStage:
			if !evalLabelFilter(s.Filter, lb) {
				return line, false, nil
			}
		case *LineFormatStage:
			out, err := s.tmpl.exec(lb, line, ts)
			if errors.Is(err, ErrTemplateLimit) {
				return line, false, err
			}
			if err != nil {
				lb.setErr(errTemplate, err.Error())
				continue
			}
			line = out
		case *LabelFormatStage:
			if err := applyLabelFormat(s, lb, line, ts); err != nil {
				return line, false, err
			}
		case *DropStage:
			for _, nm := range s.Labels {
				if nm.Matcher == nil {
					lb.del(nm.Name)
					continue
				}
				if v, ok := lb.get(nm.Name); ok && nm.Matcher.Matches(v) {
					lb.del(nm.Name)
				}
			}
		case *KeepStage:
			applyKeep(s, lb)
		case *DecolorizeStage:
			line = decolorize(line)
		}
	}
	return line, true, nil
}

func applyKeep(s *KeepStage, lb *lbuilder) {
	out := lb.ls[:0]
	for _, l := range lb.ls {
		keep := false
		for _, nm := range s.Labels {
			if nm.Name != l.name {
				continue
			}
			if nm.Matcher == nil || nm.Matcher.Matches(l.value) {
				keep = true
			}
			break
		}
		if keep {
			out = append(out, l)
		}
	}
	if len(out) != len(lb.ls) {
		lb.changed = true
	}
	lb.ls = out
	lb.invalidate()
}

func applyLabelFormat(s *LabelFormatStage, lb *lbuilder, line string, ts int64) error {
	// Templates see the labels as they were before this stage; renames too.
	type res struct {
		dst, val, delSrc string
		ok               bool
	}
	results := make([]res, 0, len(s.Ops))
	for _, op := range s.Ops {
		if op.IsTmpl {
			out, err := op.tmpl.exec(lb, line, ts)
			if errors.Is(err, ErrTemplateLimit) {
				return err
			}
			if err != nil {
				lb.setErr(errTemplate, err.Error())
				continue
			}
			results = append(results, res{dst: op.Dst, val: out, ok: true})
			continue
		}
		v, ok := lb.get(op.Src)
		r := res{dst: op.Dst, val: v, ok: ok}
		if op.Src != op.Dst {
			r.delSrc = op.Src
		}
		results = append(results, r)
	}
	for _, r := range results {
		if r.delSrc != "" {
			lb.del(r.delSrc)
		}
	}
	for _, r := range results {
		if !r.ok {
			continue
		}
		lb.set(r.dst, r.val, catParsed)
	}
	return nil
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;]*[a-zA-Z]`)

func decolorize(line string) string {
	if strings.IndexByte(line, 0x1b) < 0 {
		return line
	}
	return ansiRE.ReplaceAllString(line, "")
}

// evalLabelFilter evaluates f over the entry's labels. Numeric filters over
// values that do not convert keep the entry and set __error__.
func evalLabelFilter(f LabelFilter, lb *lbuilder) bool {
	switch f := f.(type) {
	case *BinaryLabelFilter:
		if f.And {
			return evalLabelFilter(f.Left, lb) && evalLabelFilter(f.Right, lb)
		}
		return evalLabelFilter(f.Left, lb) || evalLabelFilter(f.Right, lb)
	case *StringLabelFilter:
		v, _ := lb.get(f.Matcher.Name)
		return f.Matcher.Matches(v)
	case *NumericLabelFilter:
		if f.Name == ErrorLabel || f.Name == ErrorDetailsLabel {
			return false
		}
		v, ok := lb.get(f.Name)
		if !ok {
			return false
		}
		var x float64
		var err error
		switch f.Kind {
		case "number":
			x, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
		case "duration":
			var d time.Duration
			d, err = time.ParseDuration(strings.TrimSpace(v))
			x = d.Seconds()
		case "bytes":
			var b uint64
			b, err = parseBytes(strings.TrimSpace(v))
			x = float64(b)
		}
		if err != nil {
			lb.setErr(errLabelFilter, err.Error())
			return true
		}
		return compare(f.Op, x, f.Value)
	}
	return false
}

func compare(op string, a, b float64) bool {
	switch op {
	case "==":
		return a == b
	case "!=":
		return a != b
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "<":
		return a < b
	case "<=":
		return a <= b
	}
	return false
}

// literalFilters returns the line filters that can be pushed down to the
// Source: single-value |= and != before any stage that rewrites the line.
func literalFilters(stages []Stage) []LineFilter {
	var out []LineFilter
	for _, st := range stages {
		switch s := st.(type) {
		case *LineFilterStage:
			if s.Op == "|=" && len(s.Values) == 1 && s.Values[0] != "" {
				out = append(out, LineFilter{Op: LineContains, Value: s.Values[0]})
			} else if s.Op == "!=" && len(s.Values) == 1 && s.Values[0] != "" {
				out = append(out, LineFilter{Op: LineNotContains, Value: s.Values[0]})
			}
		case *LineFormatStage, *DecolorizeStage, *ParserStage:
			if p, ok := st.(*ParserStage); ok && p.Kind != "unpack" {
				continue
			}
			return out
		}
	}
	return out
}

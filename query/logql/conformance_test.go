package logql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// The conformance suite: testdata/*.test, in the style of Prometheus'
// promqltest. Commands:
//
//	clear
//	load
//	  {labels} <ts> <line> [{structured metadata}]
//	  {labels} <start>+<step>x<count> <line>        # count entries
//	eval instant at <t> <query>                      # vector / scalar
//	  {labels} <value>
//	eval range from <t> to <t> step <d> <query>      # matrix: one value per step, _ for none
//	  {labels} <v1> <v2> ...
//	eval logs from <t> to <t> [limit N] [direction forward|backward] <query>
//	  {labels} <ts> <line>                           # streams, entries in result order
//	eval_ordered instant at <t> <query>              # vector order matters
//	eval_fail <instant at .. | range from .. | logs from ..> <query>
//	  expected_fail_message <substring>
//
// Times are durations after the Unix epoch (10s, 1m30s, 0). Lines are Go
// strings: `raw` or "quoted".

func TestConformance(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.test files")
	}
	total := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			total += runTestFile(t, f)
		})
	}
	t.Logf("%d conformance cases", total)
}

type testCmd struct {
	line     int
	kind     string // eval, eval_ordered, eval_fail
	mode     string // instant, range, logs
	start    int64
	end      int64
	step     time.Duration
	limit    int
	dir      Direction
	query    string
	expect   []string
	failWant string
}

func runTestFile(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	src := &memSource{}
	cases := 0
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		switch {
		case l == "clear":
			src = &memSource{}
		case l == "load":
			for i+1 < len(lines) && isIndented(lines[i+1]) {
				i++
				if err := loadLine(src, strings.TrimSpace(lines[i])); err != nil {
					t.Fatalf("%s:%d: %v", path, i+1, err)
				}
			}
		case strings.HasPrefix(l, "eval"):
			cmd, err := parseEvalCmd(l)
			if err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
			cmd.line = i + 1
			for i+1 < len(lines) && isIndented(lines[i+1]) {
				i++
				el := strings.TrimSpace(lines[i])
				if el == "" || strings.HasPrefix(el, "#") {
					continue
				}
				if s, ok := strings.CutPrefix(el, "expected_fail_message "); ok {
					cmd.failWant = s
					continue
				}
				cmd.expect = append(cmd.expect, el)
			}
			cases++
			s := src
			t.Run(fmt.Sprintf("line%d", cmd.line), func(t *testing.T) {
				runCmd(t, s, cmd)
				// The same expectations through the optional Source
				// extensions (metadata hints, timestamp blocks).
				runCmd(t, &pushdownSource{mem: s}, cmd)
			})
		default:
			t.Fatalf("%s:%d: unknown command %q", path, i+1, l)
		}
	}
	return cases
}

func isIndented(s string) bool {
	return (strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\t")) && strings.TrimSpace(s) != ""
}

func parseTestTime(s string) (int64, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad time %q: %w", s, err)
	}
	return int64(d), nil
}

func parseEvalCmd(l string) (*testCmd, error) {
	f := strings.Fields(l)
	cmd := &testCmd{kind: f[0], dir: Backward}
	switch cmd.kind {
	case "eval", "eval_ordered", "eval_fail":
	default:
		return nil, fmt.Errorf("unknown command %q", f[0])
	}
	rest := f[1:]
	var err error
	take := func(kw string) (string, bool) {
		if len(rest) >= 2 && rest[0] == kw {
			v := rest[1]
			rest = rest[2:]
			return v, true
		}
		return "", false
	}
	if len(rest) == 0 {
		return nil, errors.New("missing mode")
	}
	cmd.mode = rest[0]
	rest = rest[1:]
	switch cmd.mode {
	case "instant":
		v, ok := take("at")
		if !ok {
			return nil, errors.New("instant needs at <t>")
		}
		if cmd.end, err = parseTestTime(v); err != nil {
			return nil, err
		}
		cmd.start = cmd.end
	case "range", "logs":
		v, ok := take("from")
		if !ok {
			return nil, errors.New("needs from <t>")
		}
		if cmd.start, err = parseTestTime(v); err != nil {
			return nil, err
		}
		if v, ok = take("to"); !ok {
			return nil, errors.New("needs to <t>")
		}
		if cmd.end, err = parseTestTime(v); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown mode %q", cmd.mode)
	}
	for {
		if v, ok := take("step"); ok {
			d, err := parseDuration(v)
			if err != nil {
				return nil, err
			}
			cmd.step = d
			continue
		}
		if v, ok := take("limit"); ok {
			if cmd.limit, err = strconv.Atoi(v); err != nil {
				return nil, err
			}
			continue
		}
		if v, ok := take("direction"); ok {
			cmd.dir = Backward
			if v == "forward" {
				cmd.dir = Forward
			}
			continue
		}
		break
	}
	// The query is the rest of the original line after the options.
	q := l
	for k := 0; k < len(f)-len(rest); k++ {
		q = strings.TrimLeft(q, " \t")
		q = q[len(f[k]):]
	}
	cmd.query = strings.TrimSpace(q)
	if cmd.query == "" {
		return nil, errors.New("missing query")
	}
	return cmd, nil
}

// splitBraces splits "{...} rest" at the closing brace, honouring quotes.
func splitBraces(s string) (string, string, error) {
	if !strings.HasPrefix(s, "{") {
		return "", s, errors.New("expected {")
	}
	inQ := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case inQ && c == '\\':
			i++
		case c == '"':
			inQ = !inQ
		case !inQ && c == '}':
			return s[:i+1], strings.TrimSpace(s[i+1:]), nil
		}
	}
	return "", s, errors.New("unterminated {")
}

func parseTestLabels(s string) (labels.Labels, error) {
	if s == "{}" {
		return labels.EmptyLabels(), nil
	}
	toks, perr := lex(s)
	if perr != nil {
		return labels.EmptyLabels(), perr
	}
	b := labels.NewScratchBuilder(4)
	i := 1
	for i+2 < len(toks) && toks[i].kind == tIdent && toks[i+1].text == "=" && toks[i+2].kind == tString {
		b.Add(toks[i].text, toks[i+2].text)
		i += 3
		if toks[i].text == "," {
			i++
		}
	}
	if toks[0].text != "{" || toks[i].text != "}" {
		return labels.EmptyLabels(), fmt.Errorf("bad labels %q", s)
	}
	b.Sort()
	return b.Labels(), nil
}

// cutString reads a Go string literal at the start of s.
func cutString(s string) (string, string, error) {
	if s == "" {
		return "", "", errors.New("missing line")
	}
	switch s[0] {
	case '`':
		end := strings.IndexByte(s[1:], '`')
		if end < 0 {
			return "", "", errors.New("unterminated `")
		}
		return s[1 : end+1], strings.TrimSpace(s[end+2:]), nil
	case '"':
		for j := 1; j < len(s); j++ {
			if s[j] == '\\' {
				j++
				continue
			}
			if s[j] == '"' {
				v, err := strconv.Unquote(s[:j+1])
				return v, strings.TrimSpace(s[j+1:]), err
			}
		}
		return "", "", errors.New("unterminated \"")
	}
	return "", "", fmt.Errorf("line must be a quoted string: %q", s)
}

func loadLine(src *memSource, l string) error {
	ls, rest, err := splitBraces(l)
	if err != nil {
		return err
	}
	lbls, err := parseTestLabels(ls)
	if err != nil {
		return err
	}
	tsSpec, rest, _ := strings.Cut(rest, " ")
	line, rest, err := cutString(strings.TrimSpace(rest))
	if err != nil {
		return err
	}
	md := labels.EmptyLabels()
	if rest != "" {
		mds, _, err := splitBraces(rest)
		if err != nil {
			return err
		}
		if md, err = parseTestLabels(mds); err != nil {
			return err
		}
	}
	var times []int64
	if start, tail, ok := strings.Cut(tsSpec, "+"); ok {
		stepS, countS, ok := strings.Cut(tail, "x")
		if !ok {
			return fmt.Errorf("bad time spec %q", tsSpec)
		}
		st, err := parseTestTime(start)
		if err != nil {
			return err
		}
		step, err := parseTestTime(stepS)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(countS)
		if err != nil {
			return err
		}
		for k := 0; k < n; k++ {
			times = append(times, st+int64(k)*step)
		}
	} else {
		ts, err := parseTestTime(tsSpec)
		if err != nil {
			return err
		}
		times = append(times, ts)
	}
	for _, ts := range times {
		src.add(lbls, Entry{Timestamp: ts, Line: line, Metadata: md})
	}
	return nil
}

func runCmd(t *testing.T, src Source, cmd *testCmd) {
	eng := NewEngine(src, DefaultEngineOptions())
	res, err := eng.Query(context.Background(), QueryParams{
		Query: cmd.query, Start: cmd.start, End: cmd.end, Step: cmd.step,
		Limit: cmd.limit, Direction: cmd.dir, Instant: cmd.mode == "instant",
	})
	if cmd.kind == "eval_fail" {
		if err == nil {
			t.Fatalf("line %d: %s: expected an error, got %s", cmd.line, cmd.query, dumpResult(res))
		}
		if cmd.failWant != "" && !strings.Contains(err.Error(), cmd.failWant) {
			t.Fatalf("line %d: %s: error %q does not contain %q", cmd.line, cmd.query, err, cmd.failWant)
		}
		return
	}
	if err != nil {
		t.Fatalf("line %d: %s: %v", cmd.line, cmd.query, err)
	}
	if err := checkResult(cmd, res); err != nil {
		t.Fatalf("line %d: %s: %v\ngot:\n%s", cmd.line, cmd.query, err, dumpResult(res))
	}
}

func parseTestValue(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}

func almostEqual(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b))
}

func checkResult(cmd *testCmd, res *Result) error {
	switch cmd.mode {
	case "logs":
		if res.Type != ValueTypeStreams {
			return fmt.Errorf("result type %s, want streams", res.Type)
		}
		return checkStreams(cmd, res)
	case "instant":
		if res.Type == ValueTypeScalar {
			if len(cmd.expect) != 1 {
				return fmt.Errorf("scalar result, want %d lines", len(cmd.expect))
			}
			want, err := parseTestValue(cmd.expect[0])
			if err != nil {
				return err
			}
			if !almostEqual(want, res.Scalar.V) {
				return fmt.Errorf("scalar %v, want %v", res.Scalar.V, want)
			}
			return nil
		}
		if res.Type != ValueTypeVector {
			return fmt.Errorf("result type %s, want vector", res.Type)
		}
		if len(res.Vector) != len(cmd.expect) {
			return fmt.Errorf("%d samples, want %d", len(res.Vector), len(cmd.expect))
		}
		for i, el := range cmd.expect {
			ls, rest, err := splitBraces(el)
			if err != nil {
				return err
			}
			want, err := parseTestLabels(ls)
			if err != nil {
				return err
			}
			v, err := parseTestValue(rest)
			if err != nil {
				return err
			}
			found := false
			for j, s := range res.Vector {
				if cmd.kind == "eval_ordered" && j != i {
					continue
				}
				if labels.Equal(s.Labels, want) {
					if !almostEqual(s.V, v) {
						return fmt.Errorf("%s = %v, want %v", want, s.V, v)
					}
					if s.T != cmd.end {
						return fmt.Errorf("%s at %d, want %d", want, s.T, cmd.end)
					}
					found = true
				}
			}
			if !found {
				return fmt.Errorf("no sample %s (at position %d)", want, i)
			}
		}
		return nil
	case "range":
		if res.Type != ValueTypeMatrix {
			return fmt.Errorf("result type %s, want matrix", res.Type)
		}
		if len(res.Matrix) != len(cmd.expect) {
			return fmt.Errorf("%d series, want %d", len(res.Matrix), len(cmd.expect))
		}
		var steps []int64
		for ts := cmd.start; ts <= cmd.end; ts += int64(cmd.step) {
			steps = append(steps, ts)
		}
		for _, el := range cmd.expect {
			ls, rest, err := splitBraces(el)
			if err != nil {
				return err
			}
			want, err := parseTestLabels(ls)
			if err != nil {
				return err
			}
			vals := strings.Fields(rest)
			if len(vals) != len(steps) {
				return fmt.Errorf("%s: %d values, want one per step (%d)", want, len(vals), len(steps))
			}
			var wantPts []Point
			for k, v := range vals {
				if v == "_" {
					continue
				}
				f, err := parseTestValue(v)
				if err != nil {
					return err
				}
				wantPts = append(wantPts, Point{T: steps[k], V: f})
			}
			idx := slices.IndexFunc(res.Matrix, func(s Series) bool { return labels.Equal(s.Labels, want) })
			if idx < 0 {
				return fmt.Errorf("no series %s", want)
			}
			got := res.Matrix[idx].Points
			if len(got) != len(wantPts) {
				return fmt.Errorf("%s: %d points, want %d", want, len(got), len(wantPts))
			}
			for k := range got {
				if got[k].T != wantPts[k].T || !almostEqual(got[k].V, wantPts[k].V) {
					return fmt.Errorf("%s: point %d = %v@%d, want %v@%d", want, k, got[k].V, got[k].T, wantPts[k].V, wantPts[k].T)
				}
			}
		}
		return nil
	}
	return fmt.Errorf("unknown mode %s", cmd.mode)
}

func checkStreams(cmd *testCmd, res *Result) error {
	type want struct {
		ls      labels.Labels
		entries []ResultEntry
	}
	var wants []*want
	for _, el := range cmd.expect {
		ls, rest, err := splitBraces(el)
		if err != nil {
			return err
		}
		lbls, err := parseTestLabels(ls)
		if err != nil {
			return err
		}
		tsS, rest, _ := strings.Cut(rest, " ")
		ts, err := parseTestTime(tsS)
		if err != nil {
			return err
		}
		line, _, err := cutString(strings.TrimSpace(rest))
		if err != nil {
			return err
		}
		var w *want
		for _, x := range wants {
			if labels.Equal(x.ls, lbls) {
				w = x
			}
		}
		if w == nil {
			w = &want{ls: lbls}
			wants = append(wants, w)
		}
		w.entries = append(w.entries, ResultEntry{Timestamp: ts, Line: line})
	}
	if len(res.Streams) != len(wants) {
		return fmt.Errorf("%d streams, want %d", len(res.Streams), len(wants))
	}
	for _, w := range wants {
		idx := slices.IndexFunc(res.Streams, func(s StreamResult) bool { return labels.Equal(s.Labels, w.ls) })
		if idx < 0 {
			return fmt.Errorf("no stream %s", w.ls)
		}
		got := res.Streams[idx].Entries
		if len(got) != len(w.entries) {
			return fmt.Errorf("%s: %d entries, want %d", w.ls, len(got), len(w.entries))
		}
		for k := range got {
			if got[k].Timestamp != w.entries[k].Timestamp || got[k].Line != w.entries[k].Line {
				return fmt.Errorf("%s: entry %d = %d %q, want %d %q", w.ls, k, got[k].Timestamp, got[k].Line, w.entries[k].Timestamp, w.entries[k].Line)
			}
		}
	}
	return nil
}

func dumpResult(res *Result) string {
	if res == nil {
		return "<nil>"
	}
	var b strings.Builder
	switch res.Type {
	case ValueTypeStreams:
		for _, s := range res.Streams {
			for _, e := range s.Entries {
				fmt.Fprintf(&b, "  %s %s %q\n", s.Labels, time.Duration(e.Timestamp), e.Line)
			}
		}
	case ValueTypeVector:
		for _, s := range res.Vector {
			fmt.Fprintf(&b, "  %s %v\n", s.Labels, s.V)
		}
	case ValueTypeMatrix:
		for _, s := range res.Matrix {
			fmt.Fprintf(&b, "  %s", s.Labels)
			for _, p := range s.Points {
				fmt.Fprintf(&b, " %v@%s", p.V, time.Duration(p.T))
			}
			b.WriteByte('\n')
		}
	case ValueTypeScalar:
		fmt.Fprintf(&b, "  %v\n", res.Scalar.V)
	}
	return b.String()
}

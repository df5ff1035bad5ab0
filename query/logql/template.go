package logql

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
)

// Bounds of one template execution that are not options.
const (
	// maxTemplateRangeSteps bounds the iterations of every `range` action of
	// one execution together. text/template ranges over integers, so
	// `{{range 1000000000}}{{end}}` would otherwise spin without producing a
	// byte; ranging over an entry's labels, even nested once, stays far
	// below it.
	maxTemplateRangeSteps = 10_000
	// maxTemplateCache bounds the compiled regular expressions and loaded
	// time zones one template keeps between executions.
	maxTemplateCache = 16
	// keepTemplateBuf is the largest output buffer a template keeps for the
	// next entry; a larger one (a rare huge line) is dropped.
	keepTemplateBuf = 64 << 10
	// rangeGuardFunc is the function appended to every range pipeline: it
	// counts the iterations before the range runs them.
	rangeGuardFunc = "__weft_range_guard__"
)

// errTemplateSyntax is a template construct weft refuses at parse time.
var errTemplateSyntax = errors.New("template definitions and calls (define, block, template) are not supported")

// tmplHolder is a parsed line_format / label_format template. Executions
// are serialized per holder because the __line__ and __timestamp__
// functions read the current entry and the budget is per execution.
//
// Every execution has a budget of limit bytes: what it writes, and every
// string its functions build on the way (each function that can build
// more than it was given checks the bound before it builds). Exceeding it
// fails the execution with ErrTemplateLimit, which fails the query.
type tmplHolder struct {
	t     *template.Template
	text  string
	lit   bool // no actions: the template text is the output
	limit int64

	mu    sync.Mutex // guards the fields below
	line  string
	ts    int64
	buf   bytes.Buffer
	used  int64
	steps int
	over  error // set when the budget ran out; the execution's error
	res   map[string]*regexpOrErr
	zones map[string]*zoneOrErr
}

func newTmpl(text string) (*tmplHolder, error) {
	h := &tmplHolder{text: text, limit: DefaultMaxTemplateBytes}
	t, err := template.New("").Option("missingkey=zero").Funcs(h.funcs()).Parse(text)
	if err != nil {
		return nil, err
	}
	if len(t.Templates()) > 1 {
		return nil, errTemplateSyntax
	}
	if t.Tree != nil && t.Root != nil {
		if err := guardRanges(t.Tree, t.Root); err != nil {
			return nil, err
		}
	}
	h.t = t
	h.lit = !strings.Contains(text, "{{")
	return h, nil
}

// guardRanges appends rangeGuardFunc to the pipeline of every range action
// below n, and refuses template calls (which can recurse).
func guardRanges(tr *parse.Tree, n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := guardRanges(tr, c); err != nil {
				return err
			}
		}
	case *parse.IfNode:
		return guardBranch(tr, &n.BranchNode)
	case *parse.WithNode:
		return guardBranch(tr, &n.BranchNode)
	case *parse.RangeNode:
		id := parse.NewIdentifier(rangeGuardFunc).SetTree(tr).SetPos(n.Pos)
		n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
		return guardBranch(tr, &n.BranchNode)
	case *parse.TemplateNode:
		return errTemplateSyntax
	}
	return nil
}

func guardBranch(tr *parse.Tree, b *parse.BranchNode) error {
	if err := guardRanges(tr, b.List); err != nil {
		return err
	}
	if b.ElseList != nil {
		return guardRanges(tr, b.ElseList)
	}
	return nil
}

// setLimit sets the bytes one execution may produce (<= 0: the default).
func (h *tmplHolder) setLimit(n int64) {
	if n <= 0 {
		n = DefaultMaxTemplateBytes
	}
	h.mu.Lock()
	h.limit = n
	h.mu.Unlock()
}

func (h *tmplHolder) exec(lb *lbuilder, line string, ts int64) (string, error) {
	if h.lit {
		return h.text, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.line, h.ts = line, ts
	h.used, h.steps, h.over = 0, 0, nil
	h.buf.Reset()
	err := h.t.Execute(tmplWriter{h}, lb.templateData())
	if h.over != nil {
		return "", h.over
	}
	if err != nil {
		return "", err
	}
	out := h.buf.String()
	if h.buf.Cap() > keepTemplateBuf {
		h.buf = bytes.Buffer{}
	}
	return out, nil
}

// tmplWriter charges what the template writes to its holder's budget.
type tmplWriter struct{ h *tmplHolder }

func (w tmplWriter) Write(p []byte) (int, error) {
	if err := w.h.charge(len(p)); err != nil {
		return 0, err
	}
	return w.h.buf.Write(p)
}

// reserve fails when n more bytes would exceed the budget; it charges
// nothing. Functions call it before building a result whose size they
// can bound.
func (h *tmplHolder) reserve(n int64) error {
	if n < 0 || h.used+n > h.limit {
		return h.exceeded()
	}
	return nil
}

// charge counts n bytes built or written.
func (h *tmplHolder) charge(n int) error {
	h.used += int64(n)
	if h.used > h.limit {
		return h.exceeded()
	}
	return nil
}

// str charges a string a function built and returns it.
func (h *tmplHolder) str(s string) (string, error) { return s, h.charge(len(s)) }

func (h *tmplHolder) exceeded() error {
	if h.over == nil {
		h.over = fmt.Errorf("%w: a line_format or label_format template may build at most %d bytes per entry (max_template_bytes)", ErrTemplateLimit, h.limit)
	}
	return h.over
}

// rangeGuard counts the iterations a range is about to run.
func (h *tmplHolder) rangeGuard(v any) (any, error) {
	n := 0
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.String:
		n = rv.Len()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n = int(max(min(rv.Int(), maxTemplateRangeSteps+1), 0))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n = int(min(rv.Uint(), maxTemplateRangeSteps+1))
	case reflect.Chan, reflect.Func:
		return nil, fmt.Errorf("range over %s is not supported", rv.Kind())
	}
	h.steps += n
	if h.steps > maxTemplateRangeSteps {
		if h.over == nil {
			h.over = fmt.Errorf("%w: the range actions of a template may run at most %d iterations per entry", ErrTemplateLimit, maxTemplateRangeSteps)
		}
		return nil, h.over
	}
	return v, nil
}

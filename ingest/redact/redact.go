// Package redact removes secrets from incoming data before anything is
// stored or tailed: one set of rules, regular expressions over log lines,
// structured metadata, span attributes and label values, applied by every
// ingest path (Loki push, OTLP logs, OTLP traces, remote write, OTLP
// metrics, import) through the wrappers of wrap.go. Each rule counts what
// it replaced. See docs/security.md.
package redact

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/regexp"
	"github.com/prometheus/client_golang/prometheus"
)

// Target is a kind of value a rule applies to.
type Target string

// The targets.
const (
	// LogLines are log lines (Loki push lines, OTLP log bodies).
	LogLines Target = "log_lines"
	// StructuredMetadata are the values of log entries' structured
	// metadata (Loki's, and OTLP log attributes stored as such).
	StructuredMetadata Target = "structured_metadata"
	// SpanAttributes are the string values of span, event, link, scope and
	// resource attributes, and span status messages.
	SpanAttributes Target = "span_attributes"
	// LabelValues are the label values of metric series, log streams and
	// trace resources (every label but the metric name).
	LabelValues Target = "label_values"
)

// AllTargets is every target, the default of a rule.
var AllTargets = []Target{LogLines, StructuredMetadata, SpanAttributes, LabelValues}

// Rule is one redaction rule.
type Rule struct {
	// Name names the rule in weft_redactions_total (required, unique).
	Name string
	// Builtin names a built-in pattern (Builtins) instead of Regex.
	Builtin string
	// Regex is an RE2 regular expression; every match is replaced.
	Regex string
	// Replacement replaces each match; $1 / ${name} expand groups, as in
	// regexp.Expand. Default "<redacted:NAME>" (a built-in's default keeps
	// the part that says what was redacted, e.g. "Bearer ").
	Replacement string
	// Targets are what the rule applies to; empty means AllTargets.
	Targets []Target
}

// builtin is one built-in pattern.
type builtin struct {
	regex, replacement, doc string
	// A value can only match when it contains one of literals, or one of
	// folded (ASCII case-insensitively): a check far cheaper than the
	// regular expression, which most values (log lines without secrets)
	// then skip.
	literals, folded []string
}

// Builtins are the built-in patterns by name. Their regular expressions
// aim at what the secret looks like, not at everything that may be one,
// so they rarely redact what is not a secret.
var Builtins = map[string]builtin{
	"email": {
		regex:       `[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`,
		replacement: "<redacted:email>",
		doc:         "e-mail addresses",
		literals:    []string{"@"},
	},
	"bearer_token": {
		regex:       `(?i)(bearer\s+)[A-Za-z0-9\-._~+/]{8,}=*`,
		replacement: "${1}<redacted:bearer_token>",
		doc:         "HTTP bearer tokens (Authorization: Bearer ...), JWTs included",
		folded:      []string{"bearer"},
	},
	"aws_key": {
		regex:       `\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b|(?i)(aws_secret_access_key["']?\s*[:=]\s*["']?)[A-Za-z0-9/+]{40}`,
		replacement: "${1}<redacted:aws_key>",
		doc:         "AWS access key IDs and secret access keys after their key name",
		literals:    []string{"AKIA", "ASIA", "ABIA", "ACCA"},
		folded:      []string{"aws_secret_access_key"},
	},
	"api_key": {
		regex: `\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_\-]{20}|xox[abposr]-[A-Za-z0-9\-]{10,}|sk-[A-Za-z0-9_\-]{20,}|AIza[0-9A-Za-z_\-]{35}|hf_[A-Za-z0-9]{30,})\b` +
			`|(?i)((?:api[_\-]?key|apikey|access[_\-]?token|auth[_\-]?token|client[_\-]?secret|secret[_\-]?key|password|passwd)["']?\s*[:=]\s*["']?)[^\s"'&,;]{6,}`,
		replacement: "${1}<redacted:api_key>",
		doc:         "well-known API key formats (GitHub, GitLab, Slack, OpenAI-style sk-, Google, Hugging Face) and values after api_key=, token=, password=, ...",
		literals:    []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "sk-", "AIza", "hf_"},
		folded:      []string{"key", "token", "secret", "passw"},
	},
}

// BuiltinNames are the names of Builtins, sorted.
func BuiltinNames() []string {
	names := make([]string, 0, len(Builtins))
	for n := range Builtins {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Options configure a Redactor.
type Options struct {
	// Rules are applied in order; none: the Redactor is nil and nothing
	// is redacted.
	Rules []Rule
	// Registerer receives weft_redactions_total; nil: not registered.
	Registerer prometheus.Registerer
}

// Errors of New.
var ErrInvalidRule = errors.New("invalid redaction rule")

// compiled is a rule ready to apply.
type compiled struct {
	name string
	re   *regexp.Regexp
	repl string
	// literals and folded prefilter values (builtin's); none: every value
	// is matched against re.
	literals, folded []string
	targets          [4]bool // by targetIndex
	count            [4]prometheus.Counter
}

func targetIndex(t Target) int {
	switch t {
	case LogLines:
		return 0
	case StructuredMetadata:
		return 1
	case SpanAttributes:
		return 2
	case LabelValues:
		return 3
	}
	return -1
}

// Redactor applies rules. A nil *Redactor redacts nothing, at no cost.
// Safe for concurrent use.
type Redactor struct {
	rules []compiled
	// on says whether any rule applies to a target.
	on [4]bool
}

// New compiles opts' rules; it returns nil (redact nothing) when there
// are none.
func New(opts Options) (*Redactor, error) {
	if len(opts.Rules) == 0 {
		return nil, nil
	}
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weft_redactions_total",
		Help: "Values replaced by redaction rules at ingest, by rule and target.",
	}, []string{"rule", "target"})
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(counter); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("register redaction counter: %w", err)
			}
			counter = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	r := &Redactor{}
	seen := map[string]bool{}
	for i, ru := range opts.Rules {
		c, err := compile(ru)
		if err != nil {
			return nil, fmt.Errorf("%w %d (%q): %w", ErrInvalidRule, i, ru.Name, err)
		}
		if seen[c.name] {
			return nil, fmt.Errorf("%w %d: name %q is used twice", ErrInvalidRule, i, c.name)
		}
		seen[c.name] = true
		for _, t := range AllTargets {
			if k := targetIndex(t); c.targets[k] {
				c.count[k] = counter.WithLabelValues(c.name, string(t))
				r.on[k] = true
			}
		}
		r.rules = append(r.rules, c)
	}
	return r, nil
}

func compile(ru Rule) (compiled, error) {
	c := compiled{name: ru.Name, repl: ru.Replacement}
	expr := ru.Regex
	switch {
	case ru.Builtin != "" && ru.Regex != "":
		return c, errors.New("builtin and regex are exclusive")
	case ru.Builtin != "":
		b, ok := Builtins[ru.Builtin]
		if !ok {
			return c, fmt.Errorf("unknown builtin %q, want one of %s", ru.Builtin, strings.Join(BuiltinNames(), ", "))
		}
		expr = b.regex
		c.literals, c.folded = b.literals, b.folded
		if c.repl == "" {
			c.repl = b.replacement
		}
		if c.name == "" {
			c.name = ru.Builtin
		}
	case ru.Regex == "":
		return c, errors.New("builtin or regex is required")
	}
	if c.name == "" {
		return c, errors.New("name is required")
	}
	if c.repl == "" {
		c.repl = "<redacted:" + c.name + ">"
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return c, fmt.Errorf("regex: %w", err)
	}
	if re.MatchString("") {
		return c, fmt.Errorf("regex %q matches the empty string", expr)
	}
	c.re = re
	targets := ru.Targets
	if len(targets) == 0 {
		targets = AllTargets
	}
	for _, t := range targets {
		k := targetIndex(t)
		if k < 0 {
			return c, fmt.Errorf("unknown target %q, want one of %s, %s, %s, %s", t, LogLines, StructuredMetadata, SpanAttributes, LabelValues)
		}
		c.targets[k] = true
	}
	return c, nil
}

// Applies reports whether any rule applies to t.
func (r *Redactor) Applies(t Target) bool {
	if r == nil {
		return false
	}
	k := targetIndex(t)
	return k >= 0 && r.on[k]
}

// String returns s with every rule for t applied, and whether it changed.
// An unchanged s is returned as is, without allocating.
func (r *Redactor) String(t Target, s string) (string, bool) {
	if r == nil || s == "" {
		return s, false
	}
	k := targetIndex(t)
	if k < 0 || !r.on[k] {
		return s, false
	}
	changed := false
	for i := range r.rules {
		c := &r.rules[i]
		if !c.targets[k] || !c.mayMatch(s) || !c.re.MatchString(s) {
			continue
		}
		c.count[k].Add(float64(len(c.re.FindAllStringIndex(s, -1))))
		s = c.re.ReplaceAllString(s, c.repl)
		changed = true
	}
	return s, changed
}

// mayMatch reports whether s passes the rule's prefilter.
func (c *compiled) mayMatch(s string) bool {
	if len(c.literals) == 0 && len(c.folded) == 0 {
		return true
	}
	for _, l := range c.literals {
		if strings.Contains(s, l) {
			return true
		}
	}
	for _, f := range c.folded {
		if containsFold(s, f) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains sub, ASCII case-insensitively;
// sub is lower case.
func containsFold(s, sub string) bool {
	n := len(sub)
	if n == 0 {
		return true
	}
	first, upper := sub[0], sub[0]
	if 'a' <= first && first <= 'z' {
		upper = first - 'a' + 'A'
	}
	for i := 0; i+n <= len(s); i++ {
		if b := s[i]; (b == first || b == upper) && strings.EqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}

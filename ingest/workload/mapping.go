package workload

import (
	"errors"
	"fmt"

	"github.com/prometheus/common/model"
)

// Rule maps the source attributes in Aliases to the canonical label Name.
// The first alias present on the source wins.
type Rule struct {
	// Name is the canonical label name, a legacy-valid Prometheus label name
	// ([a-zA-Z_][a-zA-Z0-9_]*) not starting with "__".
	Name string `yaml:"name"`
	// Aliases are source attribute or label names, most specific first.
	// A Rule without aliases matches nothing.
	Aliases []string `yaml:"aliases"`
}

// Options configure a Mapping. The YAML shape (under workload_context: in the
// server's -config file) is documented in docs/workload-context.md.
type Options struct {
	// Rules are the canonical labels and their aliases. An empty list
	// disables workload-context labels.
	Rules []Rule `yaml:"rules"`
}

// DefaultOptions returns weft's default context keys: the Kubernetes and host
// keys of the OpenTelemetry semantic conventions and the AI keys, each with
// the plain name as the last alias.
func DefaultOptions() Options {
	return Options{Rules: []Rule{
		{Name: "namespace", Aliases: []string{"k8s.namespace.name"}},
		{Name: "pod", Aliases: []string{"k8s.pod.name"}},
		{Name: "container", Aliases: []string{"k8s.container.name"}},
		{Name: "node", Aliases: []string{"k8s.node.name"}},
		{Name: "cluster", Aliases: []string{"k8s.cluster.name"}},
		{Name: "host", Aliases: []string{"host.name"}},
		{Name: "model", Aliases: []string{"ai.model.name", "gen_ai.request.model", "model"}},
		{Name: "model_version", Aliases: []string{"ai.model.version", "model_version"}},
		{Name: "run_id", Aliases: []string{"ai.run.id", "run_id"}},
		{Name: "dataset", Aliases: []string{"ai.dataset.name", "dataset"}},
		{Name: "team", Aliases: []string{"ai.team", "team"}},
		{Name: "rank", Aliases: []string{"ai.rank", "rank"}},
		{Name: "gpu_uuid", Aliases: []string{"gpu.uuid", "hw.id", "UUID"}},
	}}
}

// Label is one resolved canonical label.
type Label struct {
	Name, Value string
}

// Mapping resolves source attributes to canonical labels. It is immutable
// after New and safe for concurrent use.
type Mapping struct {
	rules []Rule
}

// Sentinel errors of New.
var (
	ErrInvalidRule = errors.New("invalid workload context rule")
)

// New validates opts and returns a Mapping. Names must be valid label names,
// unique, and not reserved ("__" prefix); aliases must be non-empty strings.
func New(opts Options) (*Mapping, error) {
	seen := make(map[string]struct{}, len(opts.Rules))
	rules := make([]Rule, 0, len(opts.Rules))
	for i, r := range opts.Rules {
		if !model.LegacyValidation.IsValidLabelName(r.Name) || len(r.Name) >= 2 && r.Name[:2] == "__" {
			return nil, fmt.Errorf("rule %d: name %q: %w", i, r.Name, ErrInvalidRule)
		}
		if _, dup := seen[r.Name]; dup {
			return nil, fmt.Errorf("rule %d: duplicate name %q: %w", i, r.Name, ErrInvalidRule)
		}
		seen[r.Name] = struct{}{}
		for _, a := range r.Aliases {
			if a == "" {
				return nil, fmt.Errorf("rule %d (%s): empty alias: %w", i, r.Name, ErrInvalidRule)
			}
		}
		rules = append(rules, Rule{Name: r.Name, Aliases: append([]string(nil), r.Aliases...)})
	}
	return &Mapping{rules: rules}, nil
}

// MustDefault returns the Mapping of DefaultOptions.
func MustDefault() *Mapping {
	m, err := New(DefaultOptions())
	if err != nil {
		panic("BUG: default workload options invalid: " + err.Error())
	}
	return m
}

// Names returns the canonical label names in rule order. The slice is a copy.
func (m *Mapping) Names() []string {
	out := make([]string, len(m.rules))
	for i, r := range m.rules {
		out[i] = r.Name
	}
	return out
}

// Len returns the number of rules.
func (m *Mapping) Len() int { return len(m.rules) }

// AppendLabels appends to dst the canonical labels found through lookup, in
// rule order, and returns the extended slice. lookup reports the value of a
// source attribute and whether it is present; empty values are skipped.
func (m *Mapping) AppendLabels(dst []Label, lookup func(name string) (string, bool)) []Label {
	for _, r := range m.rules {
		for _, a := range r.Aliases {
			if v, ok := lookup(a); ok && v != "" {
				dst = append(dst, Label{Name: r.Name, Value: v})
				break
			}
		}
	}
	return dst
}

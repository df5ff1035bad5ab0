package workload

import (
	"errors"
	"fmt"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// Rule maps the source attributes in Aliases to the canonical label Name.
// The first alias present on the source wins.
type Rule struct {
	// Name is the canonical label name, a legacy-valid Prometheus label name
	// ([a-zA-Z_][a-zA-Z0-9_]*) not starting with "__".
	Name string
	// Aliases are source attribute or label names, most specific first.
	// A Rule without aliases matches nothing.
	Aliases []string
}

// Options configure a Mapping. The server's configuration file sets them
// under workload_context: (cmd/weft; docs/workload-context.md).
type Options struct {
	// Rules are the canonical labels and their aliases. An empty list
	// disables workload-context labels.
	Rules []Rule
}

// DefaultOptions returns weft's default context keys: the Kubernetes and host
// keys of the OpenTelemetry semantic conventions and the AI keys. The aliases
// of each are, in order: the OpenTelemetry attribute, the name it gets as a
// Prometheus label (k8s.pod.name → k8s_pod_name, as a Collector's Prometheus
// exporter or Prometheus' promote_resource_attributes write it), the names
// well-known exporters use (dcgm-exporter's UUID and Hostname, vLLM's
// model_name), and the plain name last.
func DefaultOptions() Options {
	return Options{Rules: []Rule{
		{Name: "namespace", Aliases: []string{"k8s.namespace.name", "k8s_namespace_name"}},
		{Name: "pod", Aliases: []string{"k8s.pod.name", "k8s_pod_name"}},
		{Name: "container", Aliases: []string{"k8s.container.name", "k8s_container_name"}},
		{Name: "node", Aliases: []string{"k8s.node.name", "k8s_node_name"}},
		{Name: "cluster", Aliases: []string{"k8s.cluster.name", "k8s_cluster_name"}},
		// dcgm-exporter labels its series Hostname (hostname since #655).
		{Name: "host", Aliases: []string{"host.name", "host_name", "Hostname", "hostname"}},
		// vLLM labels its series model_name. dcgm-exporter's modelName is
		// the GPU model ("NVIDIA H100 80GB HBM3") and is never an alias.
		{Name: "model", Aliases: []string{"ai.model.name", "ai_model_name", "gen_ai.request.model", "gen_ai_request_model", "model_name", "model"}},
		{Name: "model_version", Aliases: []string{"ai.model.version", "ai_model_version", "model_version"}},
		{Name: "run_id", Aliases: []string{"ai.run.id", "ai_run_id", "run_id"}},
		{Name: "dataset", Aliases: []string{"ai.dataset.name", "ai_dataset_name", "dataset"}},
		{Name: "team", Aliases: []string{"ai.team", "ai_team", "team"}},
		{Name: "rank", Aliases: []string{"ai.rank", "ai_rank", "rank"}},
		// dcgm-exporter's UUID is the GPU's; gpu.uuid is OpenTelemetry's.
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
	// table maps each canonical name to its rule and each alias that
	// differs from its rule's name to the rules naming it, with its rank
	// there, in one probe (Scan.Observe, once per label of a series that
	// may have aliases; Canonical, Aliases). hasAliases says some rule has
	// such an alias; filter is a quick pre-check over them (MaybeAlias).
	table      nameTable
	hasAliases bool
	filter     [64]uint64
}

// nameTable is an open-addressing hash table over the canonical names and
// aliases, at most half full, hashed on a name's length and its first and
// last bytes: cheaper than a map's hash of the whole string, and the names
// are few.
type nameTable struct {
	slots []nameEntry
	mask  uint32
}

type nameEntry struct {
	name string
	rule int        // the rule named name; -1 when name is only an alias
	refs []aliasRef // the rules name is an alias of (not its own name)
}

func nameHash(name string) uint32 {
	h := uint32(len(name))*2654435761 ^ uint32(name[0])*0x85ebca6b ^ uint32(name[len(name)-1])*0xc2b2ae35
	return h ^ h>>15
}

// entry returns name's entry, creating it when create (while building).
func (t *nameTable) entry(name string, create bool) *nameEntry {
	if len(t.slots) == 0 || name == "" {
		return nil
	}
	for i := nameHash(name) & t.mask; ; i = (i + 1) & t.mask {
		e := &t.slots[i]
		switch {
		case e.name == name:
			return e
		case e.name == "":
			if !create {
				return nil
			}
			e.name, e.rule = name, -1
			return e
		}
	}
}

type aliasRef struct{ rule, rank int }

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
	m := &Mapping{rules: rules}
	n := 0
	for _, r := range rules {
		n += 1 + len(r.Aliases)
	}
	size := 16
	for size < 2*n {
		size *= 2
	}
	m.table = nameTable{slots: make([]nameEntry, size), mask: uint32(size - 1)}
	for i, r := range rules {
		m.table.entry(r.Name, true).rule = i
		for rank, a := range r.Aliases {
			if a == r.Name {
				continue
			}
			e := m.table.entry(a, true)
			e.refs = append(e.refs, aliasRef{rule: i, rank: rank + 1})
			m.hasAliases = true
			if len(a) < len(m.filter) {
				m.filter[len(a)] |= 1 << (a[0] & 63)
			}
		}
	}
	return m, nil
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

// MaybeAlias reports whether name may be an alias of a canonical label (the
// label sources' fast pre-check: false means certainly not). A few
// nanoseconds; a nil Mapping has no aliases.
func (m *Mapping) MaybeAlias(name string) bool {
	if m == nil || name == "" {
		return false
	}
	if len(name) >= len(m.filter) {
		return true
	}
	return m.filter[len(name)]&(1<<(name[0]&63)) != 0
}

// maxRules bounds the rules AddCanonical tracks on the stack; a mapping with
// more rules uses the heap for the rest.
const maxRules = 32

// AddCanonical returns ls with the canonical labels it lacks and one of
// their aliases provides: for each rule whose name is not a label of ls, the
// first of its aliases (in rule order) that is a label of ls with a
// non-empty value. The original labels stay, so queries on either name find
// the stream. It is what every label source applies: remote write, Loki
// push, weft-agent. ls is returned as it is (and false) when nothing is
// added, which is the common case and allocates nothing.
func (m *Mapping) AddCanonical(ls labels.Labels) (labels.Labels, bool) {
	if m == nil || !m.hasAliases {
		return ls, false
	}
	maybe := false
	ls.Range(func(l labels.Label) {
		if !maybe && m.MaybeAlias(l.Name) {
			maybe = true
		}
	})
	if !maybe {
		return ls, false
	}
	var buf [4]Label
	add := m.appendMissing(buf[:0], ls)
	if len(add) == 0 {
		return ls, false
	}
	b := labels.NewBuilder(ls)
	for _, l := range add {
		b.Set(l.Name, l.Value)
	}
	return b.Labels(), true
}

// appendMissing appends the labels AddCanonical adds, in rule order, with
// one pass over ls.
func (m *Mapping) appendMissing(dst []Label, ls labels.Labels) []Label {
	var s Scan
	m.StartScan(&s)
	ls.Range(func(l labels.Label) { s.Observe(l.Name, l.Value) })
	return s.AppendMissing(dst)
}

// Scan finds, over the pairs of one label set, the labels AddCanonical
// would add to it, for a label source that builds the set itself rather
// than holding it as labels.Labels (remote write's label encoder, which
// then encodes them in place, without a second label set). StartScan,
// Observe every pair, then AppendMissing. It holds no pointer into itself,
// so it stays on the caller's stack.
type Scan struct {
	m     *Mapping
	stack [maxRules]found
	heap  []found // for a mapping of more than maxRules rules
}

type found struct {
	has   bool   // the canonical name is a label
	rank  int    // alias rank of value (1-based; 0: none found)
	value string // value of the best alias found
}

// StartScan makes s a scan for m with nothing observed.
func (m *Mapping) StartScan(s *Scan) {
	s.m, s.heap = m, nil
	if m == nil {
		return
	}
	if len(m.rules) <= maxRules {
		clear(s.stack[:len(m.rules)])
	} else {
		s.heap = make([]found, len(m.rules))
	}
}

// rule is the state of rule i.
func (s *Scan) rule(i int) *found {
	if s.heap != nil {
		return &s.heap[i]
	}
	return &s.stack[i]
}

// Observe records one label of the set; empty values are no label.
func (s *Scan) Observe(name, value string) {
	m := s.m
	if m == nil || value == "" || name == "" {
		return
	}
	e := m.table.entry(name, false)
	if e == nil {
		return
	}
	if e.rule >= 0 {
		s.rule(e.rule).has = true
	}
	for _, ref := range e.refs {
		if f := s.rule(ref.rule); f.rank == 0 || ref.rank < f.rank {
			f.rank, f.value = ref.rank, value
		}
	}
}

// AppendMissing appends to dst, in rule order, the canonical labels the
// observed set lacks and one of their aliases provides.
func (s *Scan) AppendMissing(dst []Label) []Label {
	if s.m == nil {
		return dst
	}
	for i := range s.m.rules {
		if f := s.rule(i); !f.has && f.rank > 0 {
			dst = append(dst, Label{Name: s.m.rules[i].Name, Value: f.value})
		}
	}
	return dst
}

package workload

// Canonical returns the canonical label a name stands for: the name itself
// when it is a canonical label, the rule's name when it is one of its
// aliases (the most specific rule when several list it), and false when the
// mapping does not know it. Readers use it to accept a selector written with
// a source's name (ai_run_id, UUID, k8s_pod_name) and match the canonical
// label every signal carries.
func (m *Mapping) Canonical(name string) (string, bool) {
	if m == nil {
		return "", false
	}
	if _, ok := m.names[name]; ok {
		return name, true
	}
	refs := m.aliasRefs[name]
	if len(refs) == 0 {
		return "", false
	}
	best := refs[0]
	for _, r := range refs[1:] {
		if r.rank < best.rank {
			best = r
		}
	}
	return m.rules[best.rule].Name, true
}

// Aliases returns the aliases of the canonical label name, most specific
// first (a copy), or nil when name is not canonical.
func (m *Mapping) Aliases(name string) []string {
	if m == nil {
		return nil
	}
	i, ok := m.names[name]
	if !ok {
		return nil
	}
	return append([]string(nil), m.rules[i].Aliases...)
}

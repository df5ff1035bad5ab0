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
	e := m.table.entry(name, false)
	switch {
	case e == nil:
		return "", false
	case e.rule >= 0:
		return name, true
	case len(e.refs) == 0:
		return "", false
	}
	best := e.refs[0]
	for _, r := range e.refs[1:] {
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
	e := m.table.entry(name, false)
	if e == nil || e.rule < 0 {
		return nil
	}
	return append([]string(nil), m.rules[e.rule].Aliases...)
}

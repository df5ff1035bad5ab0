package workload

import (
	"slices"
	"testing"
)

func TestCanonical(t *testing.T) {
	m := MustDefault()
	for _, c := range []struct{ in, want string }{
		{"run_id", "run_id"}, {"ai_run_id", "run_id"}, {"ai.run.id", "run_id"},
		{"UUID", "gpu_uuid"}, {"Hostname", "host"}, {"k8s_pod_name", "pod"}, {"model_name", "model"},
	} {
		got, ok := m.Canonical(c.in)
		if !ok || got != c.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	if got, ok := m.Canonical("modelName"); ok {
		t.Errorf("Canonical(modelName) = %q: the GPU model is no alias", got)
	}
	if a := m.Aliases("gpu_uuid"); !slices.Equal(a, []string{"gpu.uuid", "hw.id", "UUID"}) {
		t.Errorf("Aliases(gpu_uuid) = %v", a)
	}
	if a := m.Aliases("UUID"); a != nil {
		t.Errorf("Aliases(UUID) = %v, want nil", a)
	}
	var nilMap *Mapping
	if _, ok := nilMap.Canonical("run_id"); ok {
		t.Error("nil mapping resolved a name")
	}
}

package workload

import (
	"errors"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

func lookupMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaultMapping(t *testing.T) {
	m := MustDefault()
	cases := []struct {
		name  string
		attrs map[string]string
		want  []Label
	}{
		{"none", map[string]string{"service.name": "x"}, nil},
		{"kubernetes", map[string]string{
			"k8s.namespace.name": "ml", "k8s.pod.name": "trainer-0", "k8s.container.name": "main", "host.name": "gpu-node-1",
		}, []Label{{"namespace", "ml"}, {"pod", "trainer-0"}, {"container", "main"}, {"host", "gpu-node-1"}}},
		{"ai semantic keys win over plain", map[string]string{
			"ai.model.name": "llama", "model": "other", "ai.run.id": "r1", "run_id": "r2", "gpu.uuid": "GPU-1", "hw.id": "hw",
		}, []Label{{"model", "llama"}, {"run_id", "r1"}, {"gpu_uuid", "GPU-1"}}},
		{"plain aliases", map[string]string{
			"model": "m", "run_id": "r", "hw.id": "GPU-2", "dataset": "d", "team": "t", "rank": "3", "model_version": "v1",
		}, []Label{{"model", "m"}, {"model_version", "v1"}, {"run_id", "r"}, {"dataset", "d"}, {"team", "t"}, {"rank", "3"}, {"gpu_uuid", "GPU-2"}}},
		{"empty value skipped, next alias used", map[string]string{"ai.model.name": "", "model": "m"}, []Label{{"model", "m"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := m.AppendLabels(nil, lookupMap(c.attrs))
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	cases := []struct {
		name  string
		rules []Rule
		ok    bool
	}{
		{"empty disables", nil, true},
		{"valid", []Rule{{Name: "job_id", Aliases: []string{"slurm.job.id"}}}, true},
		{"invalid name", []Rule{{Name: "job.id", Aliases: []string{"a"}}}, false},
		{"reserved name", []Rule{{Name: "__name__", Aliases: []string{"a"}}}, false},
		{"duplicate", []Rule{{Name: "a", Aliases: []string{"x"}}, {Name: "a", Aliases: []string{"y"}}}, false},
		{"empty alias", []Rule{{Name: "a", Aliases: []string{""}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(Options{Rules: c.rules})
			if c.ok {
				if err != nil || m.Len() != len(c.rules) {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidRule) {
				t.Fatalf("want ErrInvalidRule, got %v", err)
			}
		})
	}
}

func TestOptionsYAML(t *testing.T) {
	const doc = `
rules:
  - name: model
    aliases: [ai.model.name, model]
  - name: job_id
    aliases: [slurm.job.id]
`
	var o Options
	if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
		t.Fatal(err)
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	got := m.AppendLabels(nil, lookupMap(map[string]string{"slurm.job.id": "42", "model": "m"}))
	want := []Label{{"model", "m"}, {"job_id", "42"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !reflect.DeepEqual(m.Names(), []string{"model", "job_id"}) {
		t.Fatalf("names %v", m.Names())
	}
}

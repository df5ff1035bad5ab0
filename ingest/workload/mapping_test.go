package workload

import (
	"errors"
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
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

// TestAddCanonical: label sources (remote write, Loki push) get the
// canonical labels their aliases provide, beside the original names, so
// dashboards built on either name keep answering.
func TestAddCanonical(t *testing.T) {
	m := MustDefault()
	for _, tc := range []struct {
		name      string
		in, want  labels.Labels
		wantAdded bool
	}{
		{
			name: "dcgm-exporter series",
			in: labels.FromStrings("__name__", "DCGM_FI_DEV_GPU_UTIL", "gpu", "3", "UUID", "GPU-5f3c",
				"modelName", "NVIDIA H100 80GB HBM3", "Hostname", "node-6", "device", "nvidia3"),
			want: labels.FromStrings("__name__", "DCGM_FI_DEV_GPU_UTIL", "gpu", "3", "UUID", "GPU-5f3c", "gpu_uuid", "GPU-5f3c",
				"modelName", "NVIDIA H100 80GB HBM3", "Hostname", "node-6", "host", "node-6", "device", "nvidia3"),
			wantAdded: true,
		},
		{
			name:      "canonical already present wins",
			in:        labels.FromStrings("__name__", "x", "UUID", "GPU-a", "gpu_uuid", "GPU-b"),
			want:      labels.FromStrings("__name__", "x", "UUID", "GPU-a", "gpu_uuid", "GPU-b"),
			wantAdded: false,
		},
		{
			name:      "vLLM model_name",
			in:        labels.FromStrings("__name__", "vllm:num_requests_running", "model_name", "llama-70b"),
			want:      labels.FromStrings("__name__", "vllm:num_requests_running", "model_name", "llama-70b", "model", "llama-70b"),
			wantAdded: true,
		},
		{
			name:      "first alias in rule order wins",
			in:        labels.FromStrings("__name__", "x", "hostname", "b", "host.name", "a"),
			want:      labels.FromStrings("__name__", "x", "hostname", "b", "host.name", "a", "host", "a"),
			wantAdded: true,
		},
		{
			name: "no alias: unchanged",
			in:   labels.FromStrings("__name__", "up", "job", "prometheus", "instance", "localhost:9090", "run_id", "r42"),
			want: labels.FromStrings("__name__", "up", "job", "prometheus", "instance", "localhost:9090", "run_id", "r42"),
		},
		{
			name:      "dotted attribute names (RW 2.0 UTF-8)",
			in:        labels.FromStrings("__name__", "x", "ai.run.id", "r42", "k8s.pod.name", "trainer-0"),
			want:      labels.FromStrings("__name__", "x", "ai.run.id", "r42", "run_id", "r42", "k8s.pod.name", "trainer-0", "pod", "trainer-0"),
			wantAdded: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, added := m.AddCanonical(tc.in)
			if !labels.Equal(got, tc.want) || added != tc.wantAdded {
				t.Fatalf("AddCanonical(%s) = %s, %v; want %s, %v", tc.in, got, added, tc.want, tc.wantAdded)
			}
			if got.Get("model") == "NVIDIA H100 80GB HBM3" {
				t.Fatal("dcgm-exporter's modelName (the GPU model) became model")
			}
		})
	}
	var nilMapping *Mapping
	if got, added := nilMapping.AddCanonical(labels.FromStrings("UUID", "x")); added || got.Get("gpu_uuid") != "" {
		t.Fatal("a nil mapping added labels")
	}
}

// BenchmarkAddCanonical: the common case (no alias) costs a pass over the
// names and allocates nothing; a dcgm-exporter series pays one rebuild.
func BenchmarkAddCanonical(b *testing.B) {
	m := MustDefault()
	for _, bc := range []struct {
		name string
		ls   labels.Labels
	}{
		{"no_alias", labels.FromStrings("__name__", "node_cpu_seconds_total", "cpu", "3", "instance", "node-6:9100", "job", "node", "mode", "idle")},
		{"dcgm", labels.FromStrings("__name__", "DCGM_FI_DEV_GPU_UTIL", "gpu", "3", "UUID", "GPU-5f3c", "modelName", "NVIDIA H100 80GB HBM3", "Hostname", "node-6", "device", "nvidia3", "instance", "node-6:9400", "job", "dcgm")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = m.AddCanonical(bc.ls)
			}
		})
	}
}

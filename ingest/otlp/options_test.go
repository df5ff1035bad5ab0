package otlp

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"
	"gopkg.in/yaml.v3"

	"github.com/weftdb/weft/ingest/workload"
)

func TestOptionsYAML(t *testing.T) {
	const doc = `
translation_strategy: NoUTF8EscapingWithSuffixes
promote_resource_attributes: [cloud.region]
lookback_delta: 2m
max_time_span: 1h
delta:
  max_streams: 1000
  max_idle: 30s
workload_context:
  rules:
    - name: job_id
      aliases: [slurm.job.id]
`
	o := DefaultOptions()
	if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
		t.Fatal(err)
	}
	want := DefaultOptions()
	want.TranslationStrategy = otlptranslator.NoUTF8EscapingWithSuffixes
	want.PromoteResourceAttributes = []string{"cloud.region"}
	want.LookbackDelta = 2 * time.Minute
	want.MaxTimeSpan = time.Hour
	want.Delta = DeltaOptions{MaxStreams: 1000, MaxIdle: 30 * time.Second}
	want.Workload = workload.Options{Rules: []workload.Rule{{Name: "job_id", Aliases: []string{"slurm.job.id"}}}}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("got %+v\nwant %+v", o, want)
	}
	if _, err := New(nil, o); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"strategy", func(o *Options) { o.TranslationStrategy = "Bogus" }, "translation strategy"},
		{"max streams", func(o *Options) { o.Delta.MaxStreams = 0 }, "max_streams"},
		{"max idle", func(o *Options) { o.Delta.MaxIdle = 0 }, "max_idle"},
		{"time span", func(o *Options) { o.MaxTimeSpan = -1 }, "max_time_span"},
		{"promote both", func(o *Options) {
			o.PromoteAllResourceAttributes = true
			o.PromoteResourceAttributes = []string{"a"}
		}, "exclusive"},
		{"workload rule", func(o *Options) { o.Workload.Rules = []workload.Rule{{Name: "a.b"}} }, "invalid workload context rule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultOptions()
			c.edit(&o)
			if _, err := New(nil, o); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

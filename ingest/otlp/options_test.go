package otlp

import (
	"strings"
	"testing"

	"github.com/weftdb/weft/ingest/workload"
)

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

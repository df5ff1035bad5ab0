package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/cmd/weft/internal/app"
)

func TestLogLimitsConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "weft.yml")
	if err := os.WriteFile(cfg, []byte(`
limits:
  logs:
    max_line_size: 1000
    max_structured_metadata_size: 2000
    max_structured_metadata_entries_count: 20
    max_label_names_per_stream: 30
    max_label_name_length: 100
    max_label_value_length: 200
    creation_grace_period: 1h
    reject_old_samples_max_age: 30d
    max_push_body_bytes: 4096
otlp_logs:
  index_labels: [service.name, k8s.namespace.name]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"-config", cfg}, &stderr)
	if err != nil {
		t.Fatalf("parse: %v (%s)", err, stderr.String())
	}
	in := o.Loki.Ingest
	if in.MaxLineSize != 1000 || in.MaxStructuredMetadataSize != 2000 || in.MaxStructuredMetadataPairs != 20 ||
		in.MaxLabelNamesPerStream != 30 || in.MaxLabelNameLength != 100 || in.MaxLabelValueLength != 200 ||
		in.CreationGracePeriod != time.Hour || in.RejectOlderThan != 30*24*time.Hour || o.Loki.MaxPushBodySize != 4096 {
		t.Errorf("log limits %+v, body %d", in, o.Loki.MaxPushBodySize)
	}
	if !slices.Equal(o.OTLPLogIndexLabels, []string{"service.name", "k8s.namespace.name"}) {
		t.Errorf("index labels %v", o.OTLPLogIndexLabels)
	}

	// Defaults are Loki's; reject_old_samples: false accepts any age.
	def := app.DefaultOptions()
	if def.Loki.Ingest.MaxLabelNamesPerStream != 15 || def.OTLPLogIndexLabels != nil {
		t.Errorf("defaults %+v", def.Loki.Ingest)
	}
	off := filepath.Join(t.TempDir(), "off.yml")
	os.WriteFile(off, []byte("limits:\n  logs:\n    reject_old_samples: false\n"), 0o644)
	if o, err = parseFlags([]string{"-config", off}, &stderr); err != nil || o.Loki.Ingest.RejectOlderThan >= 0 {
		t.Errorf("reject_old_samples false: %v %v", err, o.Loki.Ingest.RejectOlderThan)
	}

	for body, want := range map[string]string{
		"limits:\n  logs:\n    max_line_size: 0\n":    "limits.logs.max_line_size must be positive",
		"limits:\n  logs:\n    max_line_sise: 10\n":   "max_line_sise",
		"otlp_logs:\n  index_label: [service.name]\n": "index_label",
	} {
		bad := filepath.Join(t.TempDir(), "bad.yml")
		os.WriteFile(bad, []byte(body), 0o644)
		if _, err := parseFlags([]string{"-config", bad}, &stderr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
}

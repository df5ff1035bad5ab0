package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestEffectiveConfigEveryKey: the effective configuration sets every key of
// the schema, so a key added to fileConfig without an export fails here.
func TestEffectiveConfigEveryKey(t *testing.T) {
	var stderr bytes.Buffer
	opts, err := parseFlags(nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := exportConfig(opts, "info")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				t.Errorf("%s: not in the effective configuration", path)
				return
			}
			walk(v.Elem(), path)
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[yaml.Node]() {
				return
			}
			for i := range v.NumField() {
				f := v.Type().Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				walk(v.Field(i), join(path, name))
			}
		}
	}
	walk(reflect.ValueOf(c).Elem(), "")
}

// TestEffectiveConfigRoundTrip: the effective configuration, given back as
// the file, gives the same effective configuration (nothing lost or
// changed on the way), and the alerting block's secrets and passwords in
// flags are redacted.
func TestEffectiveConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "weft.yml")
	if err := os.WriteFile(cfg, []byte(`
server:
  http_addr: 127.0.0.1:19338
  log_level: debug
storage:
  retention: 30d
  signal_retention:
    logs: 14d
  wal_sync_interval: 0s
logql:
  max_entries_limit_per_query: 2000
limits:
  logs:
    max_label_names_per_stream: 30
    reject_old_samples: false
  ingest:
    max_in_flight_bytes: 1048576
otlp:
  translation_strategy: NoUTF8EscapingWithSuffixes
  promote_resource_attributes: [cloud.region]
traces:
  span_metrics: false
workload_context:
  rules:
    - name: run_id
      aliases: [ai.run.id]
rule_files: [`+filepath.Join(dir, "rules", "*.yml")+`]
external_labels: {cluster: dgx-a}
alerting:
  alertmanagers:
    - static_configs: [{targets: ["127.0.0.1:9093"]}]
      basic_auth: {username: weft, password: hunter2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	opts, err := parseFlags([]string{"-config", cfg, "-alertmanager.url", "http://am:s3cret@127.0.0.1:9094"}, &stderr)
	if err != nil {
		t.Fatalf("parse: %v (%s)", err, stderr.String())
	}
	first := opts.ConfigYAML
	for _, secret := range []string{"hunter2", "s3cret"} {
		if strings.Contains(first, secret) {
			t.Errorf("effective configuration shows the secret %q:\n%s", secret, first)
		}
		for name, v := range opts.Flags {
			if strings.Contains(v, secret) {
				t.Errorf("flag %s shows the secret %q: %s", name, secret, v)
			}
		}
	}
	for _, want := range []string{"retention: 30d", "logs: 2w", "wal_sync_interval: 0s", "max_label_names_per_stream: 30", "reject_old_samples: false", "max_in_flight_bytes: 1048576", "translation_strategy: NoUTF8EscapingWithSuffixes", "span_metrics: false", "log_level: debug", "cluster: dgx-a", "<secret>"} {
		if !strings.Contains(first, want) {
			t.Errorf("effective configuration lacks %q:\n%s", want, first)
		}
	}

	// The alerting block's password is redacted, so giving the document
	// back needs it put back; everything else is taken as it is.
	again := filepath.Join(dir, "again.yml")
	if err := os.WriteFile(again, []byte(strings.ReplaceAll(first, "<secret>", "hunter2")), 0o644); err != nil {
		t.Fatal(err)
	}
	opts2, err := parseFlags([]string{"-config", again}, &stderr)
	if err != nil {
		t.Fatalf("parse the effective configuration: %v\n%s", err, first)
	}
	if opts2.ConfigYAML != first {
		t.Errorf("round trip changed the effective configuration:\nfirst:\n%s\nagain:\n%s", first, opts2.ConfigYAML)
	}
}

package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzConfigFile: any bytes as the -config file either start weft's option
// parsing cleanly or fail it with an error, never a panic; and a file that
// is accepted has an effective configuration (/api/v1/status/config) that is
// itself a valid -config file.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{
		"",
		"storage:\n  retention: 7d\n  out_of_order_window: 30m\nquery:\n  timeout: 30s\n",
		"limits:\n  remote_write:\n    max_labels_per_series: 40\n  otlp:\n    max_label_name_length: 100\n    max_label_value_length: 1000\n",
		"otlp:\n  translation_strategy: NoTranslation\n  promote_resource_attributes: [cloud.region]\n  delta:\n    max_streams: 5000\n",
		"workload_context:\n  rules:\n  - name: gpu_uuid\n    aliases: [UUID, gpu.uuid]\n",
		"server:\n  log_level: debug\nhttp:\n  shutdown_timeout: 10s\n",
		"storage: [1, 2]\n",
		"limits: {otlp: {max_label_name_length: -1}}\n",
		"a: &a [*a]\n",
		"query:\n  timeout: 99999999999999999999y\n",
		"\t- :\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "weft.yml")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		opts, err := parseFlags([]string{"-config", path}, io.Discard)
		if err != nil {
			return
		}
		if err := os.WriteFile(path, []byte(opts.ConfigYAML), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := parseFlags([]string{"-config", path}, io.Discard); err != nil {
			t.Fatalf("effective config of an accepted file is refused: %v\n--- file\n%s\n--- effective\n%s", err, b, opts.ConfigYAML)
		}
	})
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/api"
)

// TestTenantLimitsConfig: limits.tenants sets the defaults and per-tenant
// overrides (an override's omitted keys take the defaults), the effective
// configuration shows them, a bad value is an error naming it, and the
// reload function re-reads the file.
func TestTenantLimitsConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "weft.yml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`
limits:
  tenants:
    defaults:
      ingestion_rate: 10000
      max_series_per_query: 50000
      max_query_length: 30d
    overrides:
      team-a:
        ingestion_rate: 500000
        ingestion_burst_size: 1000000
        max_concurrent_queries: 4
`)
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"-config", cfg}, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	d := api.TenantLimits{IngestionRate: 10000, MaxSeriesPerQuery: 50000, MaxQueryLength: 30 * 24 * time.Hour}
	a := d
	a.IngestionRate, a.IngestionBurstSize, a.MaxConcurrentQueries = 500000, 1000000, 4
	if o.TenantLimits.Defaults != d || o.TenantLimits.Overrides["team-a"] != a || len(o.TenantLimits.Overrides) != 1 {
		t.Fatalf("limits = %+v", o.TenantLimits)
	}
	for _, want := range []string{"tenants:", "team-a:", "ingestion_burst_size: 1000000", "max_query_length: 30d"} {
		if !strings.Contains(o.ConfigYAML, want) {
			t.Errorf("effective configuration lacks %q:\n%s", want, o.ConfigYAML)
		}
	}
	write("limits:\n  tenants:\n    overrides:\n      team-b: {max_label_names_per_series: 20, max_series_per_metric: 5, max_label_name_length: 64,\n        max_label_value_length: 128, max_line_size: 1000, max_samples_per_query: 100}\n")
	got, err := o.ReloadTenantLimits()
	wantB := api.TenantLimits{MaxLabelNamesPerSeries: 20, MaxSeriesPerMetric: 5, MaxLabelNameLength: 64, MaxLabelValueLength: 128, MaxLineSize: 1000, MaxSamplesPerQuery: 100}
	if err != nil || got.Overrides["team-b"] != wantB || got.Defaults != (api.TenantLimits{}) {
		t.Fatalf("reload = %+v %v", got, err)
	}
	for body, want := range map[string]string{
		"limits:\n  tenants:\n    defaults: {ingestion_rate: -1}\n":        "ingestion_rate is negative",
		"limits:\n  tenants:\n    defaults: {max_line_size: -1}\n":         "max_line_size is negative",
		"limits:\n  tenants:\n    overrides: {a/b: {ingestion_rate: 1}}\n": "invalid tenant ID",
		"limits:\n  tenants:\n    defaults: {ingestion_rat: 1}\n":          "ingestion_rat",
	} {
		write(body)
		if _, err := parseFlags([]string{"-config", cfg}, &stderr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

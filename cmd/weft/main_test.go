package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"

	"github.com/weftdb/weft/cmd/weft/internal/app"
	"github.com/weftdb/weft/ingest/otlp"
	"github.com/weftdb/weft/ingest/workload"
)

func TestParseFlags(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "weft.yml")
	if err := os.WriteFile(cfg, []byte(`
storage:
  retention: 7d
  out_of_order_window: 30m
  block_cache_bytes: 67108864
query:
  timeout: 30s
  max_samples: 1000
  lookback_delta: 2m
  max_concurrency: 4
limits:
  remote_write:
    max_body_bytes: 1048576
    max_labels_per_series: 40
http:
  enable_admin_api: true
  shutdown_timeout: 10s
otlp:
  translation_strategy: NoTranslation
  delta:
    max_streams: 5000
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, o app.Options)
	}{
		{"defaults", nil, func(t *testing.T, o app.Options) {
			if o.DataDir != "./weft-data" || o.HTTPAddr != ":9338" || o.OTLPGRPCAddr != ":4317" || o.OTLPHTTPAddr != ":4318" {
				t.Errorf("listeners %+v", o)
			}
			if o.Storage.Retention != 30*24*time.Hour || o.Storage.OutOfOrderWindow != 10*time.Minute || o.EnableAdminAPI ||
				o.Storage.WALSyncInterval != time.Second {
				t.Errorf("storage %+v admin %v", o.Storage, o.EnableAdminAPI)
			}
			if o.Query.Timeout != 2*time.Minute || o.Query.MaxSamples != 50_000_000 || o.Query.LookbackDelta != 5*time.Minute || o.QueryMaxConcurrency != 20 {
				t.Errorf("query %+v", o.Query)
			}
			if o.Flags["http-addr"] != ":9338" || o.Flags["retention"] != "30d" {
				t.Errorf("flags map %v", o.Flags)
			}
		}},
		{"flags", []string{"-data-dir", "/d", "-http-addr", "127.0.0.1:1", "-retention", "12h", "-out-of-order-window", "1m", "-enable-admin-api"}, func(t *testing.T, o app.Options) {
			if o.DataDir != "/d" || o.HTTPAddr != "127.0.0.1:1" || o.Storage.Retention != 12*time.Hour || o.Storage.OutOfOrderWindow != time.Minute || !o.EnableAdminAPI {
				t.Errorf("options %+v", o)
			}
		}},
		{"web flags", []string{"-web.route-prefix", "/weft", "-web.external-url", "http://proxy/weft/"}, func(t *testing.T, o app.Options) {
			if o.Web.RoutePrefix != "/weft" || o.Web.ExternalURL != "http://proxy/weft/" {
				t.Errorf("web %+v", o.Web)
			}
		}},
		{"config file", []string{"-config", cfg}, func(t *testing.T, o app.Options) {
			if o.Storage.Retention != 7*24*time.Hour || o.Storage.OutOfOrderWindow != 30*time.Minute || o.Storage.BlockCacheBytes != 64<<20 {
				t.Errorf("storage %+v", o.Storage)
			}
			if o.Query.Timeout != 30*time.Second || o.Query.MaxSamples != 1000 || o.Query.LookbackDelta != 2*time.Minute || o.QueryMaxConcurrency != 4 {
				t.Errorf("query %+v", o.Query)
			}
			if o.RemoteWrite.MaxBodyBytes != 1<<20 || o.RemoteWrite.Ingest.MaxLabelsPerSeries != 40 || !o.EnableAdminAPI || o.ShutdownTimeout != 10*time.Second {
				t.Errorf("limits %+v admin %v", o.RemoteWrite, o.EnableAdminAPI)
			}
			// The otlp section is decoded over the defaults: named keys
			// change, the rest keep their default.
			def := app.DefaultOptions().OTLP.Ingest
			if o.OTLP.Ingest.TranslationStrategy != "NoTranslation" || o.OTLP.Ingest.Delta.MaxStreams != 5000 ||
				o.OTLP.Ingest.Delta.MaxIdle != def.Delta.MaxIdle || o.OTLP.Ingest.MaxTimeSpan != def.MaxTimeSpan {
				t.Errorf("otlp %+v", o.OTLP.Ingest)
			}
		}},
		{"wal sync interval", []string{"-wal-sync-interval", "250ms"}, func(t *testing.T, o app.Options) {
			if o.Storage.WALSyncInterval != 250*time.Millisecond {
				t.Errorf("WALSyncInterval %v", o.Storage.WALSyncInterval)
			}
		}},
		{"fsync per commit", []string{"-wal-sync-interval", "0"}, func(t *testing.T, o app.Options) {
			if o.Storage.WALSyncInterval >= 0 {
				t.Errorf("WALSyncInterval %v, want negative (fsync per commit)", o.Storage.WALSyncInterval)
			}
		}},
		{"flags win over the file", []string{"-config", cfg, "-retention", "1d"}, func(t *testing.T, o app.Options) {
			if o.Storage.Retention != 24*time.Hour || o.Storage.OutOfOrderWindow != 30*time.Minute {
				t.Errorf("storage %+v", o.Storage)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseFlags(c.args, &stderr)
			if err != nil {
				t.Fatalf("parse: %v (%s)", err, stderr.String())
			}
			c.check(t, o)
		})
	}
}

func TestUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yml")
	if err := os.WriteFile(bad, []byte("storage:\n  retension: 7d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCache := filepath.Join(t.TempDir(), "bad-cache.yml")
	if err := os.WriteFile(badCache, []byte("storage:\n  block_cache_bytes: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badOTLP := filepath.Join(t.TempDir(), "bad-otlp.yml")
	if err := os.WriteFile(badOTLP, []byte("otlp:\n  translation_stratgy: NoTranslation\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badRule := filepath.Join(t.TempDir(), "bad-rule.yml")
	if err := os.WriteFile(badRule, []byte("workload_context:\n  rules:\n    - name: __run\n      aliases: [ai.run.id]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "good.yml")
	if err := os.WriteFile(good, []byte("storage:\n  retention: 7d\n  signal_retention:\n    logs: 3d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"help", []string{"-help"}, exitOK, "-otlp-grpc-addr"},
		{"version", []string{"-version"}, exitOK, "weft " + buildVersion()},
		{"unknown flag", []string{"-nope"}, exitUsage, "flag provided but not defined"},
		{"bad duration", []string{"-retention", "forever"}, exitUsage, "invalid value"},
		{"unknown config key", []string{"-config", bad}, exitUsage, `line 2: unknown key "retension" in storage; valid keys: retention, signal_retention,`},
		{"unknown otlp config key", []string{"-config", badOTLP}, exitUsage, `line 2: unknown key "translation_stratgy" in otlp; valid keys: translation_strategy,`},
		{"bad workload rule", []string{"-config", badRule}, exitUsage, "workload_context: rule 0: name \"__run\""},
		{"check-config invalid", []string{"-check-config", bad}, exitUsage, `unknown key "retension"`},
		{"check-config valid", []string{"-check-config", good}, exitOK, "is valid"},
		{"bad retention override", []string{"-retention.logs", "soon"}, exitUsage, "invalid value"},
		{"zero block cache", []string{"-config", badCache}, exitUsage, "block_cache_bytes must be positive"},
		{"missing config", []string{"-config", "/nonexistent.yml"}, exitUsage, "read config"},
		{"stray argument", []string{"serve"}, exitUsage, "unexpected arguments"},
		{"negative wal sync interval", []string{"-wal-sync-interval", "-1s"}, exitUsage, "must not be negative"},
		{"bad log level", []string{"-log-level", "loud"}, exitUsage, "invalid -log-level"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(c.args, &stderr); code != c.code || !strings.Contains(stderr.String(), c.out) {
				t.Errorf("exit %d, want %d; output %q lacks %q", code, c.code, stderr.String(), c.out)
			}
		})
	}
}

func TestSetGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	setGCPercent("")
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, defaultGCPercent)
	}
	setGCPercent("100") // the runtime already applied the operator's value
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100: GC percent %d, want it left alone", got)
	}
}

// TestConfigSchema: the file covers what flags cover and more, each key
// lands in its option, and a flag given wins over the file.
func TestConfigSchema(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "weft.yml")
	if err := os.WriteFile(cfg, []byte(`
server:
  data_dir: /var/lib/weft
  http_addr: 127.0.0.1:19338
  otlp_grpc_addr: ""
  log_level: debug
storage:
  retention: 30d
  signal_retention:
    logs: 14d
    traces: 7d
  wal_sync_interval: 0s
logs:
  seal_entries: 1000
  seal_age: 2m
logql:
  max_entries_limit_per_query: 2000
  query_timeout: 1m
  max_query_memory_bytes: 1048576
loki:
  default_limit: 50
limits:
  logs:
    max_label_names_per_stream: 30
    max_line_size: 1048576
  otlp:
    max_request_bytes: 8388608
workload_context:
  rules:
    - name: run_id
      aliases: [ai.run.id, mlflow.run.id]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"-config", cfg, "-retention.logs", "10d", "-data-dir", "/d"}, &stderr)
	if err != nil {
		t.Fatalf("parse: %v (%s)", err, stderr.String())
	}
	if o.DataDir != "/d" || o.HTTPAddr != "127.0.0.1:19338" || o.OTLPGRPCAddr != "" || o.OTLPHTTPAddr != ":4318" {
		t.Errorf("server: data %q http %q grpc %q otlp http %q", o.DataDir, o.HTTPAddr, o.OTLPGRPCAddr, o.OTLPHTTPAddr)
	}
	st := o.Storage
	if st.Retention != 30*24*time.Hour || st.SignalRetention.Logs != 10*24*time.Hour || st.SignalRetention.Traces != 7*24*time.Hour || st.SignalRetention.Metrics != 0 {
		t.Errorf("retention %v %+v", st.Retention, st.SignalRetention)
	}
	if st.WALSyncInterval >= 0 {
		t.Errorf("wal_sync_interval 0s: %v, want negative (fsync per commit)", st.WALSyncInterval)
	}
	if st.Logs.SealEntries != 1000 || st.Logs.SealAge != 2*time.Minute {
		t.Errorf("logs %+v", st.Logs)
	}
	if o.LogQL.MaxEntriesLimit != 2000 || o.LogQL.Timeout != time.Minute || o.LogQL.MaxQueryMemory != 1<<20 || o.Loki.DefaultLimit != 50 {
		t.Errorf("logql %+v loki limit %d", o.LogQL, o.Loki.DefaultLimit)
	}
	if o.Loki.Ingest.MaxLabelNamesPerStream != 30 || o.Loki.Ingest.MaxLineSize != 1<<20 || o.OTLP.MaxRequestBytes != 8<<20 {
		t.Errorf("limits: loki %+v otlp %d", o.Loki.Ingest, o.OTLP.MaxRequestBytes)
	}
	if len(o.Workload.Rules) != 1 || o.Workload.Rules[0].Name != "run_id" || len(o.Workload.Rules[0].Aliases) != 2 {
		t.Errorf("workload %+v", o.Workload)
	}
	if !o.Logger.Enabled(t.Context(), slog.LevelDebug) {
		t.Error("server.log_level debug not applied")
	}
}

// TestConfigOTLP: the otlp section and the top-level workload_context land
// in the OTLP receiver's options (the schema lives here, not in ingest).
func TestConfigOTLP(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "weft.yml")
	if err := os.WriteFile(cfg, []byte(`
otlp:
  translation_strategy: NoUTF8EscapingWithSuffixes
  promote_resource_attributes: [cloud.region]
  max_time_span: 1h
  delta:
    max_streams: 1000
    max_idle: 30s
workload_context:
  rules:
    - name: model
      aliases: [ai.model.name, model]
    - name: job_id
      aliases: [slurm.job.id]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"-config", cfg}, &stderr)
	if err != nil {
		t.Fatalf("parse: %v (%s)", err, stderr.String())
	}
	want := app.DefaultOptions().OTLP.Ingest
	want.TranslationStrategy = otlptranslator.NoUTF8EscapingWithSuffixes
	want.PromoteResourceAttributes = []string{"cloud.region"}
	want.MaxTimeSpan = time.Hour
	want.Delta = otlp.DeltaOptions{MaxStreams: 1000, MaxIdle: 30 * time.Second}
	if !reflect.DeepEqual(o.OTLP.Ingest, want) {
		t.Errorf("otlp options\n got %+v\nwant %+v", o.OTLP.Ingest, want)
	}
	wantRules := []workload.Rule{{Name: "model", Aliases: []string{"ai.model.name", "model"}}, {Name: "job_id", Aliases: []string{"slurm.job.id"}}}
	if !reflect.DeepEqual(o.Workload.Rules, wantRules) {
		t.Errorf("workload rules %+v, want %+v", o.Workload.Rules, wantRules)
	}
}

// TestConfigTraces: the trace retention, span metrics and the indexed
// attributes land in their options.
func TestConfigTraces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.yml")
	if err := os.WriteFile(path, []byte("storage:\n  signal_retention:\n    traces: 7d\ntraces:\n  span_metrics: false\n  indexed_attributes: [a.b]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := parseFlags([]string{"-config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Storage.SignalRetention.Traces != 7*24*time.Hour || !opts.DisableSpanMetrics ||
		len(opts.TraceStore.IndexedAttributes) != 1 || opts.TraceStore.IndexedAttributes[0] != "a.b" {
		t.Fatalf("traces config not applied: %v %v %v", opts.Storage.SignalRetention, opts.DisableSpanMetrics, opts.TraceStore.IndexedAttributes)
	}
}

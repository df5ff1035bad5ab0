package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/cmd/weft/internal/app"
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
		{"unknown config key", []string{"-config", bad}, exitUsage, "field retension not found"},
		{"unknown otlp config key", []string{"-config", badOTLP}, exitUsage, "field translation_stratgy not found"},
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

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"go.yaml.in/yaml/v3"

	"github.com/weftdb/weft/cmd/weft/internal/app"
	"github.com/weftdb/weft/ingest/workload"
)

// fileConfig is weft's configuration file (-config): the one schema of every
// setting, what flags cover and more. Every field is optional; flags given on
// the command line win over the file. docs/configuration.md documents each
// key. Unknown keys are errors that name the key, its line and the valid
// keys (checkKeys).
type fileConfig struct {
	Server struct {
		DataDir      *string `yaml:"data_dir"`
		HTTPAddr     *string `yaml:"http_addr"`
		OTLPGRPCAddr *string `yaml:"otlp_grpc_addr"`
		OTLPHTTPAddr *string `yaml:"otlp_http_addr"`
		LogLevel     *string `yaml:"log_level"`
	} `yaml:"server"`
	Storage struct {
		// Retention applies to every signal; SignalRetention overrides it.
		Retention       *duration `yaml:"retention"`
		SignalRetention struct {
			Metrics *duration `yaml:"metrics"`
			Logs    *duration `yaml:"logs"`
			Traces  *duration `yaml:"traces"`
		} `yaml:"signal_retention"`
		OutOfOrderWindow *duration `yaml:"out_of_order_window"`
		// FutureWindow rejects samples further than this in the future.
		FutureWindow          *duration `yaml:"future_window"`
		MaxExemplarsPerSeries *int      `yaml:"max_exemplars_per_series"`
		BlockCacheBytes       *int64    `yaml:"block_cache_bytes"`
		WALSyncInterval       *duration `yaml:"wal_sync_interval"`
		CheckpointInterval    *duration `yaml:"checkpoint_interval"`
		CompactionInterval    *duration `yaml:"compaction_interval"`
		// DiskReserveBytes: writes are refused (503) below this much free
		// space; 0 is 5% of the filesystem (8 MiB to 1 GiB), negative off.
		DiskReserveBytes *int64 `yaml:"disk_reserve_bytes"`
	} `yaml:"storage"`
	Logs struct {
		SealEntries      *int      `yaml:"seal_entries"`
		SealBytes        *int      `yaml:"seal_bytes"`
		SealAge          *duration `yaml:"seal_age"`
		FilterCacheBytes *int      `yaml:"filter_cache_bytes"`
	} `yaml:"logs"`
	Query struct {
		Timeout        *duration `yaml:"timeout"`
		MaxSamples     *int      `yaml:"max_samples"`
		LookbackDelta  *duration `yaml:"lookback_delta"`
		MaxConcurrency *int      `yaml:"max_concurrency"`
	} `yaml:"query"`
	// LogQL holds the LogQL engine's limits under Loki's names.
	LogQL struct {
		Timeout           *duration `yaml:"query_timeout"`
		MaxEntriesLimit   *int      `yaml:"max_entries_limit_per_query"`
		MaxSeries         *int      `yaml:"max_query_series"`
		MaxQueryBytesRead *int64    `yaml:"max_query_bytes_read"`
		MaxQueryMemory    *int64    `yaml:"max_query_memory_bytes"`
		MaxTemplateBytes  *int64    `yaml:"max_template_bytes"`
		MaxLookback       *duration `yaml:"max_query_lookback"`
	} `yaml:"logql"`
	Loki struct {
		DefaultLimit    *int      `yaml:"default_limit"`
		DefaultLookback *duration `yaml:"default_lookback"`
		TailMaxQueued   *int      `yaml:"tail_max_queued"`
		PatternMaxLines *int      `yaml:"pattern_max_lines"`
	} `yaml:"loki"`
	Limits struct {
		RemoteWrite struct {
			MaxBodyBytes       *int64    `yaml:"max_body_bytes"`
			MaxDecodedBytes    *int64    `yaml:"max_decoded_bytes"`
			MaxConcurrency     *int      `yaml:"max_concurrency"`
			MaxLabelsPerSeries *int      `yaml:"max_labels_per_series"`
			MaxFutureSkew      *duration `yaml:"max_future_skew"`
		} `yaml:"remote_write"`
		Logs logLimits `yaml:"logs"`
		OTLP struct {
			MaxRequestBytes     *int64 `yaml:"max_request_bytes"`
			MaxLabelNameLength  *int   `yaml:"max_label_name_length"`
			MaxLabelValueLength *int   `yaml:"max_label_value_length"`
		} `yaml:"otlp"`
		// Ingest is what every ingest path shares.
		Ingest struct {
			MaxInFlightBytes *int64 `yaml:"max_in_flight_bytes"`
		} `yaml:"ingest"`
		// MemoryBudgetBytes is -memory-budget: new streams are refused
		// past it; 0 is 2/3 of the cgroup or machine memory, negative none.
		MemoryBudgetBytes *int64 `yaml:"memory_budget_bytes"`

		// Tenants are the per-tenant limits (config_tenants.go).
		Tenants tenantsConfig `yaml:"tenants"`
	} `yaml:"limits"`
	OTLPLogs otlpLogsConfig `yaml:"otlp_logs"`
	HTTP     struct {
		EnableAdminAPI  *bool     `yaml:"enable_admin_api"`
		CORSOrigin      *string   `yaml:"cors_origin"`
		ShutdownTimeout *duration `yaml:"shutdown_timeout"`
	} `yaml:"http"`
	OTLP struct {
		TranslationStrategy               *string   `yaml:"translation_strategy"`
		PromoteResourceAttributes         *[]string `yaml:"promote_resource_attributes"`
		PromoteAllResourceAttributes      *bool     `yaml:"promote_all_resource_attributes"`
		IgnoreResourceAttributes          *[]string `yaml:"ignore_resource_attributes"`
		KeepIdentifyingResourceAttributes *bool     `yaml:"keep_identifying_resource_attributes"`
		ConvertHistogramsToNHCB           *bool     `yaml:"convert_histograms_to_nhcb"`
		PromoteScopeMetadata              *bool     `yaml:"promote_scope_metadata"`
		MaxTimeSpan                       *duration `yaml:"max_time_span"`
		Delta                             struct {
			MaxStreams *int      `yaml:"max_streams"`
			MaxIdle    *duration `yaml:"max_idle"`
		} `yaml:"delta"`
	} `yaml:"otlp"`
	// Cluster is the scale-out role and its engines (config_cluster.go,
	// docs/scale-out.md).
	Cluster clusterConfig `yaml:"cluster"`
	// Security is TLS, authentication, cross-site writes and redaction
	// (config_security.go, docs/security.md).
	Security securityConfig `yaml:"security"`
	// WorkloadContext replaces the default context mapping of every ingest
	// path (docs/workload-context.md).
	WorkloadContext *struct {
		Rules []struct {
			Name    string   `yaml:"name"`
			Aliases []string `yaml:"aliases"`
		} `yaml:"rules"`
	} `yaml:"workload_context"`
	// Traces configures the trace store and span metrics (docs/traces.md);
	// their retention is storage.signal_retention.traces.
	Traces struct {
		// SpanMetrics turns the span metrics derived at ingest on or off.
		SpanMetrics *bool `yaml:"span_metrics"`
		// IndexedAttributes replaces the span attributes searchable
		// without reading whole spans.
		IndexedAttributes *[]string `yaml:"indexed_attributes"`
	} `yaml:"traces"`
	// rule_files, logql_rule_files, tenant_rule_files, external_labels, alerting, rules
	// (rules_config.go).
	rulesFileConfig `yaml:",inline"`
}

// duration is a YAML duration in Prometheus' syntax ("30d", "1h30m").
type duration time.Duration

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: duration must be a string like 15m or 30d: %w", n.Line, err)
	}
	v, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = duration(v)
	return nil
}

// MarshalYAML writes d as UnmarshalYAML reads it.
func (d duration) MarshalYAML() (any, error) { return model.Duration(d).String(), nil }

// loadConfigFile reads a YAML config file strictly: an unknown key is an
// error naming the key, its line and the keys valid there.
func loadConfigFile(path string) (*fileConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("parse config %s: %w", path, err)
	}
	var c fileConfig
	if len(root.Content) == 0 { // empty file
		return &c, nil
	}
	if err := checkKeys(root.Content[0], configSchema, ""); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // checkKeys found none; keeps the two in step
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &c, nil
}

// apply copies the file's settings into opts and validates what a value
// alone cannot show (the workload mapping, the OTLP translation strategy).
func (c *fileConfig) apply(opts *app.Options) error {
	c.bind(binder{}, opts)

	st := &opts.Storage
	if c.Storage.BlockCacheBytes != nil {
		if *c.Storage.BlockCacheBytes <= 0 {
			return fmt.Errorf("storage.block_cache_bytes must be positive, got %d", *c.Storage.BlockCacheBytes)
		}
		st.BlockCacheBytes = *c.Storage.BlockCacheBytes
	}
	if c.Storage.WALSyncInterval != nil {
		if err := setWALSync(st, time.Duration(*c.Storage.WALSyncInterval)); err != nil {
			return fmt.Errorf("storage.wal_sync_interval: %w", err)
		}
	}

	if err := c.Limits.Logs.apply(opts); err != nil {
		return err
	}
	if err := c.Limits.Tenants.apply(opts); err != nil {
		return err
	}
	c.OTLPLogs.apply(opts)

	if c.Traces.SpanMetrics != nil {
		opts.DisableSpanMetrics = !*c.Traces.SpanMetrics
	}
	if c.Traces.IndexedAttributes != nil {
		opts.TraceStore.IndexedAttributes = append([]string{}, *c.Traces.IndexedAttributes...)
	}

	o, oi := c.OTLP, &opts.OTLP.Ingest
	if o.TranslationStrategy != nil {
		s := otlptranslator.TranslationStrategyOption(*o.TranslationStrategy)
		switch s {
		case otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
			otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation:
		default:
			return fmt.Errorf("otlp.translation_strategy %q: want one of %s, %s, %s, %s", s,
				otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
				otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation)
		}
		oi.TranslationStrategy = s
	}
	if o.PromoteResourceAttributes != nil {
		oi.PromoteResourceAttributes = *o.PromoteResourceAttributes
	}
	if o.IgnoreResourceAttributes != nil {
		oi.IgnoreResourceAttributes = *o.IgnoreResourceAttributes
	}

	if err := c.Cluster.apply(opts); err != nil {
		return err
	}
	if err := c.Security.apply(opts); err != nil {
		return fmt.Errorf("security: %w", err)
	}
	if w := c.WorkloadContext; w != nil {
		opts.Workload = workload.Options{Rules: []workload.Rule{}}
		for _, r := range w.Rules {
			opts.Workload.Rules = append(opts.Workload.Rules, workload.Rule{Name: r.Name, Aliases: r.Aliases})
		}
	}
	if _, err := workload.New(opts.Workload); err != nil {
		return fmt.Errorf("workload_context: %w", err)
	}
	return nil
}

// binder moves the plain keys between the file and the options: applying
// copies each key the file sets into its option; exporting sets every key
// from its option (the effective configuration, exportConfig).
type binder struct{ export bool }

func bindVal[T any](b binder, dst *T, src **T) {
	switch {
	case b.export:
		v := *dst
		*src = &v
	case *src != nil:
		*dst = **src
	}
}

func bindDur(b binder, dst *time.Duration, src **duration) {
	switch {
	case b.export:
		v := duration(*dst)
		*src = &v
	case *src != nil:
		*dst = time.Duration(**src)
	}
}

// bind moves every key that is one option, unvalidated, either way; the
// keys that need validation or a conversion are apply's and exportConfig's.
func (c *fileConfig) bind(b binder, opts *app.Options) {
	st := &opts.Storage
	lg := &opts.Storage.Logs
	rw := &c.Limits.RemoteWrite
	o, oi := &c.OTLP, &opts.OTLP.Ingest
	bindVal(b, &opts.DataDir, &c.Server.DataDir)
	bindVal(b, &opts.HTTPAddr, &c.Server.HTTPAddr)
	bindVal(b, &opts.OTLPGRPCAddr, &c.Server.OTLPGRPCAddr)
	bindVal(b, &opts.OTLPHTTPAddr, &c.Server.OTLPHTTPAddr)
	bindDur(b, &st.Retention, &c.Storage.Retention)
	bindDur(b, &st.SignalRetention.Metrics, &c.Storage.SignalRetention.Metrics)
	bindDur(b, &st.SignalRetention.Logs, &c.Storage.SignalRetention.Logs)
	bindDur(b, &st.SignalRetention.Traces, &c.Storage.SignalRetention.Traces)
	bindDur(b, &st.OutOfOrderWindow, &c.Storage.OutOfOrderWindow)
	bindDur(b, &st.FutureWindow, &c.Storage.FutureWindow)
	bindVal(b, &st.MaxExemplarsPerSeries, &c.Storage.MaxExemplarsPerSeries)
	bindDur(b, &st.CheckpointInterval, &c.Storage.CheckpointInterval)
	bindDur(b, &st.CompactionInterval, &c.Storage.CompactionInterval)
	bindVal(b, &st.DiskReserve, &c.Storage.DiskReserveBytes)
	bindVal(b, &lg.SealEntries, &c.Logs.SealEntries)
	bindVal(b, &lg.SealBytes, &c.Logs.SealBytes)
	bindDur(b, &lg.SealAge, &c.Logs.SealAge)
	bindVal(b, &lg.FilterCacheBytes, &c.Logs.FilterCacheBytes)

	bindDur(b, &opts.Query.Timeout, &c.Query.Timeout)
	bindDur(b, &opts.Query.LookbackDelta, &c.Query.LookbackDelta)
	bindVal(b, &opts.Query.MaxSamples, &c.Query.MaxSamples)
	bindVal(b, &opts.QueryMaxConcurrency, &c.Query.MaxConcurrency)

	bindDur(b, &opts.LogQL.Timeout, &c.LogQL.Timeout)
	bindVal(b, &opts.LogQL.MaxEntriesLimit, &c.LogQL.MaxEntriesLimit)
	bindVal(b, &opts.LogQL.MaxSeries, &c.LogQL.MaxSeries)
	bindDur(b, &opts.LogQL.MaxLookback, &c.LogQL.MaxLookback)
	bindVal(b, &opts.LogQL.MaxQueryBytesRead, &c.LogQL.MaxQueryBytesRead)
	bindVal(b, &opts.LogQL.MaxQueryMemory, &c.LogQL.MaxQueryMemory)
	bindVal(b, &opts.LogQL.MaxTemplateBytes, &c.LogQL.MaxTemplateBytes)

	bindVal(b, &opts.Loki.DefaultLimit, &c.Loki.DefaultLimit)
	bindDur(b, &opts.Loki.DefaultLookback, &c.Loki.DefaultLookback)
	bindVal(b, &opts.Loki.TailMaxQueued, &c.Loki.TailMaxQueued)
	bindVal(b, &opts.Loki.PatternMaxLines, &c.Loki.PatternMaxLines)
	bindVal(b, &opts.RemoteWrite.MaxBodyBytes, &rw.MaxBodyBytes)
	bindVal(b, &opts.RemoteWrite.MaxDecodedBytes, &rw.MaxDecodedBytes)
	bindVal(b, &opts.RemoteWrite.MaxConcurrency, &rw.MaxConcurrency)
	bindVal(b, &opts.RemoteWrite.Ingest.MaxLabelsPerSeries, &rw.MaxLabelsPerSeries)
	bindDur(b, &opts.RemoteWrite.Ingest.MaxFutureSkew, &rw.MaxFutureSkew)

	bindVal(b, &opts.OTLP.MaxRequestBytes, &c.Limits.OTLP.MaxRequestBytes)
	bindVal(b, &oi.MaxLabelNameLength, &c.Limits.OTLP.MaxLabelNameLength)
	bindVal(b, &oi.MaxLabelValueLength, &c.Limits.OTLP.MaxLabelValueLength)
	bindVal(b, &opts.IngestMaxInFlightBytes, &c.Limits.Ingest.MaxInFlightBytes)
	bindVal(b, &opts.Storage.MemoryBudget, &c.Limits.MemoryBudgetBytes)

	bindVal(b, &opts.EnableAdminAPI, &c.HTTP.EnableAdminAPI)
	bindVal(b, &opts.CORSOrigin, &c.HTTP.CORSOrigin)
	bindDur(b, &opts.ShutdownTimeout, &c.HTTP.ShutdownTimeout)
	bindVal(b, &oi.PromoteAllResourceAttributes, &o.PromoteAllResourceAttributes)
	bindVal(b, &oi.KeepIdentifyingResourceAttributes, &o.KeepIdentifyingResourceAttributes)
	bindVal(b, &oi.ConvertHistogramsToNHCB, &o.ConvertHistogramsToNHCB)
	bindVal(b, &oi.PromoteScopeMetadata, &o.PromoteScopeMetadata)
	bindDur(b, &oi.MaxTimeSpan, &o.MaxTimeSpan)
	bindVal(b, &oi.Delta.MaxStreams, &o.Delta.MaxStreams)
	bindDur(b, &oi.Delta.MaxIdle, &o.Delta.MaxIdle)
}

// setWALSync applies a WAL sync interval: 0 fsyncs before every
// acknowledgement (storage: negative), negative is refused.
func setWALSync(st *storageOptions, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s: must not be negative", d)
	}
	st.WALSyncInterval = d
	if d == 0 {
		st.WALSyncInterval = -1 // storage: negative = fsync per commit
	}
	return nil
}

package main

import (
	"fmt"
	"slices"

	"github.com/grafana/regexp"
	"go.yaml.in/yaml/v3"

	"github.com/weftdb/weft/cmd/weft/internal/app"
	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/otlplogs"
	"github.com/weftdb/weft/storage/tracestore"
)

// exportConfig returns the configuration file that gives opts, every key
// set: weft's effective configuration after defaults, the file and the flags
// (GET /api/v1/status/config). Secrets in the alerting block come out as
// Prometheus writes them, "<secret>". logLevel is the level in effect.
func exportConfig(opts app.Options, logLevel string) (*fileConfig, error) {
	c := &fileConfig{}
	c.bind(binder{export: true}, &opts)
	c.Cluster.bind(binder{export: true}, &opts.Cluster) // config_cluster.go
	c.Server.LogLevel = &logLevel
	c.Security.export(opts) // config_security.go

	st := opts.Storage
	c.Storage.BlockCacheBytes = ptr(st.BlockCacheBytes)
	wal := st.WALSyncInterval
	if wal < 0 { // storage: negative = fsync per commit = 0s in the file
		wal = 0
	}
	c.Storage.WALSyncInterval = ptr(duration(wal))

	c.Limits.Logs.export(opts)
	c.Limits.Tenants.export(opts) // config_tenants.go
	labels := opts.OTLPLogIndexLabels
	if labels == nil {
		labels = otlplogs.DefaultIndexLabels
	}
	c.OTLPLogs.IndexLabels = ptr(slices.Clone(labels))
	c.Traces.SpanMetrics = ptr(!opts.DisableSpanMetrics)
	attrs := opts.TraceStore.IndexedAttributes
	if attrs == nil {
		attrs = tracestore.DefaultIndexedAttributes
	}
	c.Traces.IndexedAttributes = ptr(slices.Clone(attrs))

	oi := opts.OTLP.Ingest
	c.OTLP.TranslationStrategy = ptr(string(oi.TranslationStrategy))
	c.OTLP.PromoteResourceAttributes = ptr(slices.Clone(oi.PromoteResourceAttributes))
	c.OTLP.IgnoreResourceAttributes = ptr(slices.Clone(oi.IgnoreResourceAttributes))

	c.WorkloadContext = &struct {
		Rules []struct {
			Name    string   `yaml:"name"`
			Aliases []string `yaml:"aliases"`
		} `yaml:"rules"`
	}{}
	for _, r := range opts.Workload.Rules {
		c.WorkloadContext.Rules = append(c.WorkloadContext.Rules, struct {
			Name    string   `yaml:"name"`
			Aliases []string `yaml:"aliases"`
		}{r.Name, slices.Clone(r.Aliases)})
	}

	rc := opts.Rules.Config
	c.RuleFiles = slices.Clone(rc.RuleFiles)
	c.LogQLRuleFiles = slices.Clone(rc.LogQLRuleFiles)
	c.ExternalLabels = rc.ExternalLabels.Map()
	c.Rules.EvaluationInterval = ptr(duration(rc.EvaluationInterval))
	c.Rules.QueryOffset = ptr(duration(rc.QueryOffset))
	if err := c.Alerting.Encode(rc.Alerting); err != nil {
		return nil, fmt.Errorf("alerting: %w", err)
	}
	return c, nil
}

// effectiveConfigYAML is exportConfig as the YAML document status/config
// answers.
func effectiveConfigYAML(opts app.Options, logLevel string) (string, error) {
	c, err := exportConfig(opts, logLevel)
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("marshal effective configuration: %w", err)
	}
	return string(b), nil
}

func ptr[T any](v T) *T { return &v }

// export sets every log limit from opts.
func (l *logLimits) export(opts app.Options) {
	in := opts.Loki.Ingest
	l.MaxLineSize = ptr(in.MaxLineSize)
	l.MaxStructuredMetadataSize = ptr(in.MaxStructuredMetadataSize)
	l.MaxStructuredMetadataEntriesCount = ptr(in.MaxStructuredMetadataPairs)
	l.MaxLabelNamesPerStream = ptr(in.MaxLabelNamesPerStream)
	l.MaxLabelNameLength = ptr(in.MaxLabelNameLength)
	l.MaxLabelValueLength = ptr(in.MaxLabelValueLength)
	l.CreationGracePeriod = ptr(duration(in.CreationGracePeriod))
	l.RejectOldSamples = ptr(in.RejectOlderThan >= 0)
	age := in.RejectOlderThan
	if age < 0 {
		age = loki.DefaultOptions().RejectOlderThan // unused while reject_old_samples is false
	}
	l.RejectOldSamplesMaxAge = ptr(duration(age))
	l.MaxPushBodyBytes = ptr(opts.Loki.MaxPushBodySize)
}

// urlPassword is the password of a URL's user info (-alertmanager.url).
var urlPassword = regexp.MustCompile(`(://[^:/@\s]*):[^@/\s]*@`)

// redactURLPasswords replaces the passwords of URLs in a flag's value, as
// Prometheus shows secrets: "<secret>".
func redactURLPasswords(v string) string { return urlPassword.ReplaceAllString(v, "$1:<secret>@") }

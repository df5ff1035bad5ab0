package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/cmd/weft/internal/app"
)

// tenantLimitsConfig is one tenant's limits in limits.tenants (defaults, or
// an override), named after Mimir's and Loki's keys where they have the
// same limit. An omitted key takes the default; 0 is no limit.
type tenantLimitsConfig struct {
	IngestionRate              *float64  `yaml:"ingestion_rate"`
	IngestionBurstSize         *int      `yaml:"ingestion_burst_size"`
	LogIngestionRateBytes      *float64  `yaml:"log_ingestion_rate_bytes"`
	LogIngestionBurstSizeBytes *int      `yaml:"log_ingestion_burst_size_bytes"`
	SpanIngestionRate          *float64  `yaml:"span_ingestion_rate"`
	SpanIngestionBurstSize     *int      `yaml:"span_ingestion_burst_size"`
	MaxLabelNamesPerSeries     *int      `yaml:"max_label_names_per_series"`
	MaxSeriesPerQuery          *int      `yaml:"max_series_per_query"`
	MaxQueryLength             *duration `yaml:"max_query_length"`
	MaxConcurrentQueries       *int      `yaml:"max_concurrent_queries"`
	MaxActiveSeries            *int      `yaml:"max_active_series"`
	MaxSeriesPerMetric         *int      `yaml:"max_series_per_metric"`
	MaxLabelNameLength         *int      `yaml:"max_label_name_length"`
	MaxLabelValueLength        *int      `yaml:"max_label_value_length"`
	MaxLineSize                *int      `yaml:"max_line_size"`
	MaxSamplesPerQuery         *int      `yaml:"max_samples_per_query"`
}

// tenantsConfig is limits.tenants: the per-tenant limits, reloaded with
// SIGHUP and POST /-/reload.
type tenantsConfig struct {
	Defaults  tenantLimitsConfig            `yaml:"defaults"`
	Overrides map[string]tenantLimitsConfig `yaml:"overrides"`
}

// over returns base with the keys c sets.
func (c *tenantLimitsConfig) over(base api.TenantLimits) api.TenantLimits {
	set := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	setF := func(dst *float64, src *float64) {
		if src != nil {
			*dst = *src
		}
	}
	setF(&base.IngestionRate, c.IngestionRate)
	set(&base.IngestionBurstSize, c.IngestionBurstSize)
	setF(&base.LogIngestionRateBytes, c.LogIngestionRateBytes)
	set(&base.LogIngestionBurstSizeBytes, c.LogIngestionBurstSizeBytes)
	setF(&base.SpanIngestionRate, c.SpanIngestionRate)
	set(&base.SpanIngestionBurstSize, c.SpanIngestionBurstSize)
	set(&base.MaxLabelNamesPerSeries, c.MaxLabelNamesPerSeries)
	set(&base.MaxSeriesPerQuery, c.MaxSeriesPerQuery)
	set(&base.MaxConcurrentQueries, c.MaxConcurrentQueries)
	set(&base.MaxActiveSeries, c.MaxActiveSeries)
	set(&base.MaxSeriesPerMetric, c.MaxSeriesPerMetric)
	set(&base.MaxLabelNameLength, c.MaxLabelNameLength)
	set(&base.MaxLabelValueLength, c.MaxLabelValueLength)
	set(&base.MaxLineSize, c.MaxLineSize)
	set(&base.MaxSamplesPerQuery, c.MaxSamplesPerQuery)
	if c.MaxQueryLength != nil {
		base.MaxQueryLength = time.Duration(*c.MaxQueryLength)
	}
	return base
}

// limits is the file's limits; each override starts from the defaults.
func (c *tenantsConfig) limits() (api.LimitsConfig, error) {
	out := api.LimitsConfig{Defaults: c.Defaults.over(api.TenantLimits{})}
	if len(c.Overrides) > 0 {
		out.Overrides = map[string]api.TenantLimits{}
		for id, o := range c.Overrides {
			out.Overrides[id] = o.over(out.Defaults)
		}
	}
	if err := out.Validate(); err != nil {
		return api.LimitsConfig{}, fmt.Errorf("limits.tenants: %w", err)
	}
	return out, nil
}

func (c *tenantsConfig) apply(opts *app.Options) error {
	l, err := c.limits()
	if err != nil {
		return err
	}
	opts.TenantLimits = l
	return nil
}

// export sets every key from opts.
func (c *tenantsConfig) export(opts app.Options) {
	c.Defaults = exportTenantLimits(opts.TenantLimits.Defaults)
	c.Overrides = nil
	for _, id := range slices.Sorted(maps.Keys(opts.TenantLimits.Overrides)) {
		if c.Overrides == nil {
			c.Overrides = map[string]tenantLimitsConfig{}
		}
		c.Overrides[id] = exportTenantLimits(opts.TenantLimits.Overrides[id])
	}
}

func exportTenantLimits(t api.TenantLimits) tenantLimitsConfig {
	return tenantLimitsConfig{
		IngestionRate: ptr(t.IngestionRate), IngestionBurstSize: ptr(t.IngestionBurstSize),
		LogIngestionRateBytes: ptr(t.LogIngestionRateBytes), LogIngestionBurstSizeBytes: ptr(t.LogIngestionBurstSizeBytes),
		SpanIngestionRate: ptr(t.SpanIngestionRate), SpanIngestionBurstSize: ptr(t.SpanIngestionBurstSize),
		MaxLabelNamesPerSeries: ptr(t.MaxLabelNamesPerSeries), MaxSeriesPerQuery: ptr(t.MaxSeriesPerQuery),
		MaxQueryLength: ptr(duration(t.MaxQueryLength)), MaxConcurrentQueries: ptr(t.MaxConcurrentQueries),
		MaxActiveSeries: ptr(t.MaxActiveSeries), MaxSeriesPerMetric: ptr(t.MaxSeriesPerMetric),
		MaxLabelNameLength: ptr(t.MaxLabelNameLength), MaxLabelValueLength: ptr(t.MaxLabelValueLength),
		MaxLineSize: ptr(t.MaxLineSize), MaxSamplesPerQuery: ptr(t.MaxSamplesPerQuery),
	}
}

// tenantLimitsReload re-reads limits.tenants from the configuration file
// (none: no limits) for a reload.
func tenantLimitsReload(configFile string) func() (api.LimitsConfig, error) {
	return func() (api.LimitsConfig, error) {
		if configFile == "" {
			return api.LimitsConfig{}, nil
		}
		c, err := loadConfigFile(configFile)
		if err != nil {
			return api.LimitsConfig{}, err
		}
		return c.Limits.Tenants.limits()
	}
}

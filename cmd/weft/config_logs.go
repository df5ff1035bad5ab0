package main

import (
	"fmt"
	"time"

	"github.com/weftdb/weft/cmd/weft/internal/app"
)

// logLimits is limits.logs in the -config file: the Loki push and OTLP logs
// limits (ingest/loki.Options), named after Loki's limits_config keys where
// Loki has the same limit.
type logLimits struct {
	MaxLineSize                       *int      `yaml:"max_line_size"`
	MaxStructuredMetadataSize         *int      `yaml:"max_structured_metadata_size"`
	MaxStructuredMetadataEntriesCount *int      `yaml:"max_structured_metadata_entries_count"`
	MaxLabelNamesPerStream            *int      `yaml:"max_label_names_per_stream"`
	MaxLabelNameLength                *int      `yaml:"max_label_name_length"`
	MaxLabelValueLength               *int      `yaml:"max_label_value_length"`
	CreationGracePeriod               *duration `yaml:"creation_grace_period"`
	RejectOldSamples                  *bool     `yaml:"reject_old_samples"`
	RejectOldSamplesMaxAge            *duration `yaml:"reject_old_samples_max_age"`
	MaxPushBodyBytes                  *int64    `yaml:"max_push_body_bytes"`
}

// otlpLogsConfig is otlp_logs in the -config file.
type otlpLogsConfig struct {
	// IndexLabels replaces the list of resource attributes stored as
	// stream labels (besides workload-context keys and service.name).
	IndexLabels *[]string `yaml:"index_labels"`
}

// apply copies the log limits into opts; every value must be positive.
func (l *logLimits) apply(opts *app.Options) error {
	in := &opts.Loki.Ingest
	for _, f := range []struct {
		key string
		src *int
		dst *int
	}{
		{"max_line_size", l.MaxLineSize, &in.MaxLineSize},
		{"max_structured_metadata_size", l.MaxStructuredMetadataSize, &in.MaxStructuredMetadataSize},
		{"max_structured_metadata_entries_count", l.MaxStructuredMetadataEntriesCount, &in.MaxStructuredMetadataPairs},
		{"max_label_names_per_stream", l.MaxLabelNamesPerStream, &in.MaxLabelNamesPerStream},
		{"max_label_name_length", l.MaxLabelNameLength, &in.MaxLabelNameLength},
		{"max_label_value_length", l.MaxLabelValueLength, &in.MaxLabelValueLength},
	} {
		if f.src == nil {
			continue
		}
		if *f.src <= 0 {
			return fmt.Errorf("limits.logs.%s must be positive, got %d", f.key, *f.src)
		}
		*f.dst = *f.src
	}
	if l.CreationGracePeriod != nil {
		if *l.CreationGracePeriod <= 0 {
			return fmt.Errorf("limits.logs.creation_grace_period must be positive")
		}
		in.CreationGracePeriod = time.Duration(*l.CreationGracePeriod)
	}
	if l.RejectOldSamplesMaxAge != nil {
		if *l.RejectOldSamplesMaxAge <= 0 {
			return fmt.Errorf("limits.logs.reject_old_samples_max_age must be positive (reject_old_samples: false accepts every age)")
		}
		in.RejectOlderThan = time.Duration(*l.RejectOldSamplesMaxAge)
	}
	if l.RejectOldSamples != nil && !*l.RejectOldSamples {
		in.RejectOlderThan = -1 // ingest/loki: negative accepts any age
	}
	if l.MaxPushBodyBytes != nil {
		if *l.MaxPushBodyBytes <= 0 {
			return fmt.Errorf("limits.logs.max_push_body_bytes must be positive, got %d", *l.MaxPushBodyBytes)
		}
		opts.Loki.MaxPushBodySize = *l.MaxPushBodyBytes
	}
	return nil
}

func (c *otlpLogsConfig) apply(opts *app.Options) {
	if c.IndexLabels != nil {
		opts.OTLPLogIndexLabels = append([]string{}, *c.IndexLabels...) // non-nil: an empty list means none
	}
}

package otlp

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/otlptranslator"

	"github.com/weftdb/weft/ingest"
	"github.com/weftdb/weft/ingest/workload"
)

// The configuration keys of the label limits, named in rejection messages.
const (
	ConfigMaxLabelsPerSeries  = "limits.remote_write.max_labels_per_series"
	ConfigMaxLabelNameLength  = "limits.otlp.max_label_name_length"
	ConfigMaxLabelValueLength = "limits.otlp.max_label_value_length"
)

// Options configure an Ingester. The zero value is not useful; start from
// DefaultOptions. YAML tags give the shape under otlp: in the server's -config.
type Options struct {
	// TranslationStrategy selects metric and label name translation, as
	// Prometheus' otlp.translation_strategy: UnderscoreEscapingWithSuffixes
	// (default), UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes
	// or NoTranslation (UTF-8 names kept as sent).
	TranslationStrategy otlptranslator.TranslationStrategyOption
	// PromoteResourceAttributes are resource attributes put on every series
	// of the resource under their translated names, as in Prometheus.
	PromoteResourceAttributes []string
	// PromoteAllResourceAttributes promotes every resource attribute except
	// IgnoreResourceAttributes.
	PromoteAllResourceAttributes bool
	IgnoreResourceAttributes     []string
	// KeepIdentifyingResourceAttributes keeps service.name,
	// service.namespace and service.instance.id on target_info.
	KeepIdentifyingResourceAttributes bool
	// ConvertHistogramsToNHCB stores classic histograms as native histograms
	// with custom buckets instead of _bucket/_sum/_count series.
	ConvertHistogramsToNHCB bool
	// PromoteScopeMetadata adds otel_scope_name/version/schema_url and
	// otel_scope_<attr> labels.
	PromoteScopeMetadata bool
	// LookbackDelta is the PromQL lookback; target_info gets a sample every
	// LookbackDelta/2 over a resource's time range. Default 5m.
	LookbackDelta time.Duration

	// MaxTimeSpan bounds the time range of one resource's points in one
	// request: older points are rejected. It keeps target_info generation
	// (one sample per LookbackDelta/2 of the range) bounded. Default 24h.
	MaxTimeSpan time.Duration

	// MaxLabelsPerSeries rejects data points whose series would have more
	// labels (__name__, job, instance, promoted and scope labels included),
	// before conversion. weft shares remote write's limit
	// (ConfigMaxLabelsPerSeries). Default ingest.DefaultMaxLabelsPerSeries.
	MaxLabelsPerSeries int
	// MaxLabelNameLength and MaxLabelValueLength reject data points whose
	// series would have a longer label name or value (in bytes; __name__
	// counts with the longest suffix the converter adds). A resource whose
	// target_info breaks a limit loses all its points. Defaults
	// DefaultMaxLabelNameLength and DefaultMaxLabelValueLength.
	MaxLabelNameLength  int
	MaxLabelValueLength int

	// Workload maps resource attributes to canonical context labels.
	Workload workload.Options
	// Delta bounds the state kept to convert delta temporality to cumulative.
	Delta DeltaOptions

	// Logger receives per-request warnings; nil discards them.
	Logger *slog.Logger
}

// DeltaOptions bound the delta → cumulative state. Memory is about
// 200 bytes per number stream plus 8 bytes per histogram bucket, so the
// default cap of 1,000,000 streams holds a few hundred MiB at most.
type DeltaOptions struct {
	// MaxStreams caps the number of delta streams with state. When full, the
	// least recently updated stream is evicted; if it reports again it starts
	// a new cumulative series (a counter reset with a new start time).
	MaxStreams int
	// MaxIdle expires the state of a stream that has not reported for this
	// long (checked on every request with delta points, no goroutine).
	MaxIdle time.Duration
	// Now returns the current time for idle expiry; nil means time.Now.
	Now func() time.Time
}

// Tuning defaults, each documented in docs/otlp.md.
const (
	// DefaultMaxDeltaStreams bounds delta state memory (see DeltaOptions).
	DefaultMaxDeltaStreams = 1_000_000
	// DefaultDeltaMaxIdle matches the deltatocumulative processor's max_stale.
	DefaultDeltaMaxIdle = 5 * time.Minute
	// DefaultMaxTimeSpan allows a day of backlog per resource and request:
	// at most 577 target_info samples with the default lookback.
	DefaultMaxTimeSpan = 24 * time.Hour
	// DefaultMaxLabelNameLength is Loki's and Mimir's max_label_name_length:
	// real names are tens of bytes.
	DefaultMaxLabelNameLength = 1024
	// DefaultMaxLabelValueLength is 32 times Loki's and Mimir's 2048, because
	// target_info carries resource attributes such as process.command_line;
	// it still bounds one series' key.
	DefaultMaxLabelValueLength = 64 << 10
	// defaultLookbackDelta is PromQL's default lookback.
	defaultLookbackDelta = 5 * time.Minute
)

// DefaultOptions returns Prometheus' OTLP defaults plus weft's default
// workload-context mapping and delta bounds.
func DefaultOptions() Options {
	return Options{
		TranslationStrategy: otlptranslator.UnderscoreEscapingWithSuffixes,
		LookbackDelta:       defaultLookbackDelta,
		MaxTimeSpan:         DefaultMaxTimeSpan,
		MaxLabelsPerSeries:  ingest.DefaultMaxLabelsPerSeries,
		MaxLabelNameLength:  DefaultMaxLabelNameLength,
		MaxLabelValueLength: DefaultMaxLabelValueLength,
		Workload:            workload.DefaultOptions(),
		Delta: DeltaOptions{
			MaxStreams: DefaultMaxDeltaStreams,
			MaxIdle:    DefaultDeltaMaxIdle,
		},
	}
}

// withDefaults replaces zero or negative label limits by their defaults.
func (o Options) withDefaults() Options {
	if o.MaxLabelsPerSeries <= 0 {
		o.MaxLabelsPerSeries = ingest.DefaultMaxLabelsPerSeries
	}
	if o.MaxLabelNameLength <= 0 {
		o.MaxLabelNameLength = DefaultMaxLabelNameLength
	}
	if o.MaxLabelValueLength <= 0 {
		o.MaxLabelValueLength = DefaultMaxLabelValueLength
	}
	return o
}

func (o Options) validate() error {
	switch o.TranslationStrategy {
	case otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation:
	default:
		return fmt.Errorf("unknown translation strategy %q", o.TranslationStrategy)
	}
	if o.Delta.MaxStreams <= 0 {
		return fmt.Errorf("delta max_streams must be positive, got %d", o.Delta.MaxStreams)
	}
	if o.Delta.MaxIdle <= 0 {
		return fmt.Errorf("delta max_idle must be positive, got %s", o.Delta.MaxIdle)
	}
	if o.MaxTimeSpan <= 0 {
		return fmt.Errorf("max_time_span must be positive, got %s", o.MaxTimeSpan)
	}
	if o.LookbackDelta <= 0 {
		return fmt.Errorf("lookback_delta must be positive, got %s", o.LookbackDelta)
	}
	if o.PromoteAllResourceAttributes && len(o.PromoteResourceAttributes) > 0 {
		return fmt.Errorf("promote_all_resource_attributes and promote_resource_attributes are exclusive")
	}
	return nil
}

package loki

import (
	"time"

	"github.com/weftdb/weft/ingest/workload"
)

// Options configure an Ingester. Zero fields take the defaults of
// DefaultOptions.
type Options struct {
	// Workload adds to every stream the canonical workload-context labels
	// its aliases provide (workload.Mapping.AddCanonical). Nil adds none.
	Workload *workload.Mapping
	// MaxLineSize rejects longer lines (bytes). Default 256 KiB (Loki's
	// max_line_size).
	MaxLineSize int
	// MaxStructuredMetadataSize rejects entries whose structured metadata
	// names and values together are longer (bytes). Default 64 KiB (Loki's
	// max_structured_metadata_size).
	MaxStructuredMetadataSize int
	// MaxStructuredMetadataPairs rejects entries with more pairs. Default 128.
	MaxStructuredMetadataPairs int
	// MaxLabelNamesPerStream rejects streams with more labels, counting
	// service_name if discovered. Default 15 (Loki's max_label_names_per_series).
	MaxLabelNamesPerStream int
	// MaxLabelNameLength and MaxLabelValueLength bound label names and
	// values (bytes). Defaults 1024 and 2048 (Loki's).
	MaxLabelNameLength  int
	MaxLabelValueLength int
	// CreationGracePeriod rejects entries later than now + this. Default
	// 10 minutes (Loki's creation_grace_period).
	CreationGracePeriod time.Duration
	// RejectOlderThan rejects entries older than now - this. Default one
	// week (Loki's reject_old_samples_max_age); negative accepts any age.
	RejectOlderThan time.Duration
	// DiscoverServiceName lists the labels whose value becomes service_name
	// when a stream has none, first match wins. Default: Loki's list.
	DiscoverServiceName []string
	// DisableLevelDetection turns off detected_level.
	DisableLevelDetection bool
	// Now returns the current time; nil is time.Now.
	Now func() time.Time
}

// DefaultServiceNameLabels is Loki's discover_service_name default list.
var DefaultServiceNameLabels = []string{
	"service_name", "service", "app", "application", "name",
	"app_kubernetes_io_name", "container", "container_name",
	"k8s_container_name", "component", "workload", "job", "k8s_job_name",
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{
		MaxLineSize:                256 << 10,
		MaxStructuredMetadataSize:  64 << 10,
		MaxStructuredMetadataPairs: 128,
		MaxLabelNamesPerStream:     15,
		MaxLabelNameLength:         1024,
		MaxLabelValueLength:        2048,
		CreationGracePeriod:        10 * time.Minute,
		RejectOlderThan:            7 * 24 * time.Hour,
		DiscoverServiceName:        DefaultServiceNameLabels,
	}
}

// WithDefaults returns o with every zero field set to its default (Now to
// time.Now).
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	if o.MaxLineSize <= 0 {
		o.MaxLineSize = d.MaxLineSize
	}
	if o.MaxStructuredMetadataSize <= 0 {
		o.MaxStructuredMetadataSize = d.MaxStructuredMetadataSize
	}
	if o.MaxStructuredMetadataPairs <= 0 {
		o.MaxStructuredMetadataPairs = d.MaxStructuredMetadataPairs
	}
	if o.MaxLabelNamesPerStream <= 0 {
		o.MaxLabelNamesPerStream = d.MaxLabelNamesPerStream
	}
	if o.MaxLabelNameLength <= 0 {
		o.MaxLabelNameLength = d.MaxLabelNameLength
	}
	if o.MaxLabelValueLength <= 0 {
		o.MaxLabelValueLength = d.MaxLabelValueLength
	}
	if o.CreationGracePeriod <= 0 {
		o.CreationGracePeriod = d.CreationGracePeriod
	}
	if o.RejectOlderThan == 0 {
		o.RejectOlderThan = d.RejectOlderThan
	}
	if o.DiscoverServiceName == nil {
		o.DiscoverServiceName = d.DiscoverServiceName
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

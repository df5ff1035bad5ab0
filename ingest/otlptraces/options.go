package otlptraces

import (
	"github.com/weftdb/weft/ingest/otlplogs"
	"github.com/weftdb/weft/ingest/workload"
)

// Options configure an Ingester.
type Options struct {
	// Workload maps resource attributes to canonical context labels.
	// DefaultOptions sets workload.DefaultOptions(); empty Rules turn it off.
	Workload workload.Options
	// IndexLabels are the resource attributes (besides workload-context
	// aliases) that become stream labels under their normalized names.
	// Default: the OTLP logs path's (otlplogs.DefaultIndexLabels), so that a
	// trace resource and the log stream of the same resource have the same
	// labels; nil takes the default, an empty non-nil slice keeps only
	// service_name and the context labels.
	IndexLabels []string
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{Workload: workload.DefaultOptions(), IndexLabels: otlplogs.DefaultIndexLabels}
}

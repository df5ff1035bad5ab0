package otlplogs

import (
	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/workload"
)

// Options configure an Ingester.
type Options struct {
	// Loki holds the validation limits and level detection shared with the
	// Loki push path (loki.DefaultOptions). DiscoverServiceName is not used:
	// OTLP streams always carry service_name.
	Loki loki.Options
	// Workload maps resource attributes to canonical context labels.
	// DefaultOptions sets workload.DefaultOptions(); empty Rules turn it off.
	Workload workload.Options
	// IndexLabels are the resource attributes (besides workload-context
	// aliases) that become stream labels under their normalized names.
	// Default DefaultIndexLabels (Loki 3's
	// default_resource_attributes_as_index_labels); nil takes the default,
	// an empty non-nil slice keeps only service_name and context labels.
	IndexLabels []string
}

// DefaultIndexLabels is Loki 3's list of resource attributes stored as
// index labels by default.
var DefaultIndexLabels = []string{
	"service.name",
	"service.namespace",
	"service.instance.id",
	"deployment.environment",
	"deployment.environment.name",
	"cloud.region",
	"cloud.availability_zone",
	"k8s.cluster.name",
	"k8s.namespace.name",
	"k8s.pod.name",
	"k8s.container.name",
	"container.name",
	"k8s.replicaset.name",
	"k8s.deployment.name",
	"k8s.statefulset.name",
	"k8s.daemonset.name",
	"k8s.cronjob.name",
	"k8s.job.name",
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{
		Loki:        loki.DefaultOptions(),
		Workload:    workload.DefaultOptions(),
		IndexLabels: DefaultIndexLabels,
	}
}

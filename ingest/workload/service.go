package workload

// Service identity: one OTLP resource is one service, and every signal names
// it alike. Prometheus' OTLP translation gives metrics job =
// "<service.namespace>/<service.name>" (service.name alone without a
// namespace); the log and trace streams of the same resource carry the same
// job label beside their service_name, so {job="trainer", run_id="r77"}
// finds the run's metrics, logs and traces alike.

// JobLabel is the label that names a resource's service on every signal.
const JobLabel = "job"

// ServiceJob returns the job of a resource whose attributes lookup reads, as
// Prometheus' OTLP translation computes it for metrics; "" when the resource
// has no service.name.
func ServiceJob(lookup func(name string) (string, bool)) string {
	name, ok := lookup("service.name")
	if !ok || name == "" {
		return ""
	}
	if ns, ok := lookup("service.namespace"); ok && ns != "" {
		return ns + "/" + name
	}
	return name
}

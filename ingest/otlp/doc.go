// Package otlp turns OTLP metrics (pmetric.Metrics, already decoded by api/)
// into Prometheus-model samples appended to a storage.AppendableV2, the way
// Prometheus 3.x's OTLP receiver does it (it drives Prometheus'
// prometheusremotewrite converter), with three additions:
//
//   - validation up front, so that invalid data points are rejected one by
//     one and counted (OTLP partial success) instead of failing a request;
//   - the labels of every series built by weft in O(n log n) (labels.go;
//     the converter's merge is quadratic in a point's attributes) and held
//     to the label limits before the converter runs (series.go);
//   - delta temporality converted to cumulative with bounded per-stream state
//     (see [DeltaOptions]);
//   - workload-context labels (namespace, pod, model, run_id, gpu_uuid, ...)
//     resolved from resource attributes through ingest/workload and put on
//     every series of the resource, target_info included.
//
// An [Ingester] is safe for concurrent use; it owns no goroutines and needs
// no Close. Share one Ingester between the HTTP and gRPC receivers so that
// delta state is shared too.
package otlp

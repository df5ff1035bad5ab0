// Package spanmetrics derives metrics from spans at ingest and writes them
// into the metric store, under the names Grafana's Tempo datasource and its
// service-graph view query (those of Tempo's metrics-generator):
//
//   - traces_spanmetrics_calls_total and traces_spanmetrics_latency_bucket,
//     _sum, _count (seconds), labelled service, span_name, span_kind
//     (SPAN_KIND_SERVER, ...), status_code (STATUS_CODE_ERROR, ...) and the
//     workload-context labels of the span's resource (run_id, model, pod,
//     ...), each with a trace_id exemplar of a recent span;
//   - traces_service_graph_request_total, _request_failed_total and
//     _request_server_seconds / _request_client_seconds histograms,
//     labelled client and server (and connection_type="messaging_system"
//     for producer/consumer pairs), from client spans and the server spans
//     whose parent they are.
//
// A Processor counts in memory and writes every series each FlushInterval
// as cumulative counters at the flush time; counts restart at zero when
// weft restarts (rate() sees a counter reset). Its memory is bounded by
// Options.MaxSeries and Options.GraphMaxPending (see Processor).
package spanmetrics

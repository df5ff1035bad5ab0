package api

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftdb/weft/ingest"
	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/otlp"
	"github.com/weftdb/weft/ingest/otlplogs"
	"github.com/weftdb/weft/storage/logstore"
)

// Every ingest path counts what it stored and what it refused in two
// families shared by all paths, so that one query answers "what is being
// dropped, where and why":
//
//	weft_ingest_accepted_total{path, type}
//	weft_ingest_rejected_total{path, type, reason}
//
// path is remote_write, otlp_metrics, otlp_logs, loki_push or vm_import
// (HTTP and gRPC alike); type is float, histogram or exemplar (remote
// write, import), data_point (OTLP metrics) or log_line; reason is the
// path's own reason name (ingest.Reason, otlp.Reason*, loki.Reason), plus
// "unavailable" for what a retryable storage failure did not store. The
// remote-write receiver's older weft_remote_write_samples_* counters stay.
const (
	ingestPathRemoteWrite = "remote_write"
	ingestPathOTLPMetrics = "otlp_metrics"
	ingestPathOTLPLogs    = "otlp_logs"
	ingestPathLokiPush    = "loki_push"
	ingestPathVMImport    = "vm_import"

	ingestTypeFloat     = "float"
	ingestTypeHistogram = "histogram"
	ingestTypeExemplar  = "exemplar"
	ingestTypeDataPoint = "data_point"
	ingestTypeLogLine   = "log_line"

	// reasonUnavailable counts what a retryable failure did not store.
	reasonUnavailable = "unavailable"
)

// ingestCounters are the two shared families. Safe for concurrent use;
// with a nil registerer they count but are not exported.
type ingestCounters struct {
	accepted *prometheus.CounterVec
	rejected *prometheus.CounterVec
}

func newIngestCounters(reg prometheus.Registerer) *ingestCounters {
	c := &ingestCounters{
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_ingest_accepted_total",
			Help: "Items stored by the ingest paths, by path (remote_write, otlp_metrics, otlp_logs, loki_push, vm_import) and type (float, histogram, exemplar, data_point, log_line).",
		}, []string{"path", "type"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_ingest_rejected_total",
			Help: "Items the ingest paths refused or could not store, by path, type and reason.",
		}, []string{"path", "type", "reason"}),
	}
	if reg != nil {
		c.accepted = registerOrExisting(reg, c.accepted)
		c.rejected = registerOrExisting(reg, c.rejected)
	}
	return c
}

func (c *ingestCounters) accept(path, typ string, n int64) {
	if n > 0 {
		c.accepted.WithLabelValues(path, typ).Add(float64(n))
	}
}

func (c *ingestCounters) reject(path, typ, reason string, n int64) {
	if n > 0 {
		c.rejected.WithLabelValues(path, typ, reason).Add(float64(n))
	}
}

// observeRemoteWrite counts a remote-write (or import) result.
func (c *ingestCounters) observeRemoteWrite(path string, res *ingest.Result) {
	c.accept(path, ingestTypeFloat, int64(res.Samples))
	c.accept(path, ingestTypeHistogram, int64(res.Histograms))
	c.accept(path, ingestTypeExemplar, int64(res.Exemplars))
	for r, n := range res.Rejected {
		typ := ingestTypeFloat
		if ingest.Reason(r) == ingest.ReasonInvalidExemplar {
			typ = ingestTypeExemplar
		}
		c.reject(path, typ, ingest.Reason(r).String(), int64(n))
	}
}

// observeLogs counts a Loki push or OTLP logs outcome: accepted lines,
// rejections by reason, and lines lost to a retryable failure.
func (c *ingestCounters) observeLogs(path string, accepted int64, byReason *[loki.NumReasons]int64, unavailable int64) {
	c.accept(path, ingestTypeLogLine, accepted)
	if byReason != nil {
		for r, n := range byReason {
			c.reject(path, ingestTypeLogLine, loki.Reason(r).String(), n)
		}
	}
	c.reject(path, ingestTypeLogLine, reasonUnavailable, unavailable)
}

// observeOTLPMetrics counts an OTLP metrics export: on a retryable error
// nothing was stored.
func (c *ingestCounters) observeOTLPMetrics(res otlp.Result, err error) {
	if err != nil {
		c.reject(ingestPathOTLPMetrics, ingestTypeDataPoint, reasonUnavailable, res.DataPoints)
		return
	}
	c.accept(ingestPathOTLPMetrics, ingestTypeDataPoint, res.DataPoints-res.Rejected)
	for reason, n := range res.ByReason {
		c.reject(ingestPathOTLPMetrics, ingestTypeDataPoint, reason, n)
	}
}

// observeOTLPLogs counts an OTLP logs export of records records.
func (c *ingestCounters) observeOTLPLogs(records int64, res otlplogs.Result, err error) {
	switch {
	case err == nil, errors.Is(err, otlplogs.ErrAllRejected):
		c.observeLogs(ingestPathOTLPLogs, res.Accepted, &res.ByReason, 0)
	case errors.Is(err, logstore.ErrTooOld): // the store refused the push whole
		c.reject(ingestPathOTLPLogs, ingestTypeLogLine, loki.ReasonTooOld.String(), records)
	default:
		c.observeLogs(ingestPathOTLPLogs, 0, nil, records)
	}
}

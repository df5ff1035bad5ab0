package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftdb/weft/storage"
)

// statsSource is what the storage collector reads; *storage.DB provides it.
type statsSource interface {
	Stats() storage.DBStats
}

// storageCollector exports the store's counters as weft_* metrics at scrape
// time. Safe for concurrent use.
type storageCollector struct {
	src statsSource

	samplesIngested *prometheus.Desc
	samplesRejected *prometheus.Desc
	activeSeries    *prometheus.Desc
	seriesCreated   *prometheus.Desc
	headChunks      *prometheus.Desc
	pendingChunks   *prometheus.Desc
	walBytes        *prometheus.Desc
	walFsyncs       *prometheus.Desc
	compactions     *prometheus.Desc
	checkpoints     *prometheus.Desc
	minTime         *prometheus.Desc
	maxTime         *prometheus.Desc
}

func newStorageCollector(src statsSource) *storageCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &storageCollector{
		src:             src,
		samplesIngested: d("weft_samples_ingested_total", "Samples committed to storage."),
		samplesRejected: d("weft_samples_rejected_total", "Samples storage rejected, by reason.", "reason"),
		activeSeries:    d("weft_active_series", "Series in the head (in memory)."),
		seriesCreated:   d("weft_series_created_total", "Series created since start."),
		headChunks:      d("weft_head_chunks", "Open chunks in the head."),
		pendingChunks:   d("weft_head_pending_chunks", "Sealed chunks not yet written to Pebble."),
		walBytes:        d("weft_wal_bytes", "Bytes in live write-ahead log segments."),
		walFsyncs:       d("weft_wal_fsyncs_total", "Write-ahead log fsyncs."),
		compactions:     d("weft_compactions_total", "Compaction runs completed."),
		checkpoints:     d("weft_checkpoints_total", "WAL checkpoints written."),
		minTime:         d("weft_storage_min_time_seconds", "Oldest sample time in the store (Unix seconds)."),
		maxTime:         d("weft_storage_max_time_seconds", "Newest sample time in the store (Unix seconds)."),
	}
}

// Describe implements prometheus.Collector.
func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.samplesIngested, c.samplesRejected, c.activeSeries, c.seriesCreated,
		c.headChunks, c.pendingChunks, c.walBytes, c.walFsyncs, c.compactions, c.checkpoints, c.minTime, c.maxTime} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Stats()
	counter := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter(c.samplesIngested, float64(st.SamplesAppended))
	for reason, n := range st.SamplesRejected {
		counter(c.samplesRejected, float64(n), reason)
	}
	gauge(c.activeSeries, float64(st.ActiveSeries))
	counter(c.seriesCreated, float64(st.SeriesCreated))
	gauge(c.headChunks, float64(st.HeadChunks))
	gauge(c.pendingChunks, float64(st.PendingChunks))
	gauge(c.walBytes, float64(st.WALBytes))
	counter(c.walFsyncs, float64(st.WALFsyncs))
	counter(c.compactions, float64(st.CompactionsRun))
	counter(c.checkpoints, float64(st.CheckpointsWritten))
	if st.MaxTime >= st.MinTime {
		gauge(c.minTime, float64(st.MinTime)/1000)
		gauge(c.maxTime, float64(st.MaxTime)/1000)
	}
}

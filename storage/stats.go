package storage

import "sync/atomic"

// Reject reasons counted in DBStats.SamplesRejected.
const (
	RejectOutOfWindow   = "out_of_window"
	RejectDuplicate     = "duplicate"
	RejectTooFarFuture  = "too_far_in_future"
	RejectInvalidLabels = "invalid_labels"
	RejectOther         = "other"
)

var rejectReasons = []string{RejectOutOfWindow, RejectDuplicate, RejectTooFarFuture, RejectInvalidLabels, RejectOther}

type counters struct {
	appended    atomic.Uint64
	rejected    map[string]*atomic.Uint64
	seriesNew   atomic.Uint64
	compactions atomic.Uint64
	checkpoints atomic.Uint64
}

func (c *counters) init() {
	c.rejected = map[string]*atomic.Uint64{}
	for _, r := range rejectReasons {
		c.rejected[r] = new(atomic.Uint64)
	}
}

func (c *counters) reject(err error) {
	c.rejected[rejectReason(err)].Add(1)
}

// DBStats is a point-in-time view for the server's /metrics.
type DBStats struct {
	ActiveSeries       int               // series in the head
	HeadChunks         int64             // open chunks in the head
	PendingChunks      int64             // sealed chunks not yet written to Pebble
	WALBytes           int64             // bytes in live WAL segments
	WALFsyncs          uint64            // WAL fsyncs done (per group commit or per sync interval)
	SeriesCreated      uint64            // series created since Open
	SamplesAppended    uint64            // samples committed since Open
	SamplesRejected    map[string]uint64 // by reason (Reject* constants)
	CompactionsRun     uint64
	CheckpointsWritten uint64
	MinTime, MaxTime   int64
}

// Stats returns current counters. Safe for concurrent use.
func (db *DB) Stats() DBStats {
	st := DBStats{
		ActiveSeries:       db.series.len(),
		HeadChunks:         db.headChunks.Load(),
		PendingChunks:      db.sealedChunks.Load(),
		SeriesCreated:      db.stats.seriesNew.Load(),
		SamplesAppended:    db.stats.appended.Load(),
		SamplesRejected:    map[string]uint64{},
		CompactionsRun:     db.stats.compactions.Load(),
		CheckpointsWritten: db.stats.checkpoints.Load(),
		MinTime:            db.minT.Load(),
		MaxTime:            db.maxT.Load(),
	}
	if db.wal != nil {
		st.WALBytes = db.wal.Size()
		st.WALFsyncs = db.wal.Fsyncs()
	}
	for k, v := range db.stats.rejected {
		st.SamplesRejected[k] = v.Load()
	}
	return st
}

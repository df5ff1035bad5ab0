package storage

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/storage/internal/record"
	"github.com/weftdb/weft/storage/internal/wal"
)

func walFrame(rec []byte) []byte { return wal.AppendRecord(nil, rec) }

// commitBuffers are reused between commits to keep Commit allocation-free in
// the steady state.
type commitBuffers struct {
	rec, frame []byte
	hists      []record.Histogram
	exs        []record.Exemplar
	sealed     []*memSeries
}

var commitPool = sync.Pool{New: func() any { return &commitBuffers{} }}

// Commit logs the appended samples to the WAL, applies them to the head and
// returns once the WAL batch is fsynced (group commit: concurrent commits
// share one fsync). Samples that a concurrent commit made invalid since
// Append (duplicates, window) are dropped and counted in Stats.
func (a *appender) Commit() error {
	if a.done {
		return errAppenderDone
	}
	a.done = true
	defer a.release()
	db := a.db
	if db.closed.Load() {
		return ErrClosed
	}
	if len(a.samples)+len(a.exemplars)+len(a.metas) == 0 {
		return nil
	}
	if err := db.sub.Health(); err != nil {
		return err // nothing of the batch is logged or applied
	}
	cb := commitPool.Get().(*commitBuffers)
	defer commitPool.Put(cb)
	var frame []byte
	streamed := a.nHists == 0
	if streamed {
		// Append encoded the samples' record already (an all-float batch).
		frame = a.wbuf
		if len(a.samples) > 0 {
			frame = wal.EndRecord(frame, a.recStart)
		}
	} else {
		// Mixed batch: one record per run of equal type keeps the append
		// order for replay.
		frame = cb.frame[:0]
		for i := 0; i < len(a.samples); {
			vt := a.sampleOf(&a.samples[i]).valType()
			j := i
			for j < len(a.samples) && a.sampleOf(&a.samples[j]).valType() == vt {
				j++
			}
			run := a.samples[i:j]
			if vt == chunkenc.ValFloat {
				frame = a.appendFloatRecord(frame, run)
			} else {
				cb.hists = cb.hists[:0]
				for k := range run {
					x := a.sampleOf(&run[k])
					cb.hists = append(cb.hists, record.Histogram{ID: run[k].s.id, ST: x.st, T: x.t, H: x.h, FH: x.fh})
				}
				cb.rec = record.AppendHistograms(cb.rec[:0], cb.hists, vt == chunkenc.ValFloatHistogram)
				frame = wal.AppendRecord(frame, cb.rec)
			}
			i = j
		}
	}
	if len(a.exemplars) > 0 {
		cb.exs = cb.exs[:0]
		for _, p := range a.exemplars {
			cb.exs = append(cb.exs, record.Exemplar{ID: p.s.id, T: p.e.Ts, V: p.e.Value, HasTs: p.e.HasTs, Labels: p.e.Labels})
		}
		cb.rec = record.AppendExemplars(cb.rec[:0], cb.exs)
		frame = wal.AppendRecord(frame, cb.rec)
	}
	if len(a.metas) > 0 {
		var changed []record.Metadata
		for _, m := range a.metas {
			if db.meta.set(m.Metric, m.Meta) {
				changed = append(changed, m)
			}
		}
		if len(changed) > 0 {
			cb.rec = record.AppendMetadata(cb.rec[:0], changed)
			frame = wal.AppendRecord(frame, cb.rec)
		}
	}
	if streamed {
		a.wbuf = frame // keep a grown buffer with the pooled appender
	} else {
		cb.frame = frame
	}
	if len(frame) == 0 {
		return nil
	}
	mint, maxt := a.mint, a.maxt
	a.partLo, a.partHi = 0, 0 // empty range: no fast path
	if maxt != math.MinInt64 {
		p := db.partOf(maxt)
		a.partLo, a.partHi = p*db.partMs, (p+1)*db.partMs
	}

	db.commitMu.RLock()
	seq, err := db.wal.Log(frame)
	if err != nil {
		db.commitMu.RUnlock()
		return fmt.Errorf("log commit: %w", db.sub.noteWriteError(db.wal, err))
	}
	sealed, oooFull := a.apply(cb.sealed[:0])
	db.commitMu.RUnlock()
	cb.sealed = sealed
	if maxt != math.MinInt64 {
		db.observeTime(mint)
		db.observeTime(maxt)
	}

	if len(sealed) > 0 {
		db.enqueueSealed(sealed)
	}
	var werr error
	for _, s := range oooFull {
		werr = errors.Join(werr, db.flushOOO(s))
	}
	if err := db.wal.Sync(seq); err != nil {
		// The batch stays buffered in order and is written once the disk
		// has room: a retry of it is a duplicate that the head drops.
		return fmt.Errorf("sync wal: %w", db.sub.noteWriteError(db.wal, err))
	}
	if werr != nil {
		// The samples are durable in the WAL; the chunks will be written again
		// from the head at the next checkpoint or flush.
		db.log.Warn("write_sealed_chunks_failed", "err", werr)
	}
	return nil
}

// appendFloatRecord frames one compact float-samples WAL record for run
// (all float, non-empty) onto frame, encoding in place in a single pass.
func (a *appender) appendFloatRecord(frame []byte, run []pendingSample) []byte {
	frame, start := wal.BeginRecord(frame)
	frame = record.AppendCompactSamplesHeader(frame)
	var enc record.SampleEncoder
	for i := range run {
		p := &run[i]
		frame = enc.Append(frame, p.s.id, a.stOf(p), p.t, p.v)
	}
	return wal.EndRecord(frame, start)
}

// apply adds the appender's samples and exemplars to the head. It returns the
// series that sealed a chunk and those whose OOO buffer needs flushing.
func (a *appender) apply(sealed []*memSeries) ([]*memSeries, []*memSeries) {
	db := a.db
	var oooFull []*memSeries
	var applied uint64
	lo, hi, spc := a.partLo, a.partHi, db.opts.SamplesPerChunk
	for i := range a.samples {
		p := &a.samples[i]
		s := p.s
		st, float := int64(0), true
		if p.ext != 0 {
			e := &a.exts[p.ext-1]
			st, float = e.st, e.h == nil && e.fh == nil
		}
		s.mu.Lock()
		if float {
			if c := s.floatFastChunkLocked(p.t, lo, hi, spc); c != nil {
				c.Append(st, p.t, p.v)
				s.lastV = p.v
				s.lastT.Store(p.t)
				s.mu.Unlock()
				applied++
				continue
			}
		}
		x := a.sampleOf(p)
		err := db.checkLocked(s, x, false)
		if err == nil {
			var didSeal, ooo bool
			didSeal, ooo, err = db.appendLocked(s, x)
			if didSeal {
				sealed = append(sealed, s)
			}
			if ooo && len(s.ext.ooo) == oooFlushSamples {
				oooFull = append(oooFull, s)
			}
		}
		s.mu.Unlock()
		if err == nil {
			applied++
		} else if !errors.Is(err, errSameSample) {
			db.stats.reject(err)
		}
	}
	for _, p := range a.exemplars {
		p.s.mu.Lock()
		_ = db.addExemplarLocked(p.s, p.e)
		p.s.mu.Unlock()
	}
	db.stats.appended.Add(applied)
	return sealed, oooFull
}

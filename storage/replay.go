package storage

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/internal/record"
)

// replayBatch is how many series may hold sealed chunks during replay before
// they are written to Pebble, bounding replay memory.
const replayBatch = 4096

// replay rebuilds the head from the WAL checkpoint and segments. Samples are
// re-applied with replay semantics: no window check, duplicates skipped.
func (db *DB) replay(ctx context.Context) error {
	var (
		dec     record.Decoder
		out     record.Decoded
		sealed  []*memSeries
		records int
		unknown int
		// unrestored holds series records whose index restore waits for
		// the series' first sample, so the index marks the right partition.
		unrestored = map[uint64]labels.Labels{}
	)
	add := func(id uint64, x sample) {
		s := db.series.get(id)
		if s == nil {
			unknown++
			return
		}
		if ls, ok := unrestored[id]; ok {
			delete(unrestored, id)
			if err := db.idx.Restore(id, ls, x.t); err != nil {
				db.log.Warn("wal_series_restore_failed", "id", id, "err", err)
			}
		}
		s.mu.Lock()
		if db.checkLocked(s, x, true) == nil {
			if didSeal, _, err := db.appendLocked(s, x); err == nil && didSeal {
				sealed = append(sealed, s)
			}
		}
		s.mu.Unlock()
		db.observeTime(x.t)
	}
	err := db.wal.Replay(func(rec []byte) error {
		records++
		if records%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := dec.Decode(rec, &out); err != nil {
			return err
		}
		switch out.Type {
		case record.TypeSeries:
			for _, s := range out.Series {
				if _, known := db.idx.Labels(s.ID, nil); !known {
					unrestored[s.ID] = s.Labels.Copy()
				}
				db.series.getOrCreate(s.ID)
			}
		case record.TypeSamples, record.TypeSamplesCompact:
			for _, x := range out.Samples {
				add(x.ID, sample{st: x.ST, t: x.T, v: x.V})
			}
		case record.TypeHistograms, record.TypeFloatHistograms:
			for _, x := range out.Histograms {
				add(x.ID, sample{st: x.ST, t: x.T, h: x.H, fh: x.FH})
			}
		case record.TypeExemplars:
			for _, e := range out.Exemplars {
				if s := db.series.get(e.ID); s != nil {
					s.mu.Lock()
					_ = db.addExemplarLocked(s, exemplarOf(e))
					s.mu.Unlock()
				}
			}
		case record.TypeMetadata:
			for _, m := range out.Metadata {
				db.meta.set(m.Metric, m.Meta)
			}
		case record.TypeTombstones:
			for _, t := range out.Tombstones {
				db.tombs.add(t.ID, interval{t.Mint, t.Maxt})
			}
		}
		if len(sealed) >= replayBatch {
			if err := db.writePending(sealed); err != nil {
				return err
			}
			sealed = sealed[:0]
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Series without samples in the WAL: their data is in Pebble (or they
	// never got any); register them at the newest time known.
	for id, ls := range unrestored {
		t := db.maxT.Load()
		if t == minInt64 {
			t = 0
		}
		if err := db.idx.Restore(id, ls, t); err != nil {
			return fmt.Errorf("restore series %d: %w", id, err)
		}
	}
	if unknown > 0 {
		db.log.Warn("wal_samples_for_unknown_series", "count", unknown)
	}
	return db.writePending(sealed)
}

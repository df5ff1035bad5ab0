package storage

import (
	"context"
	"fmt"

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
	)
	add := func(id uint64, x sample) {
		s := db.series.get(id)
		if s == nil {
			unknown++
			return
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
				if err := db.idx.Restore(s.ID, s.Labels, minInt64); err != nil {
					return fmt.Errorf("restore series %d: %w", s.ID, err)
				}
				db.series.getOrCreate(s.ID)
			}
		case record.TypeSamples:
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
	if unknown > 0 {
		db.log.Warn("wal_samples_for_unknown_series", "count", unknown)
	}
	return db.writePending(sealed)
}

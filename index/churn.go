package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// Churn: how many streams a selector gained and lost over time. IDs are
// allocated in increasing order and never reused, so the first ID
// allocated in each wall-clock hour (an hour mark) turns "created in hour
// h" into the ID range [mark(h), mark(next hour with a mark)), and
// counting the streams a selector created per hour into two rank queries
// on its postings bitmap: no per-stream timestamps, nothing per sample.
// Hour marks are kept in memory and written with Persist (one key per
// hour); streams created before the first mark (before this version, or
// replayed from a write-ahead log whose hour was not persisted yet) count
// in the hour of the mark below them (an index whose first mark is of its
// first ID knows that nothing came before).

// hourMs is an hour in milliseconds.
const hourMs = int64(time.Hour / time.Millisecond)

// hourMark is the first ID allocated in an hour (unix hours).
type hourMark struct {
	hour  int64
	first ID
}

// hourMarks is the index's table of hour marks, ascending by hour.
type hourMarks struct {
	// lastHour and lastFirst are the newest mark, for creators that need
	// not lock: every stream created after the first of its hour.
	lastHour  atomic.Int64
	lastFirst atomic.Uint64

	mu      sync.Mutex
	marks   []hourMark
	written int // marks[:written] are durable
}

// noteCreated records that id was just allocated.
func (ix *Index) noteCreated(id ID) {
	h := ix.opts.Now().UnixMilli() / hourMs
	m := &ix.hours
	if h == m.lastHour.Load() && uint64(id) > m.lastFirst.Load() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	defer func() {
		last := m.marks[len(m.marks)-1]
		m.lastHour.Store(last.hour)
		m.lastFirst.Store(uint64(last.first))
	}()
	n := len(m.marks)
	switch {
	case n == 0 || h > m.marks[n-1].hour:
		m.marks = append(m.marks, hourMark{hour: h, first: id})
	case h == m.marks[n-1].hour && id < m.marks[n-1].first:
		// A concurrent creator got a lower ID of the same hour (the newest
		// mark is written again by every Persist).
		m.marks[n-1].first = id
	}
}

// appendHourMarks adds the marks not yet durable to b and returns how many
// marks are durable once b commits.
func (ix *Index) appendHourMarks(b *pebble.Batch) (int, error) {
	m := &ix.hours
	m.mu.Lock()
	defer m.mu.Unlock()
	// The newest mark may still be lowered by a racing creator; it is
	// written now and again next time.
	from := max(m.written-1, 0)
	for _, hm := range m.marks[from:] {
		if err := b.Set(appendHourKey(nil, hm.hour), binary.BigEndian.AppendUint64(nil, uint64(hm.first)), nil); err != nil {
			return 0, fmt.Errorf("batch hour mark: %w", err)
		}
	}
	return len(m.marks), nil
}

// markWritten records that the first n marks are durable.
func (ix *Index) markWritten(n int) {
	ix.hours.mu.Lock()
	ix.hours.written = max(ix.hours.written, n)
	ix.hours.mu.Unlock()
}

// loadHourMarks reads the durable hour marks.
func (ix *Index) loadHourMarks() error {
	lo := []byte{keyspaceIndex, tagHour}
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: []byte{keyspaceIndex, tagHour + 1}})
	if err != nil {
		return fmt.Errorf("read hour marks: %w", err)
	}
	defer it.Close()
	var marks []hourMark
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != 10 || len(v) != 8 {
			return fmt.Errorf("read hour marks: key %x: %w", k, ErrCorrupt)
		}
		marks = append(marks, hourMark{hour: decodePart(binary.BigEndian.Uint64(k[2:])), first: ID(binary.BigEndian.Uint64(v))})
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("read hour marks: %w", err)
	}
	ix.hours.marks, ix.hours.written = marks, len(marks)
	ix.hours.lastHour.Store(math.MinInt64) // no mark: the first creator locks
	if n := len(marks); n > 0 {
		ix.hours.lastHour.Store(marks[n-1].hour)
		ix.hours.lastFirst.Store(uint64(marks[n-1].first))
	}
	return nil
}

// appendHourKey appends the key of hour h's mark.
func appendHourKey(dst []byte, h int64) []byte {
	dst = append(dst, keyspaceIndex, tagHour)
	return binary.BigEndian.AppendUint64(dst, encodePart(h))
}

// Churn is how a selector's streams came and went over a time range.
type Churn struct {
	// Hours are the wall-clock hours of the range, oldest first, with the
	// streams created in each. Hours before the index's first hour mark
	// are left out where streams older than the marks exist: when those
	// were created is not known.
	Hours []HourChurn
	// Partitions are the postings partitions overlapping the range, oldest
	// first: the streams active in each, how many of them were created in
	// it, and how many are in no later partition (ended, as far as the
	// index knows; the newest partition has no ended count).
	Partitions []PartitionChurn
}

// HourChurn is one hour of Churn.
type HourChurn struct {
	Start   int64 // unix milliseconds
	Created uint64
}

// PartitionChurn is one partition of Churn.
type PartitionChurn struct {
	Start, End   int64 // unix milliseconds, End exclusive
	Active       uint64
	Created      uint64
	Ended        uint64
	EndedKnown   bool // false for the newest partition
	CreatedKnown bool // false when the partition began before the first hour mark
}

// ErrChurnRange is returned for a range Churn does not answer.
var ErrChurnRange = errors.New("churn range")

// maxChurnHours bounds the hours one Churn call answers (a quarter).
const maxChurnHours = 92 * 24

// Churn answers for the streams of kind that match any of sets (every
// stream when sets is empty) in [mint, maxt] (unix milliseconds,
// inclusive). A ctx restricted to tenants sees only their streams.
func (ix *Index) Churn(ctx context.Context, kind Kind, mint, maxt int64, sets ...[]*labels.Matcher) (Churn, error) {
	if ix.closed.Load() {
		return Churn{}, ErrClosed
	}
	if maxt < mint || (maxt-mint)/hourMs > maxChurnHours {
		return Churn{}, fmt.Errorf("%w: [%d, %d] is empty or longer than %d hours", ErrChurnRange, mint, maxt, maxChurnHours)
	}
	sel := func(lo, hi int64) (*roaring64.Bitmap, error) {
		if len(sets) == 0 {
			return ix.Postings(ctx, kind, lo, hi)
		}
		var res *roaring64.Bitmap
		for _, ms := range sets {
			bm, err := ix.Postings(ctx, kind, lo, hi, ms...)
			if err != nil {
				return nil, err
			}
			if res == nil {
				res = bm
			} else {
				res.Or(bm)
			}
		}
		return res, nil
	}
	ix.hours.mu.Lock()
	marks := slices.Clone(ix.hours.marks)
	ix.hours.mu.Unlock()
	next := ix.NextID()
	// created counts the IDs of bm in [first(h), first of the next mark).
	byHour := func(m hourMark, h int64) int { return cmpInt64(m.hour, h) }
	created := func(bm *roaring64.Bitmap, fromHour, toHour int64) (uint64, bool) {
		// Before the first mark nothing is known, unless that mark is of
		// the first ID ever allocated.
		if len(marks) == 0 || fromHour < marks[0].hour && marks[0].first > 1 {
			return 0, false
		}
		i, _ := slices.BinarySearchFunc(marks, fromHour, byHour)
		j, _ := slices.BinarySearchFunc(marks, toHour, byHour)
		if i == j {
			return 0, true // nothing allocated in these hours
		}
		lo, hi := marks[i].first, next
		if j < len(marks) {
			hi = marks[j].first
		}
		return rankBetween(bm, lo, hi), true
	}

	var out Churn
	all, err := sel(mint, maxt)
	if err != nil {
		return Churn{}, err
	}
	for h := mint / hourMs; h <= maxt/hourMs; h++ {
		if n, ok := created(all, h, h+1); ok {
			out.Hours = append(out.Hours, HourChurn{Start: h * hourMs, Created: n})
		}
	}
	// Every partition from the range's first to the newest: a stream has
	// ended in p when no later partition has it, within the range or not.
	ps, err := ix.partitionsIn(mint, maxInt64)
	if err != nil {
		return Churn{}, fmt.Errorf("churn: %w", err)
	}
	bms := make([]*roaring64.Bitmap, len(ps))
	for k, p := range ps {
		start := p.num * ix.partMs
		if bms[k], err = sel(start, start+ix.partMs-1); err != nil {
			return Churn{}, err
		}
	}
	later := roaring64.New() // the union of the partitions after k
	for k := len(ps) - 1; k >= 0; k-- {
		start := ps[k].num * ix.partMs
		if start <= maxt {
			bm := bms[k]
			pc := PartitionChurn{Start: start, End: start + ix.partMs, Active: bm.GetCardinality()}
			pc.Created, pc.CreatedKnown = created(bm, start/hourMs, (start+ix.partMs)/hourMs)
			if k+1 < len(ps) {
				pc.Ended, pc.EndedKnown = roaring64.AndNot(bm, later).GetCardinality(), true
			}
			out.Partitions = append(out.Partitions, pc)
		}
		later.Or(bms[k])
	}
	slices.Reverse(out.Partitions)
	return out, nil
}

// maxInt64 is the end of time.
const maxInt64 = int64(^uint64(0) >> 1)

// rankBetween counts bm's members in [lo, hi).
func rankBetween(bm *roaring64.Bitmap, lo, hi ID) uint64 {
	if hi <= lo {
		return 0
	}
	n := bm.Rank(uint64(hi - 1))
	if lo > 0 {
		n -= bm.Rank(uint64(lo - 1))
	}
	return n
}

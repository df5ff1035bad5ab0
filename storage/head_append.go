package storage

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	wchunkenc "github.com/weftdb/weft/storage/chunkenc"
)

// errSameSample marks an idempotent duplicate: accepted, nothing to store.
var errSameSample = errors.New("same sample")

// chunkEncoding is the head encoding for a value type: XOR2 for floats and
// the ST-capable histogram chunks, so start timestamps are kept per sample.
func chunkEncoding(vt chunkenc.ValueType) chunkenc.Encoding {
	return vt.ChunkEncoding(true, true)
}

// headChunkInitialBytes is the first buffer of a head float chunk. Prometheus
// allocates 128 bytes; a series sampled every 15-30 s fills about 64 in its
// first ten minutes, and with a million series (most of them short-lived in
// a cluster with run churn) the difference is tens of megabytes. 48 is the
// smallest XOR2Writer takes (header and room for one worst-case sample).
// The buffer then doubles. Head chunks do not use XOR2Writer's estimate of
// the full chunk's size: a chunk is cut at SamplesPerChunk samples, an hour
// at 30 s, and sizing every open chunk for its full hour from its fourth
// sample on cost weft-bench medium 150 bytes per active series of resident
// memory (845-890 -> 1040 B), where doubling keeps an open chunk's buffer
// within twice its bytes for a reallocation or two more per chunk.
const headChunkInitialBytes = 48

// newHeadChunk returns an empty open chunk for value type vt. A float
// chunk is s.fc, reinitialised with a new buffer that grows by doubling.
func (s *memSeries) newHeadChunk(vt chunkenc.ValueType) (chunkenc.Chunk, error) {
	if vt == chunkenc.ValFloat {
		c := &s.fc
		c.Init(headChunkInitialBytes)
		return c, nil
	}
	return chunkenc.NewEmptyChunk(chunkEncoding(vt))
}

// headFloatChunk is the head's open float chunk: Prometheus XOR2 bytes
// (EncXOR2, read with Prometheus' iterator, sealed and stored as such)
// written by weft's XOR2Writer, which produces the same bytes as Prometheus'
// appender at a fraction of its per-sample cost. It is its own Appender.
// Guarded by the owning series' mu like the rest of memSeries.
type headFloatChunk struct {
	wchunkenc.XOR2Writer
}

var (
	_ chunkenc.Chunk    = (*headFloatChunk)(nil)
	_ chunkenc.Appender = (*headFloatChunk)(nil)
)

func (*headFloatChunk) Encoding() chunkenc.Encoding { return chunkenc.EncXOR2 }

func (c *headFloatChunk) Appender() (chunkenc.Appender, error) { return c, nil }

func (c *headFloatChunk) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	pc, _ := chunkenc.FromData(chunkenc.EncXOR2, c.Bytes())
	return pc.Iterator(it)
}

// Reset replaces the chunk with the XOR2 chunk stream, re-encoding its
// samples (the writer's output for them is the same bytes).
func (c *headFloatChunk) Reset(stream []byte) {
	c.Init(len(stream) + headChunkInitialBytes)
	pc, _ := chunkenc.FromData(chunkenc.EncXOR2, stream)
	it := pc.Iterator(nil)
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		c.Append(it.AtST(), t, v)
	}
}

func (*headFloatChunk) AppendHistogram(chunkenc.Appender, int64, int64, *histogram.Histogram, bool) (chunkenc.Chunk, bool, chunkenc.Appender, error) {
	panic("appended a histogram sample to a float chunk")
}

func (*headFloatChunk) AppendFloatHistogram(chunkenc.Appender, int64, int64, *histogram.FloatHistogram, bool) (chunkenc.Chunk, bool, chunkenc.Appender, error) {
	panic("appended a float histogram sample to a float chunk")
}

func encValType(e chunkenc.Encoding) chunkenc.ValueType {
	switch e {
	case chunkenc.EncHistogram, chunkenc.EncHistogramST:
		return chunkenc.ValHistogram
	case chunkenc.EncFloatHistogram, chunkenc.EncFloatHistogramST:
		return chunkenc.ValFloatHistogram
	default:
		return chunkenc.ValFloat
	}
}

func sameFloat(a, b float64) bool {
	if math.Float64bits(a) == math.Float64bits(b) {
		return true
	}
	return math.IsNaN(a) && math.IsNaN(b) && value.IsStaleNaN(a) == value.IsStaleNaN(b)
}

func sameSample(a, b sample) bool {
	switch {
	case a.fh != nil || b.fh != nil:
		return a.fh != nil && b.fh != nil && a.fh.Equals(b.fh)
	case a.h != nil || b.h != nil:
		return a.h != nil && b.h != nil && a.h.Equals(b.h)
	default:
		return sameFloat(a.v, b.v)
	}
}

// partOf returns the partition of timestamp t.
func (db *DB) partOf(t int64) int64 {
	p := t / db.partMs
	if t < 0 && t%db.partMs != 0 {
		p--
	}
	return p
}

// checkLocked validates sample x against the series' committed state without
// changing it: nil (in order or accepted out of order), errSameSample,
// ErrDuplicateSample or ErrOutOfWindow.
func (db *DB) checkLocked(s *memSeries, x sample, replay bool) error {
	if s.lastT.Load() == math.MinInt64 || x.t > s.lastT.Load() {
		return nil
	}
	if x.t == s.lastT.Load() {
		last := sample{t: s.lastT.Load(), v: s.lastV}
		if s.ext != nil {
			last.h, last.fh = s.ext.lastH, s.ext.lastFH
		}
		if sameSample(last, x) {
			return errSameSample
		}
		if replay {
			return errSameSample
		}
		return ErrDuplicateSample
	}
	if !replay && x.t < s.lastT.Load()-db.oooWindow {
		return ErrOutOfWindow
	}
	if replay {
		// Replay re-applies what was accepted once; the merge at query and
		// flush time drops exact repeats.
		return nil
	}
	old, ok := s.lookupLocked(x.t)
	if !ok && (s.chunk == nil || x.t < s.cmint) {
		old, ok = db.lookupPebble(s.id, x.t)
	}
	if ok {
		if sameSample(old, x) {
			return errSameSample
		}
		return ErrDuplicateSample
	}
	return nil
}

// lookupPebble finds the stored sample of series id at t, if any. Only the
// out-of-order path uses it (a point read of one partition).
func (db *DB) lookupPebble(id uint64, t int64) (sample, bool) {
	r, err := db.newChunkReader()
	if err != nil {
		return sample{}, false
	}
	defer r.Close()
	chunks, err := r.read(id, t, t, []int64{db.partOf(t)}, nil)
	if err != nil {
		return sample{}, false
	}
	for _, c := range chunks {
		if t < c.mint || t > c.maxt {
			continue
		}
		for _, x := range chunkSamples(c.enc, c.data, nil) {
			if x.t == t {
				return x, true
			}
		}
	}
	return sample{}, false
}

// lookupLocked finds the head sample at t (open chunk, pending chunks, OOO buffer).
func (s *memSeries) lookupLocked(t int64) (sample, bool) {
	if s.ext != nil {
		o := s.ext.ooo
		i := sort.Search(len(o), func(i int) bool { return o[i].t >= t })
		if i < len(o) && o[i].t == t {
			return o[i], true
		}
		for _, pc := range s.ext.pending {
			if t >= pc.mint && t <= pc.maxt {
				if x, ok := findInChunk(pc.enc, pc.data, t); ok {
					return x, true
				}
			}
		}
	}
	if s.chunk != nil && t >= s.cmint {
		return findInChunk(s.chunk.Encoding(), s.chunk.Bytes(), t)
	}
	return sample{}, false
}

func findInChunk(enc chunkenc.Encoding, data []byte, t int64) (sample, bool) {
	c, err := chunkenc.FromData(enc, data)
	if err != nil {
		return sample{}, false
	}
	it := c.Iterator(nil)
	if it.Seek(t) == chunkenc.ValNone || it.AtT() != t {
		return sample{}, false
	}
	return atSample(it, it.Seek(t)), true
}

// atSample copies the iterator's current sample.
func atSample(it chunkenc.Iterator, vt chunkenc.ValueType) sample {
	x := sample{t: it.AtT(), st: it.AtST()}
	switch vt {
	case chunkenc.ValFloat:
		_, x.v = it.At()
	case chunkenc.ValHistogram:
		_, x.h = it.AtHistogram(nil)
	case chunkenc.ValFloatHistogram:
		_, x.fh = it.AtFloatHistogram(nil)
	}
	return x
}

// appendLocked adds a validated sample to the head. It returns whether a
// chunk was sealed (the caller then writes pending chunks to Pebble) and
// whether the sample went to the out-of-order buffer.
func (db *DB) appendLocked(s *memSeries, x sample) (sealed, ooo bool, err error) {
	if s.lastT.Load() != math.MinInt64 && x.t <= s.lastT.Load() {
		e := s.extOrNew()
		i := sort.Search(len(e.ooo), func(i int) bool { return e.ooo[i].t >= x.t })
		if i < len(e.ooo) && e.ooo[i].t == x.t {
			e.ooo[i] = x
		} else {
			e.ooo = append(e.ooo, sample{})
			copy(e.ooo[i+1:], e.ooo[i:])
			e.ooo[i] = x
		}
		if db.partOf(x.t) != db.partOf(s.lastT.Load()) {
			db.idx.Touch(s.id, x.t)
		}
		return false, true, nil
	}
	vt := x.valType()
	// The previous chunk's appender lets a new histogram chunk compute its
	// counter-reset header from the last sample, as Prometheus' head does.
	prevApp := s.appender()
	if s.chunk != nil && db.mustCut(s, vt, x.t) {
		db.sealLocked(s)
		sealed = true
	}
	if s.lastT.Load() == math.MinInt64 || db.partOf(x.t) != db.partOf(s.lastT.Load()) {
		db.idx.Touch(s.id, x.t)
	}
	if s.chunk == nil {
		c, err := s.newHeadChunk(vt)
		if err != nil {
			return sealed, false, fmt.Errorf("new chunk: %w", err)
		}
		if c != chunkenc.Chunk(&s.fc) {
			app, err := c.Appender()
			if err != nil {
				return sealed, false, fmt.Errorf("chunk appender: %w", err)
			}
			s.extOrNew().happ = app
		}
		s.chunk, s.cmint = c, x.t
		db.headChunks.Add(1)
	}
	app := s.appender()
	switch vt {
	case chunkenc.ValFloat:
		app.Append(x.st, x.t, x.v)
		s.lastV = x.v
		if s.ext != nil {
			s.ext.lastH, s.ext.lastFH = nil, nil
		}
	case chunkenc.ValHistogram, chunkenc.ValFloatHistogram:
		var (
			c       chunkenc.Chunk
			recoded bool
			newApp  chunkenc.Appender
			herr    error
		)
		var prev chunkenc.Appender
		if s.chunk.NumSamples() == 0 && prevApp != app {
			prev = prevApp
		}
		if vt == chunkenc.ValHistogram {
			c, recoded, newApp, herr = app.AppendHistogram(prev, x.st, x.t, x.h, false)
		} else {
			c, recoded, newApp, herr = app.AppendFloatHistogram(prev, x.st, x.t, x.fh, false)
		}
		if herr != nil {
			return sealed, false, fmt.Errorf("append histogram: %w", herr)
		}
		if c != nil {
			if recoded {
				s.chunk = c
			} else {
				// The sample did not fit (counter reset, layout change): the
				// old chunk is complete, c holds just the new sample.
				db.sealLocked(s)
				sealed = true
				s.chunk, s.cmint = c, x.t
				db.headChunks.Add(1)
			}
		}
		e := s.extOrNew()
		e.happ = newApp
		e.lastH, e.lastFH = x.h, x.fh
		s.lastV = 0
	}
	s.lastT.Store(x.t)
	return sealed, false, nil
}

// floatFastChunkLocked returns the series' open float chunk when the float
// sample at t is the common case: in order, following a float sample, in
// the same partition [lo, hi) as the chunk's first sample, into a chunk that
// needs no cut (spc: Options.SamplesPerChunk). Appending to it (and setting
// lastV and lastT) is then all there is to do; nil means the general path
// (checkLocked, appendLocked) must decide.
//
// This is the per-sample cost of every scrape and remote-write batch, so it
// avoids what the general path re-derives per sample: four partition
// divisions (the caller computed lo and hi once per commit), the
// duplicate/window checks (an in-order sample passes them by definition) and
// the histogram bookkeeping. It is small enough to inline into Commit's loop.
func (s *memSeries) floatFastChunkLocked(t, lo, hi int64, spc int) *headFloatChunk {
	c, ok := s.chunk.(*headFloatChunk)
	// lo <= cmint <= lastT < t < hi: one partition, no Touch, no cut for it.
	if !ok || s.cmint < lo || t >= hi || t <= s.lastT.Load() {
		return nil
	}
	if s.ext != nil && (s.ext.lastH != nil || s.ext.lastFH != nil) {
		return nil
	}
	if c.NumSamples() >= spc || c.Size() >= chunkenc.MaxBytesPerXORChunkBeforeAppend {
		return nil
	}
	return c
}

func (db *DB) mustCut(s *memSeries, vt chunkenc.ValueType, t int64) bool {
	if encValType(s.chunk.Encoding()) != vt {
		return true
	}
	if db.partOf(t) != db.partOf(s.cmint) {
		return true
	}
	n := s.chunk.NumSamples()
	if n >= db.opts.SamplesPerChunk {
		return true
	}
	if vt == chunkenc.ValFloat {
		return len(s.chunk.Bytes()) >= chunkenc.MaxBytesPerXORChunkBeforeAppend
	}
	return n >= chunkenc.MinSamplesPerHistogramChunk && len(s.chunk.Bytes()) >= chunkenc.TargetBytesPerHistogramChunk
}

// sealLocked closes the open chunk into ext.pending, merging in buffered
// out-of-order samples that fall inside its range.
func (db *DB) sealLocked(s *memSeries) {
	if s.chunk == nil {
		return
	}
	s.chunk.Compact()
	sc := &sealedChunk{mint: s.cmint, maxt: s.lastT.Load(), enc: s.chunk.Encoding(), n: s.chunk.NumSamples(), data: s.chunk.Bytes()}
	s.chunk = nil
	s.fc = headFloatChunk{} // sc owns the buffer now
	db.headChunks.Add(-1)
	e := s.extOrNew()
	e.happ = nil
	out := []*sealedChunk{sc}
	if k := sort.Search(len(e.ooo), func(i int) bool { return e.ooo[i].t >= sc.mint }); k < len(e.ooo) {
		merged := mergeSamples(chunkSamples(sc.enc, sc.data, nil), e.ooo[k:])
		e.ooo = e.ooo[:k]
		out = db.encodeSamples(merged, db.opts.SamplesPerChunk)
	}
	e.pending = append(e.pending, out...)
	db.sealedChunks.Add(int64(len(out)))
}

// chunkSamples decodes all samples of a chunk, appending to dst.
func chunkSamples(enc chunkenc.Encoding, data []byte, dst []sample) []sample {
	if enc == encColumnar {
		var it colIterator
		it.load(data)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			dst = append(dst, atSample(&it, vt))
		}
		return dst
	}
	c, err := chunkenc.FromData(enc, data)
	if err != nil {
		return dst
	}
	it := c.Iterator(nil)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		dst = append(dst, atSample(it, vt))
	}
	return dst
}

// mergeSamples merges two sorted sample lists; on equal timestamps b wins.
func mergeSamples(a, b []sample) []sample {
	out := make([]sample, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i].t < b[j].t):
			out = append(out, a[i])
			i++
		case i >= len(a) || b[j].t < a[i].t:
			out = append(out, b[j])
			j++
		default:
			out = append(out, b[j])
			i++
			j++
		}
	}
	return out
}

// encodeSamples encodes sorted samples into chunks of at most perChunk
// samples, cutting on value type and partition changes.
func (db *DB) encodeSamples(ss []sample, perChunk int) []*sealedChunk {
	var (
		out []*sealedChunk
		c   chunkenc.Chunk
		app chunkenc.Appender
		cur *sealedChunk
	)
	finish := func() {
		if c != nil {
			c.Compact()
			cur.enc, cur.n, cur.data = c.Encoding(), c.NumSamples(), c.Bytes()
			out = append(out, cur)
			c = nil
		}
	}
	for _, x := range ss {
		vt := x.valType()
		if c != nil && (encValType(c.Encoding()) != vt || c.NumSamples() >= perChunk || db.partOf(x.t) != db.partOf(cur.mint) ||
			(perChunk <= db.opts.SamplesPerChunk && vt == chunkenc.ValFloat && len(c.Bytes()) >= chunkenc.MaxBytesPerXORChunkBeforeAppend)) {
			finish()
		}
		var prev chunkenc.Appender
		if c == nil {
			prev = app
			c, _ = chunkenc.NewEmptyChunk(chunkEncoding(vt))
			app, _ = c.Appender()
			cur = &sealedChunk{mint: x.t}
		}
		switch vt {
		case chunkenc.ValFloat:
			app.Append(x.st, x.t, x.v)
		case chunkenc.ValHistogram, chunkenc.ValFloatHistogram:
			var nc chunkenc.Chunk
			var recoded bool
			var err error
			if vt == chunkenc.ValHistogram {
				nc, recoded, app, err = app.AppendHistogram(prev, x.st, x.t, x.h, false)
			} else {
				nc, recoded, app, err = app.AppendFloatHistogram(prev, x.st, x.t, x.fh, false)
			}
			if err != nil {
				continue
			}
			if nc != nil {
				if recoded {
					c = nc
				} else {
					finish()
					c, cur = nc, &sealedChunk{mint: x.t}
				}
			}
		}
		cur.maxt = x.t
	}
	finish()
	return out
}

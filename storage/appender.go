package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/internal/record"
	"github.com/weftdb/weft/storage/internal/wal"
)

// Appender returns a Prometheus storage.Appender. It is for one goroutine
// and must be finished with Commit or Rollback.
func (db *DB) Appender(ctx context.Context) promstorage.Appender {
	return db.newAppender(ctx)
}

// AppenderV2 returns a Prometheus storage.AppenderV2 (also
// storage.ExemplarAppenderV2). Same rules as Appender.
func (db *DB) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	return &appenderV2{db.newAppender(ctx)}
}

// pendingSample is one appended sample awaiting Commit. Floats and
// histograms share one slice so the append order within a series survives.
// It is 32 bytes: a plain float sample (no start timestamp), the common
// case, carries only its series, time and value; anything else is in the
// appender's exts (ext is its index + 1, 0 for none).
type pendingSample struct {
	s   *memSeries
	t   int64
	v   float64
	ext uint32
}

// pendingExt holds what a pendingSample does not: the start timestamp and
// the histogram, if any.
type pendingExt struct {
	st int64
	h  *histogram.Histogram
	fh *histogram.FloatHistogram
}

type pendingExemplar struct {
	s *memSeries
	e exemplar.Exemplar
}

var errAppenderDone = errors.New("appender already committed or rolled back")

// appender collects samples for one commit. Not safe for concurrent use.
type appender struct {
	db      *DB
	ctx     context.Context
	nowMs   int64
	discard bool // AppendOptions.DiscardOutOfOrder
	// checkNew is what a new series must pass: checkNewLabels, then
	// Options.AdmitSeries.
	checkNew func(labels.Labels) error
	// tenant is the tenant of the series this appender creates ("
	// for none, package tenant); tenantErr refuses every append (a
	// federated context, which may not write).
	tenant    string
	tenantErr error

	samples []pendingSample
	exts    []pendingExt
	nHists  int
	frame   []byte
	// wbuf holds the WAL record of samples, encoded as they are appended
	// while the batch is all floats (nHists == 0): an open compact
	// float-samples record whose header is at recStart, filled in by
	// Commit. Once a histogram arrives Commit encodes the batch from
	// samples instead and wbuf is ignored.
	wbuf     []byte
	recStart int
	enc      record.SampleEncoder
	// mint, maxt bound the timestamps of samples.
	mint, maxt int64
	exemplars  []pendingExemplar
	metas      []record.Metadata
	done       bool

	// partLo, partHi bound the partition of the batch's newest sample
	// [partLo, partHi), set by Commit for apply's fast path.
	partLo, partHi int64
}

// appenderPool recycles appenders (and their sample slices) between
// commits: a scrape or remote-write request of 1000 samples then allocates
// nothing for its batch.
var appenderPool = sync.Pool{New: func() any { return &appender{} }}

func (db *DB) newAppender(ctx context.Context) *appender {
	a := appenderPool.Get().(*appender)
	a.db, a.ctx, a.nowMs, a.discard, a.done = db, ctx, db.opts.Now().UnixMilli(), false, false
	a.tenant, a.tenantErr = tenant.WriteID(ctx)
	a.checkNew = checkNewLabels
	if admit := db.opts.AdmitSeries; admit != nil {
		id := a.tenant
		a.checkNew = func(ls labels.Labels) error {
			if err := checkNewLabels(ls); err != nil {
				return err
			}
			return admit(ctx, id, ls)
		}
	}
	if a.tenantErr != nil {
		a.tenantErr = fmt.Errorf("%w: %w", ErrInvalidLabels, a.tenantErr)
	}
	a.mint, a.maxt = maxInt64, minInt64
	return a
}

// release returns a finished appender to the pool. The caller must not use
// it afterwards; Commit and Rollback are its only callers.
func (a *appender) release() {
	clear(a.samples)
	clear(a.exts)
	clear(a.exemplars)
	a.samples, a.exts, a.exemplars, a.metas = a.samples[:0], a.exts[:0], a.exemplars[:0], a.metas[:0]
	a.wbuf = a.wbuf[:0]
	a.nHists = 0
	a.db, a.ctx, a.checkNew = nil, nil, nil
	appenderPool.Put(a)
}

// seriesFor resolves ref or ls to a head series, creating it if needed. A
// new series' record is logged to the WAL right away, so that it precedes
// any sample that refers to it whichever appender commits first.
func (a *appender) seriesFor(ref promstorage.SeriesRef, ls labels.Labels, t int64) (*memSeries, error) {
	db := a.db
	if ref != 0 {
		if s := db.series.get(uint64(ref)); s != nil {
			return s, nil
		}
	}
	if ls.IsEmpty() {
		return nil, fmt.Errorf("%w: empty label set", ErrInvalidLabels)
	}
	if a.tenantErr != nil {
		return nil, a.tenantErr
	}
	id, created, err := db.idx.GetOrCreate(a.tenant, ls, t, a.checkNew)
	if err == errEmptyValue {
		// Unknown as given: the series is ls without its empty labels.
		if ls = ls.WithoutEmpty(); ls.IsEmpty() {
			return nil, fmt.Errorf("%w: empty label set", ErrInvalidLabels)
		}
		id, created, err = db.idx.GetOrCreate(a.tenant, ls, t, a.checkNew)
	}
	if err != nil {
		if errors.Is(err, ErrInvalidLabels) {
			return nil, err
		}
		if errors.Is(err, index.ErrReservedLabel) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidLabels, err)
		}
		return nil, fmt.Errorf("index series: %w", err)
	}
	if !created {
		if s := db.series.get(id); s != nil {
			return s, nil
		}
	}
	db.commitMu.RLock()
	defer db.commitMu.RUnlock()
	s := db.series.getOrCreate(id)
	if created {
		db.stats.seriesNew.Add(1)
		frame, start := wal.BeginRecord(a.frame[:0])
		// The WAL keeps the whole label set, the tenant's label with it.
		frame = record.AppendSeries(frame, []record.Series{{Kind: 1, ID: id, Labels: ls, Tenant: a.tenant}})
		a.frame = wal.EndRecord(frame, start)
		if _, err := db.wal.LogForce(a.frame); err != nil {
			return nil, fmt.Errorf("log series: %w", err)
		}
	}
	return s, nil
}

// checkTime validates t against the store's time bounds, whatever the
// series: not too far in the future, not older than the retention.
func (a *appender) checkTime(t int64) error {
	if a.db.futureMs >= 0 && t > a.nowMs+a.db.futureMs {
		return ErrTooFarInFuture
	}
	// A sample older than the retention (wall clock) would be dropped by
	// the next retention pass: reject it whatever its series, so that a new
	// series cannot bring back data from long ago (a 1970 timestamp).
	if ret := a.db.opts.Retention; ret > 0 && t < a.nowMs-ret.Milliseconds() {
		return ErrOutOfWindow
	}
	return nil
}

// check validates x against the series as committed so far.
func (a *appender) check(s *memSeries, x sample) error {
	if err := a.checkTime(x.t); err != nil {
		return err
	}
	if x.t > s.lastT.Load() {
		// In order: valid whatever happens until Commit, which re-checks.
		return nil
	}
	s.mu.Lock()
	err := a.db.checkLocked(s, x, false)
	lastT := s.lastT.Load()
	s.mu.Unlock()
	if err == nil && a.discard && x.t < lastT {
		return promstorage.ErrOutOfOrderSample
	}
	return err
}

func (a *appender) appendSample(ref promstorage.SeriesRef, ls labels.Labels, x sample) (promstorage.SeriesRef, error) {
	if a.done {
		return 0, errAppenderDone
	}
	s, err := a.seriesFor(ref, ls, x.t)
	if err != nil {
		a.db.stats.reject(err)
		return 0, err
	}
	if err := a.check(s, x); err != nil {
		if errors.Is(err, errSameSample) {
			return promstorage.SeriesRef(s.id), nil
		}
		a.db.stats.reject(err)
		return promstorage.SeriesRef(s.id), err
	}
	if x.st == 0 && x.h == nil && x.fh == nil {
		a.addFloat(s, x.t, x.v)
		return promstorage.SeriesRef(s.id), nil
	}
	p := pendingSample{s: s, t: x.t, v: x.v}
	if x.h != nil || x.fh != nil {
		a.nHists++
	}
	a.exts = append(a.exts, pendingExt{st: x.st, h: x.h, fh: x.fh})
	p.ext = uint32(len(a.exts))
	a.add(p, x.st)
	return promstorage.SeriesRef(s.id), nil
}

// addFloat queues the validated float sample (t, v) without a start
// timestamp for s.
func (a *appender) addFloat(s *memSeries, t int64, v float64) {
	a.add(pendingSample{s: s, t: t, v: v}, 0)
}

// add queues the validated sample p (start timestamp st) and, while the
// batch is all floats, encodes its WAL entry: now, while the series is in
// cache, rather than in a second pass over the batch in Commit.
func (a *appender) add(p pendingSample, st int64) {
	a.samples = append(a.samples, p)
	a.mint, a.maxt = min(a.mint, p.t), max(a.maxt, p.t)
	if a.nHists == 0 {
		if len(a.samples) == 1 {
			a.wbuf, a.recStart = wal.BeginRecord(a.wbuf[:0])
			a.wbuf = record.AppendCompactSamplesHeader(a.wbuf)
			a.enc.Reset()
		}
		a.wbuf = a.enc.Append(a.wbuf, p.s.id, st, p.t, p.v)
	}
}

// sampleOf returns the sample p stands for.
func (a *appender) sampleOf(p *pendingSample) sample {
	x := sample{t: p.t, v: p.v}
	if p.ext != 0 {
		e := &a.exts[p.ext-1]
		x.st, x.h, x.fh = e.st, e.h, e.fh
	}
	return x
}

// stOf returns p's start timestamp (0: none).
func (a *appender) stOf(p *pendingSample) int64 {
	if p.ext == 0 {
		return 0
	}
	return a.exts[p.ext-1].st
}

// Append adds a float sample.
func (a *appender) Append(ref promstorage.SeriesRef, ls labels.Labels, t int64, v float64) (promstorage.SeriesRef, error) {
	// The steady state of a scraper or remote-write sender: a cached ref
	// of a live series and a sample newer than the series' last. What
	// appendSample would decide for it, without its general steps.
	if ref != 0 && !a.done {
		if s := a.db.series.get(uint64(ref)); s != nil && t > s.lastT.Load() && a.checkTime(t) == nil {
			if n := len(a.samples); n > 0 && n < cap(a.samples) && a.nHists == 0 {
				// add's common case, in place: the record is open and
				// the slice has room.
				a.samples = a.samples[:n+1]
				a.samples[n] = pendingSample{s: s, t: t, v: v}
				a.mint, a.maxt = min(a.mint, t), max(a.maxt, t)
				a.wbuf = a.enc.Append(a.wbuf, s.id, 0, t, v)
				return ref, nil
			}
			a.addFloat(s, t, v)
			return ref, nil
		}
	}
	return a.appendSample(ref, ls, sample{t: t, v: v})
}

// AppendHistogram adds an integer (h) or float (fh) native histogram sample.
func (a *appender) AppendHistogram(ref promstorage.SeriesRef, ls labels.Labels, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) (promstorage.SeriesRef, error) {
	if fh != nil {
		h = nil
		if err := fh.Validate(); err != nil {
			return 0, err
		}
	} else if h != nil {
		if err := h.Validate(); err != nil {
			return 0, err
		}
	}
	return a.appendSample(ref, ls, sample{t: t, h: h, fh: fh})
}

// SetOptions applies per-appender options (DiscardOutOfOrder).
func (a *appender) SetOptions(opts *promstorage.AppendOptions) {
	a.discard = opts != nil && opts.DiscardOutOfOrder
}

// AppendExemplar attaches an exemplar to an existing series.
func (a *appender) AppendExemplar(ref promstorage.SeriesRef, ls labels.Labels, e exemplar.Exemplar) (promstorage.SeriesRef, error) {
	if a.db.opts.MaxExemplarsPerSeries < 0 {
		return 0, promstorage.ErrExemplarsDisabled
	}
	var s *memSeries
	if ref != 0 {
		s = a.db.series.get(uint64(ref))
	}
	if s == nil {
		id, ok := a.db.lookupSeries(a.ctx, ls.WithoutEmpty())
		if !ok {
			return 0, promstorage.ErrNotFound
		}
		if s = a.db.series.get(id); s == nil {
			return 0, promstorage.ErrNotFound
		}
	}
	if err := validateExemplar(e); err != nil {
		return promstorage.SeriesRef(s.id), err
	}
	a.exemplars = append(a.exemplars, pendingExemplar{s: s, e: e})
	return promstorage.SeriesRef(s.id), nil
}

// lookupSeries finds the ID of an existing series without creating it
// (the index has no read-only lookup, so this goes through postings; only
// exemplars appended without a ref take this path).
func (db *DB) lookupSeries(ctx context.Context, ls labels.Labels) (uint64, bool) {
	if ls.IsEmpty() {
		return 0, false
	}
	ms := make([]*labels.Matcher, 0, ls.Len())
	ls.Range(func(l labels.Label) {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value))
	})
	if ctx == nil {
		ctx = context.Background()
	}
	ids, err := db.idx.Postings(ctx, minInt64, maxInt64, ms...)
	if err != nil {
		return 0, false
	}
	it := ids.Iterator()
	for it.HasNext() {
		id := it.Next()
		if got, ok := db.idx.Labels(id, nil); ok && labels.Equal(tenant.Strip(got), ls) {
			return id, true
		}
	}
	return 0, false
}

func validateExemplar(e exemplar.Exemplar) error {
	n := 0
	e.Labels.Range(func(l labels.Label) { n += utf8.RuneCountInString(l.Name) + utf8.RuneCountInString(l.Value) })
	if n > exemplar.ExemplarMaxLabelSetLength {
		return promstorage.ErrExemplarLabelLength
	}
	return nil
}

// UpdateMetadata records metadata for the metric family of ls.
func (a *appender) UpdateMetadata(ref promstorage.SeriesRef, ls labels.Labels, m metadata.Metadata) (promstorage.SeriesRef, error) {
	name := ls.Get(labels.MetricName)
	if name == "" {
		return ref, nil
	}
	a.queueMetadata(name, m)
	return ref, nil
}

// AppendSTZeroSample appends a zero-valued sample at the start timestamp st
// (a counter's creation), as Prometheus does with created-timestamp ingestion.
func (a *appender) AppendSTZeroSample(ref promstorage.SeriesRef, ls labels.Labels, t, st int64) (promstorage.SeriesRef, error) {
	if st >= t {
		return 0, promstorage.ErrSTNewerThanSample
	}
	return a.appendSTZero(ref, ls, sample{t: st})
}

// AppendHistogramSTZeroSample is AppendSTZeroSample for histograms.
func (a *appender) AppendHistogramSTZeroSample(ref promstorage.SeriesRef, ls labels.Labels, t, st int64, h *histogram.Histogram, fh *histogram.FloatHistogram) (promstorage.SeriesRef, error) {
	if st >= t {
		return 0, promstorage.ErrSTNewerThanSample
	}
	x := sample{t: st}
	switch {
	case fh != nil:
		x.fh = &histogram.FloatHistogram{Schema: fh.Schema, ZeroThreshold: fh.ZeroThreshold, CustomValues: fh.CustomValues, CounterResetHint: histogram.CounterReset}
	case h != nil:
		x.h = &histogram.Histogram{Schema: h.Schema, ZeroThreshold: h.ZeroThreshold, CustomValues: h.CustomValues, CounterResetHint: histogram.CounterReset}
	default:
		x.h = &histogram.Histogram{CounterResetHint: histogram.CounterReset}
	}
	return a.appendSTZero(ref, ls, x)
}

func (a *appender) appendSTZero(ref promstorage.SeriesRef, ls labels.Labels, x sample) (promstorage.SeriesRef, error) {
	s, err := a.seriesFor(ref, ls, x.t)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	lastT := s.lastT.Load()
	s.mu.Unlock()
	if x.t <= lastT {
		return promstorage.SeriesRef(s.id), promstorage.ErrOutOfOrderST
	}
	return a.appendSample(promstorage.SeriesRef(s.id), ls, x)
}

// Rollback discards everything appended. New series stay registered (their
// records are harmless) but get no samples.
func (a *appender) Rollback() error {
	if a.done {
		return errAppenderDone
	}
	a.done = true
	a.release()
	return nil
}

// appenderV2 adapts appender to storage.AppenderV2.
type appenderV2 struct{ *appender }

// CopiesLabels reports that the appender keeps nothing of the labels.Labels
// (nor of strings taken from them) passed to Append, AppendExemplars or
// UpdateMetadata once the call returns: the index interns copies, the WAL
// encodes them, metadata names are cloned. A caller may build every series'
// labels in one reused buffer (the remote-write receiver does). Changes to
// the appender must keep this true; TestAppenderCopiesLabels checks it.
func (a *appenderV2) CopiesLabels() bool { return true }

var _ promstorage.ExemplarAppenderV2 = (*appenderV2)(nil)

// Append adds a sample of any type with its start timestamp, metadata and
// exemplars. Exemplar failures are reported as *storage.AppendPartialError
// after the sample itself was accepted.
func (a *appenderV2) Append(ref promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AppendV2Options) (promstorage.SeriesRef, error) {
	a.discard = opts.RejectOutOfOrder
	x := sample{st: st, t: t, v: v, h: h, fh: fh}
	if fh != nil {
		x.h = nil
		if err := fh.Validate(); err != nil {
			return 0, err
		}
	} else if h != nil {
		if err := h.Validate(); err != nil {
			return 0, err
		}
	}
	r, err := a.appendSample(ref, ls, x)
	if err != nil {
		return r, err
	}
	if !opts.Metadata.IsEmpty() {
		name := opts.MetricFamilyName
		if name == "" {
			name = ls.Get(labels.MetricName)
		}
		if name != "" {
			a.queueMetadata(name, opts.Metadata)
		}
	}
	if len(opts.Exemplars) > 0 {
		_, err = a.AppendExemplars(r, ls, opts.Exemplars)
		return r, err
	}
	return r, nil
}

// AppendExemplars attaches exemplars to an existing series.
func (a *appenderV2) AppendExemplars(ref promstorage.SeriesRef, ls labels.Labels, es []exemplar.Exemplar) (promstorage.SeriesRef, error) {
	var perr *promstorage.AppendPartialError
	for i, e := range es {
		if _, err := a.AppendExemplar(ref, ls, e); err != nil {
			if errors.Is(err, promstorage.ErrNotFound) {
				return ref, err
			}
			if perr == nil {
				perr = &promstorage.AppendPartialError{}
			}
			perr.ExemplarErrors = append(perr.ExemplarErrors, promstorage.ExemplarError{Index: i, Err: err})
		}
	}
	return ref, perr.ToError()
}

func rejectReason(err error) string {
	switch {
	case errors.Is(err, ErrOutOfWindow):
		return RejectOutOfWindow
	case errors.Is(err, ErrDuplicateSample):
		return RejectDuplicate
	case errors.Is(err, ErrTooFarInFuture):
		return RejectTooFarFuture
	case errors.Is(err, ErrInvalidLabels):
		return RejectInvalidLabels
	default:
		return RejectOther
	}
}

// Package usage is ingest accounting for chargeback (docs/chargeback.md):
// per tenant, team and namespace, the samples, log bytes and spans that the
// stores accepted. Every ingest path of a signal meets in one wrapper
// (Appendable, LogPusher, TracePusher) that aggregates a request into a
// small map and adds it to shared atomic counters once the store accepted
// it. A flusher writes the counts into the metric store every Interval as
// the tenant's own series (MetricSamples, MetricLogBytes, MetricSpans), so a
// month's report survives restarts and is a PromQL query over them.
package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/usageseries"
)

// The series the flusher writes, one per tenant, team and namespace
// (storage/usageseries): each sample is what was accepted since the
// previous sample of the series.
const (
	MetricSamples  = usageseries.Samples
	MetricLogBytes = usageseries.LogBytes
	MetricSpans    = usageseries.Spans
)

// The context keys the counts are grouped by.
const (
	LabelTeam      = usageseries.LabelTeam
	LabelNamespace = usageseries.LabelNamespace
)

// DefaultInterval is how often the counts are written: a crash loses at most
// this much accounting, and a minute keeps the usage series at 1,440
// samples a day per group.
const DefaultInterval = time.Minute

// Options configures an Accountant.
type Options struct {
	// Sink receives the flushed usage series (the metric store itself, not
	// behind the accounting, limits or redaction). Required for Flush.
	Sink promstorage.AppendableV2
	// Interval between flushes; default DefaultInterval.
	Interval time.Duration
	// Logger reports failed flushes; nil logs nothing.
	Logger *slog.Logger
	// Now is the clock of the flushed samples; default time.Now.
	Now func() time.Time
}

// DefaultOptions returns the documented defaults (Sink still to be set).
func DefaultOptions() Options {
	return Options{Interval: DefaultInterval, Now: time.Now}
}

// group is one (tenant, team, namespace).
type group struct{ tenant, team, namespace string }

// counts are a group's totals since its last flush.
type counts struct{ samples, logBytes, spans atomic.Int64 }

// Accountant counts accepted ingest per group and flushes it. Safe for
// concurrent use; a nil *Accountant counts nothing and its wrappers return
// what they wrap.
type Accountant struct {
	opts   Options
	mu     sync.RWMutex
	groups map[group]*counts

	// lastT is the previous flush's timestamp: a flush is never at or
	// before it (a series takes one sample per millisecond).
	lastT    atomic.Int64
	started  atomic.Bool
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// New returns an Accountant; Start begins the periodic flushes.
func New(opts Options) *Accountant {
	def := DefaultOptions()
	if opts.Interval <= 0 {
		opts.Interval = def.Interval
	}
	if opts.Now == nil {
		opts.Now = def.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Accountant{opts: opts, groups: map[group]*counts{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// tenantOf is the tenant ingest with ctx writes as: Anonymous without
// multi-tenancy.
func tenantOf(ctx context.Context) string {
	id, err := tenant.WriteID(ctx)
	if err != nil || id == "" {
		return tenant.Anonymous
	}
	return id
}

// countsOf returns g's counters, creating them (with copies of the strings,
// which may point into a caller's reused buffer) on first use.
func (a *Accountant) countsOf(g group) *counts {
	a.mu.RLock()
	c := a.groups[g]
	a.mu.RUnlock()
	if c != nil {
		return c
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c = a.groups[g]; c == nil {
		g = group{strings.Clone(g.tenant), strings.Clone(g.team), strings.Clone(g.namespace)}
		c = new(counts)
		a.groups[g] = c
	}
	return c
}

// kind selects one of a group's counters.
type kind int

const (
	kindSamples kind = iota
	kindLogBytes
	kindSpans
)

func (c *counts) of(k kind) *atomic.Int64 {
	switch k {
	case kindSamples:
		return &c.samples
	case kindLogBytes:
		return &c.logBytes
	default:
		return &c.spans
	}
}

// teamKey is a group within one request's tenant.
type teamKey struct{ team, namespace string }

// batch aggregates one request: a small map, added to the shared counters
// once the store accepted the request. The last group is kept aside, as a
// request's samples usually come series after series. Nothing of the
// labels it is given is kept (its keys are copies), so the appender may be
// handed labels whose memory is reused (CopiesLabels).
type batch struct {
	m    map[teamKey]*teamCount
	last *teamCount
}

// teamCount is one group's count in a batch, under its own copy of the key.
type teamCount struct {
	k teamKey
	n int64
}

// add counts n for the labels ls. Label values are copied only when a new
// key enters the map.
func (b *batch) add(ls labels.Labels, n int64) {
	k := teamKey{ls.Get(LabelTeam), ls.Get(LabelNamespace)}
	if b.last != nil && k == b.last.k {
		b.last.n += n
		return
	}
	if b.m == nil {
		b.m = map[teamKey]*teamCount{}
	}
	c := b.m[k]
	if c == nil {
		c = &teamCount{k: teamKey{strings.Clone(k.team), strings.Clone(k.namespace)}}
		b.m[c.k] = c
	}
	c.n += n
	b.last = c
}

// commit adds b to the shared counters of tenant id.
func (a *Accountant) commit(id string, k kind, b *batch) {
	for _, c := range b.m {
		if c.n > 0 {
			a.countsOf(group{id, c.k.team, c.k.namespace}).of(k).Add(c.n)
		}
	}
	*b = batch{}
}

// Usage is one group's counts since the last flush (Snapshot).
type Usage struct {
	Tenant, Team, Namespace  string
	Samples, LogBytes, Spans int64
}

// Snapshot returns the counts not yet flushed, for tests and debugging.
func (a *Accountant) Snapshot() []Usage {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]Usage, 0, len(a.groups))
	for g, c := range a.groups {
		out = append(out, Usage{Tenant: g.tenant, Team: g.team, Namespace: g.namespace,
			Samples: c.samples.Load(), LogBytes: c.logBytes.Load(), Spans: c.spans.Load()})
	}
	return out
}

// Flush writes every group's counts since the last flush as one sample per
// non-zero counter, at Now, into the tenant's own usage series. Counts that
// could not be written are kept for the next flush.
func (a *Accountant) Flush(ctx context.Context) error {
	if a == nil || a.opts.Sink == nil {
		return nil
	}
	a.mu.RLock()
	byTenant := map[string][]group{}
	for g := range a.groups {
		byTenant[g.tenant] = append(byTenant[g.tenant], g)
	}
	a.mu.RUnlock()
	t := a.opts.Now().UnixMilli()
	for {
		last := a.lastT.Load()
		if t <= last {
			t = last + 1
		}
		if a.lastT.CompareAndSwap(last, t) {
			break
		}
	}
	var errs []error
	for id, gs := range byTenant {
		if err := a.flushTenant(ctx, id, gs, t); err != nil {
			errs = append(errs, fmt.Errorf("flush usage of tenant %q: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// flushKey marks the context of a flush's writes (Flushing).
type flushKey struct{}

// Flushing reports whether ctx is an Accountant's flush writing usage
// series, for a series admission check (per-tenant max active series) that
// should not refuse weft's own accounting.
func Flushing(ctx context.Context) bool {
	v, _ := ctx.Value(flushKey{}).(bool)
	return v
}

func (a *Accountant) flushTenant(ctx context.Context, id string, gs []group, t int64) error {
	type taken struct {
		c *atomic.Int64
		n int64
	}
	var took []taken
	giveBack := func() {
		for _, x := range took {
			x.c.Add(x.n)
		}
	}
	app := a.opts.Sink.AppenderV2(context.WithValue(tenant.With(ctx, id), flushKey{}, true))
	for _, g := range gs {
		c := a.countsOf(g)
		for _, m := range []struct {
			name string
			c    *atomic.Int64
		}{{MetricSamples, &c.samples}, {MetricLogBytes, &c.logBytes}, {MetricSpans, &c.spans}} {
			n := m.c.Swap(0)
			if n == 0 {
				continue
			}
			took = append(took, taken{m.c, n})
			ls := labels.FromStrings(labels.MetricName, m.name, LabelNamespace, g.namespace, LabelTeam, g.team)
			if _, err := app.Append(0, ls, 0, t, float64(n), nil, nil, promstorage.AOptions{}); err != nil {
				giveBack()
				return errors.Join(fmt.Errorf("append %s: %w", m.name, err), app.Rollback())
			}
		}
	}
	if len(took) == 0 {
		return app.Rollback()
	}
	if err := app.Commit(); err != nil {
		giveBack()
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Start flushes every Interval in a goroutine that Stop ends.
func (a *Accountant) Start() {
	if a == nil || !a.started.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer close(a.done)
		tick := time.NewTicker(a.opts.Interval)
		defer tick.Stop()
		for {
			select {
			case <-a.stop:
				return
			case <-tick.C:
				if err := a.Flush(context.Background()); err != nil {
					a.opts.Logger.Warn("usage_flush_failed", "err", err)
				}
			}
		}
	}()
}

// Stop ends the flushes started by Start and flushes once more, so that a
// clean shutdown loses no accounting; call it before the metric store
// closes. Idempotent; safe without Start.
func (a *Accountant) Stop(ctx context.Context) error {
	if a == nil {
		return nil
	}
	a.stopOnce.Do(func() {
		close(a.stop)
		if a.started.Load() {
			<-a.done
		}
	})
	return a.Flush(ctx)
}

package storage

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
)

// streamIndex is what storage needs from weft's index, restricted to metric
// streams. metricIndex adapts *index.Index to it; tests may substitute
// their own. Implementations are safe for concurrent use.
type streamIndex interface {
	// GetOrCreate returns the ID of the series ls of tenant tid ("" for
	// none; the series' labels are ls plus the tenant label, package
	// tenant); check (nil: none) is called only when it is not a known
	// series, before it is created, and its error is returned unwrapped.
	GetOrCreate(tid string, ls labels.Labels, t int64, check func(labels.Labels) error) (id uint64, created bool, err error)
	Touch(id uint64, t int64)
	Restore(id uint64, ls labels.Labels, t int64) error
	Persist(ctx context.Context) error
	Labels(id uint64, b *labels.ScratchBuilder) (labels.Labels, bool)
	Postings(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) (*roaring64.Bitmap, error)
	LabelNames(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]string, error)
	LabelValues(ctx context.Context, name string, mint, maxt int64, ms ...*labels.Matcher) ([]string, error)
	GroupBy(ctx context.Context, sel *roaring64.Bitmap, mint, maxt int64, by []string) (index.Grouping, error)
	Delete(ctx context.Context, ids *roaring64.Bitmap) error
	NumStreams() int
	Close() error
}

// metricIndex is the shared *index.Index seen as an index of metric streams.
type metricIndex struct{ ix *index.Index }

func (m metricIndex) GetOrCreate(tid string, ls labels.Labels, t int64, check func(labels.Labels) error) (uint64, bool, error) {
	id, created, err := m.ix.GetOrCreateTenant(index.KindMetric, tid, ls, t, check)
	return uint64(id), created, err
}

func (m metricIndex) Touch(id uint64, t int64) { m.ix.Touch(index.ID(id), t) }

func (m metricIndex) Restore(id uint64, ls labels.Labels, t int64) error {
	return m.ix.Restore(index.KindMetric, index.ID(id), ls, t)
}

func (m metricIndex) Persist(ctx context.Context) error { return m.ix.Persist(ctx) }

func (m metricIndex) Labels(id uint64, b *labels.ScratchBuilder) (labels.Labels, bool) {
	return m.ix.Labels(index.ID(id), b)
}

func (m metricIndex) Postings(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) (*roaring64.Bitmap, error) {
	return m.ix.Postings(ctx, index.KindMetric, mint, maxt, ms...)
}

func (m metricIndex) LabelNames(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]string, error) {
	return m.ix.LabelNames(ctx, index.KindMetric, mint, maxt, ms...)
}

func (m metricIndex) LabelValues(ctx context.Context, name string, mint, maxt int64, ms ...*labels.Matcher) ([]string, error) {
	return m.ix.LabelValues(ctx, index.KindMetric, name, mint, maxt, ms...)
}

func (m metricIndex) GroupBy(ctx context.Context, sel *roaring64.Bitmap, mint, maxt int64, by []string) (index.Grouping, error) {
	return m.ix.GroupBy(ctx, sel, mint, maxt, by)
}

func (m metricIndex) Delete(ctx context.Context, ids *roaring64.Bitmap) error {
	return m.ix.Delete(ctx, ids)
}

func (m metricIndex) NumStreams() int { return m.ix.NumStreams(index.KindMetric) }

// Close is a no-op: the substrate owns the index and closes it.
func (m metricIndex) Close() error { return nil }

// Index returns the shared stream index (cardinality stats, label APIs).
// Valid until Close.
func (db *DB) Index() *index.Index { return db.ix }

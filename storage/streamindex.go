package storage

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"
)

// streamIndex is what storage needs from weft's index package, restricted to
// metric streams. *memindex.Index implements it today; an adapter over
// *index.Index (Kind fixed to index.KindMetric) will, once index/ lands.
// Implementations are safe for concurrent use.
type streamIndex interface {
	GetOrCreate(ls labels.Labels, t int64) (id uint64, created bool, err error)
	Touch(id uint64, t int64)
	Restore(id uint64, ls labels.Labels, t int64) error
	Persist(ctx context.Context) error
	Labels(id uint64, b *labels.ScratchBuilder) (labels.Labels, bool)
	Postings(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) (*roaring64.Bitmap, error)
	LabelNames(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]string, error)
	LabelValues(ctx context.Context, name string, mint, maxt int64, ms ...*labels.Matcher) ([]string, error)
	DropPartitionsBefore(ctx context.Context, t int64) error
	Delete(ctx context.Context, ids *roaring64.Bitmap) error
	NumStreams() int
	Close() error
}

package querier

import (
	"context"
	"fmt"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/index"
)

// maxIndexEntries bounds the streams an Index remembers; past it the
// oldest half is forgotten (an ID handed out before that no longer
// resolves, and its stream is skipped by whoever still holds it).
const maxIndexEntries = 1 << 20

// Index returns the cluster's label index as weft's investigations read
// it (investigate.Index): the streams a selector matches, listed through
// the fan-out (metric series from the ingesters and blocks, log streams
// likewise, trace resources likewise), under IDs of the
// querier's own. Safe for concurrent use.
func (q *Querier) Index() *Index {
	return &Index{q: q, byKey: map[string]index.ID{}, entries: map[index.ID]indexEntry{}}
}

// Index is the fan-out label index (see Querier.Index).
type Index struct {
	q *Querier

	mu      sync.Mutex
	next    index.ID
	first   index.ID // the oldest ID still remembered
	byKey   map[string]index.ID
	entries map[index.ID]indexEntry
}

type indexEntry struct {
	kind index.Kind
	ls   labels.Labels
	key  string
}

// Postings returns the IDs of the streams of kind matching ms with data in
// [mint, maxt] (unix ms). A stream keeps its ID from call to call.
func (x *Index) Postings(ctx context.Context, kind index.Kind, mint, maxt int64, ms ...*labels.Matcher) (*roaring64.Bitmap, error) {
	type stream struct {
		kind index.Kind
		ls   labels.Labels
	}
	var found []stream
	if kind == index.KindMetric || kind == index.KindAny {
		sq, err := x.q.Querier(mint, maxt)
		if err != nil {
			return nil, err
		}
		defer sq.Close()
		set := sq.Select(ctx, false, &promstorage.SelectHints{Start: mint, End: maxt, Func: "series"}, ms...)
		for set.Next() {
			found = append(found, stream{index.KindMetric, set.At().Labels()})
		}
		if err := set.Err(); err != nil {
			return nil, fmt.Errorf("cluster index: series: %w", err)
		}
	}
	if kind == index.KindLog || kind == index.KindAny {
		ss, err := x.q.Logs().Series(ctx, mint*1e6, (maxt+1)*1e6, ms...)
		if err != nil {
			return nil, fmt.Errorf("cluster index: log streams: %w", err)
		}
		for _, ls := range ss {
			found = append(found, stream{index.KindLog, ls})
		}
	}
	if kind == index.KindTrace || kind == index.KindAny {
		// A resource's stream is on every ingester its spans reached: ask
		// each one (and the blocks for the range older than the split),
		// the IDs merge the answers.
		start, end := mint*1e6, (maxt+1)*1e6
		sp := x.q.Traces().split(start, end)
		var got [][]labels.Labels
		if sp.ing {
			req := readapi.Request{Start: sp.ingStart, End: end, Matchers: readapi.EncodeMatchers(ms)}
			var missing []int32
			var err error
			got, missing, err = fanout(ctx, x.q, func(ctx context.Context, in *ingester, _ []int32, _ int32) ([]labels.Labels, error) {
				return in.client.TraceStreams(ctx, req)
			})
			if err != nil {
				return nil, fmt.Errorf("cluster index: trace streams: %w", err)
			}
			if _, err := x.q.partial(ctx, missing); err != nil {
				return nil, err
			}
		}
		if sp.blk {
			ss, err := x.q.opts.Blocks.TraceStreams(ctx, start, sp.blkEnd, ms...)
			if err != nil {
				return nil, fmt.Errorf("cluster index: block trace streams: %w", err)
			}
			got = append(got, ss)
		}
		for _, ss := range got {
			for _, ls := range ss {
				found = append(found, stream{index.KindTrace, ls})
			}
		}
	}
	bm := roaring64.New()
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, st := range found {
		bm.Add(uint64(x.idLocked(st.kind, st.ls)))
	}
	return bm, nil
}

func (x *Index) idLocked(kind index.Kind, ls labels.Labels) index.ID {
	key := string(rune(kind)) + ls.String()
	if id, ok := x.byKey[key]; ok {
		return id
	}
	x.next++
	id := x.next
	x.byKey[key] = id
	x.entries[id] = indexEntry{kind: kind, ls: ls, key: key}
	if len(x.entries) > maxIndexEntries {
		for stop := x.first + maxIndexEntries/2; x.first < stop; x.first++ {
			if e, ok := x.entries[x.first]; ok {
				delete(x.byKey, e.key)
				delete(x.entries, x.first)
			}
		}
	}
	return id
}

// Labels returns the labels of the stream id names.
func (x *Index) Labels(id index.ID, _ *labels.ScratchBuilder) (labels.Labels, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[id]
	return e.ls, ok
}

// StreamKind returns the kind of the stream id names.
func (x *Index) StreamKind(id index.ID) (index.Kind, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[id]
	return e.kind, ok
}

package blocks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/cluster/internal/wait"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// DefaultCompactionRanges are the compactor's levels: a day's blocks of a
// partition become one block.
var DefaultCompactionRanges = []time.Duration{24 * time.Hour}

// compactBatch is how many samples or log entries one commit or push of a
// compaction carries.
const compactBatch = 10_000

// CompactorOptions configure a Compactor.
type CompactorOptions struct {
	// Partitions whose blocks it compacts (required): the block builder's.
	Partitions []int32
	// Ranges are the levels, shortest first: the blocks of a partition
	// whose record-time windows lie within one range-aligned span
	// (Unix epoch) of Ranges[i] become one block of level i+2 once the
	// span is closed. Each should be a multiple of the builder's window
	// and of the range before it. Default DefaultCompactionRanges.
	Ranges []time.Duration
	// Grace is how long after a span's end the compactor waits before
	// merging it, so that the builder has closed the span's last window:
	// at least the builder's Grace (required, positive).
	Grace time.Duration
	// Interval is how often the bucket is planned. Default a tenth of the
	// shortest range, between 1 s and 10 min.
	Interval time.Duration
	// ScratchDir holds the blocks being merged (required).
	ScratchDir string
	// Storage configures the stores of the merged blocks.
	Storage storage.Options
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the compactor's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Compactor merges a partition's blocks of one closed time span into one
// block, as Prometheus' and Thanos' compactors do: it downloads the
// sources, copies every metric series (merged across them, samples in time
// order, duplicates dropped), log stream and trace (its spans of every
// source, duplicates dropped) into a new store, uploads that as a block
// whose meta.json names its sources, and then deletes the sources. Readers
// stop reading a source as soon as a block that names it is listed, so no
// answer counts data twice; a compactor that dies between the upload and
// the deletions deletes the replaced sources on its next pass, and one
// that dies during the upload rebuilds the same block ID.
// Exemplars and metric metadata are not copied (blocks serve neither).
// One compactor per partition. Start once; Stop ends it.
type Compactor struct {
	opts   CompactorOptions
	bucket Bucket
	logger *slog.Logger
	m      *compactorMetrics

	mu    sync.Mutex      // serialises passes
	metas map[string]Meta // read metas by block ID (blocks are immutable)

	cancel context.CancelFunc
	done   chan struct{}
}

// NewCompactor returns a compactor of bucket's blocks of opts.Partitions.
func NewCompactor(opts CompactorOptions, bucket Bucket) (*Compactor, error) {
	if len(opts.Partitions) == 0 {
		return nil, errors.New("block compactor: no partitions")
	}
	if opts.ScratchDir == "" {
		return nil, errors.New("block compactor: no scratch directory")
	}
	if opts.Grace <= 0 {
		return nil, errors.New("block compactor: no grace")
	}
	if len(opts.Ranges) == 0 {
		opts.Ranges = DefaultCompactionRanges
	}
	for i, r := range opts.Ranges {
		if r <= 0 || r%time.Millisecond != 0 || i > 0 && r <= opts.Ranges[i-1] {
			return nil, fmt.Errorf("block compactor: ranges %v must be whole milliseconds, positive and increasing", opts.Ranges)
		}
	}
	if opts.Interval <= 0 {
		opts.Interval = min(max(opts.Ranges[0]/10, time.Second), 10*time.Minute)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Compactor{opts: opts, bucket: bucket, logger: opts.Logger, m: newCompactorMetrics(opts.Registerer), metas: map[string]Meta{}}, nil
}

// Start runs a pass every Interval in a goroutine that Stop ends.
func (c *Compactor) Start(ctx context.Context) error {
	if err := os.RemoveAll(c.opts.ScratchDir); err != nil {
		return fmt.Errorf("block compactor: clear scratch: %w", err)
	}
	ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		for wait.Sleep(ctx, c.opts.Interval) {
			if _, err := c.Compact(ctx); err != nil && ctx.Err() == nil {
				c.m.failures.Inc()
				c.logger.Warn("block_compaction_failed", "err", err)
			}
		}
	}()
	return nil
}

// Stop ends the compactor; a merge under way is abandoned (its sources
// stay, and the next compactor merges them again).
func (c *Compactor) Stop() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	<-c.done
}

// Compact runs one pass: it deletes the blocks a listed merged block
// replaced, then merges every closed span of every level that holds more
// than one block, and returns how many blocks it wrote.
func (c *Compactor) Compact(ctx context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	metas, err := c.list(ctx)
	if err != nil {
		return 0, err
	}
	if metas, err = c.deleteReplaced(ctx, metas); err != nil {
		return 0, err
	}
	now := c.opts.Now().UnixMilli()
	written := 0
	for level, rng := range c.opts.Ranges {
		r := rng.Milliseconds()
		for _, group := range plan(metas, level+2, r, now-c.opts.Grace.Milliseconds()) {
			m, err := c.merge(ctx, group, level+2)
			if err != nil {
				return written, fmt.Errorf("merge %s…: %w", group[0].ID, err)
			}
			written++
			if metas, err = c.deleteReplaced(ctx, append(metas, *m)); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// list reads the metas of the partitions' complete blocks.
func (c *Compactor) list(ctx context.Context) ([]Meta, error) {
	ids, err := listBlocks(ctx, c.bucket)
	if err != nil {
		return nil, fmt.Errorf("block compactor: %w", err)
	}
	listed := make(map[string]bool, len(ids))
	var out []Meta
	for _, id := range ids {
		listed[id] = true
		if p, ok := partitionOfID(id); ok && !slices.Contains(c.opts.Partitions, p) {
			continue
		}
		m, ok := c.metas[id]
		if !ok {
			mp, err := readMeta(ctx, c.bucket, id)
			if errors.Is(err, ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return nil, fmt.Errorf("block compactor: %w", err)
			}
			m = *mp
			c.metas[id] = m
		}
		if slices.Contains(c.opts.Partitions, m.Partition) {
			out = append(out, m)
		}
	}
	for id := range c.metas {
		if !listed[id] {
			delete(c.metas, id)
		}
	}
	return out, nil
}

// deleteReplaced deletes the blocks that a block of metas names as a
// source and returns metas without them.
func (c *Compactor) deleteReplaced(ctx context.Context, metas []Meta) ([]Meta, error) {
	replaced := map[string]bool{}
	for _, m := range metas {
		for _, s := range m.Compaction.Sources {
			replaced[s] = true
		}
	}
	kept := metas[:0:0]
	for _, m := range metas {
		if !replaced[m.ID] {
			kept = append(kept, m)
			continue
		}
		if err := deleteBlock(ctx, c.bucket, &m); err != nil {
			return nil, fmt.Errorf("block compactor: delete replaced %s: %w", m.ID, err)
		}
		delete(c.metas, m.ID)
		c.m.deleted.Inc()
		c.logger.Info("block_replaced_deleted", "block", m.ID)
	}
	return kept, nil
}

// plan groups the blocks below level by partition and r-aligned span of
// their windows; it returns the groups of more than one block whose span
// ended at or before closedBefore, each sorted by offset. A block whose
// window crosses a span's boundary stays as it is.
func plan(metas []Meta, level int, r, closedBefore int64) [][]Meta {
	type key struct {
		p    int32
		span int64
	}
	groups := map[key][]Meta{}
	for _, m := range metas {
		if m.Compaction.Level >= level {
			continue
		}
		span := floorDiv(m.Window.Start, r)
		if floorDiv(m.Window.End-1, r) != span || (span+1)*r > closedBefore {
			continue
		}
		k := key{m.Partition, span}
		groups[k] = append(groups[k], m)
	}
	var out [][]Meta
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		slices.SortFunc(g, func(a, b Meta) int { return cmp.Compare(a.ID, b.ID) })
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b []Meta) int { return cmp.Compare(a[0].ID, b[0].ID) })
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// CompactedID names the block of level that merged partition p's blocks
// from offset start on; the same sources give the same ID, so a merge cut
// short is redone under the same name.
func CompactedID(p int32, start int64, level int) string {
	return fmt.Sprintf("%s-c%d", BlockID(p, start), level)
}

// merge builds, uploads and returns the block of level that replaces group.
func (c *Compactor) merge(ctx context.Context, group []Meta, level int) (*Meta, error) {
	began := time.Now()
	first := group[0]
	m := &Meta{Version: MetaVersion, ID: CompactedID(first.Partition, first.Offsets.Start, level), Partition: first.Partition,
		Offsets: first.Offsets, Window: first.Window, MinTime: first.MinTime, MaxTime: first.MaxTime, Compaction: Compaction{Level: level}}
	for _, s := range group {
		m.Offsets.Start, m.Offsets.End = min(m.Offsets.Start, s.Offsets.Start), max(m.Offsets.End, s.Offsets.End)
		m.Window.Start, m.Window.End = min(m.Window.Start, s.Window.Start), max(m.Window.End, s.Window.End)
		m.MinTime, m.MaxTime = min(m.MinTime, s.MinTime), max(m.MaxTime, s.MaxTime)
		m.Stats.Records += s.Stats.Records
		// Transitive sources, as Thanos records them: a reader that still
		// holds a source's source skips it too.
		m.Compaction.Sources = append(m.Compaction.Sources, s.ID)
		m.Compaction.Sources = append(m.Compaction.Sources, s.Compaction.Sources...)
	}
	slices.Sort(m.Compaction.Sources)
	m.Compaction.Sources = slices.Compact(m.Compaction.Sources)
	dir := filepath.Join(c.opts.ScratchDir, m.ID)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var srcs []*storage.Substrate
	defer func() {
		for _, s := range srcs {
			_ = s.Close()
		}
	}()
	for _, s := range group {
		sdir := filepath.Join(dir, "src", s.ID)
		if err := download(ctx, c.bucket, &s, sdir); err != nil {
			return nil, fmt.Errorf("download %s: %w", s.ID, err)
		}
		sub, err := storage.OpenSubstrate(ctx, sdir, c.storeOptions(s.ID))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", s.ID, err)
		}
		srcs = append(srcs, sub)
	}
	out := filepath.Join(dir, "out")
	dst, err := storage.OpenSubstrate(ctx, out, c.storeOptions(m.ID))
	if err != nil {
		return nil, fmt.Errorf("open merged store: %w", err)
	}
	stats, ids, err := copyStores(ctx, srcs, dst, m.MinTime, m.MaxTime)
	if err == nil {
		err = dst.Flush(ctx)
	}
	if err != nil {
		_ = dst.Close()
		return nil, err
	}
	stats.Records = m.Stats.Records
	stats.Series = dst.Index().NumStreams(index.KindMetric)
	stats.Streams = dst.Index().NumStreams(index.KindLog)
	stats.TraceStreams = dst.Index().NumStreams(index.KindTrace)
	idsPath := traceIDsPath(out)
	f := newTraceIDFilter(len(ids))
	for id := range ids {
		f.add(id)
	}
	if m.TraceIDs, err = writeTraceIDFilter(f, idsPath); err != nil {
		_ = dst.Close()
		return nil, err
	}
	if err := dst.Close(); err != nil {
		return nil, fmt.Errorf("close merged store: %w", err)
	}
	m.Stats = stats
	m.Created = time.Now().UTC()
	if err := upload(ctx, c.bucket, out, m, idsPath); err != nil {
		return nil, fmt.Errorf("upload %s: %w", m.ID, err)
	}
	c.metas[m.ID] = *m
	c.m.merged.Inc()
	c.m.sources.Add(float64(len(group)))
	c.m.duration.Observe(time.Since(began).Seconds())
	c.logger.Info("blocks_compacted", "block", m.ID, "level", level, "sources", len(group),
		"samples", m.Stats.Samples, "entries", m.Stats.Entries, "spans", m.Stats.Spans, "bytes", m.Stats.Bytes)
	return m, nil
}

// storeOptions are those of the stores of a merge (blockStore).
func (c *Compactor) storeOptions(id string) storage.Options {
	return blockStore(c.opts.Storage, c.logger.With("block", id))
}

// copyStores copies the metric series, log streams and traces of srcs with
// data in [minT, maxT] (unix ms) into dst: each series once, its samples
// merged across the sources in time order (ChainedSeriesMerge drops a
// sample a second source repeats), then each source's log streams, then
// each source's traces, less the spans an earlier source held
// (copyTraces), whose IDs it returns.
func copyStores(ctx context.Context, srcs []*storage.Substrate, dst *storage.Substrate, minT, maxT int64) (Stats, map[traceentry.TraceID]struct{}, error) {
	var st Stats
	qs := make([]promstorage.Querier, 0, len(srcs))
	for _, s := range srcs {
		q, err := s.Metrics().Querier(minT, maxT)
		if err != nil {
			return st, nil, fmt.Errorf("metric querier: %w", err)
		}
		qs = append(qs, q)
	}
	mq := promstorage.NewMergeQuerier(qs, nil, promstorage.ChainedSeriesMerge)
	defer mq.Close()
	set := mq.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	app := dst.Metrics().AppenderV2(ctx)
	pending := 0
	commit := func() error {
		if err := app.Commit(); err != nil {
			return fmt.Errorf("commit merged samples: %w", err)
		}
		app, pending = dst.Metrics().AppenderV2(ctx), 0
		return nil
	}
	var it chunkenc.Iterator
	for set.Next() {
		s := set.At()
		ls := s.Labels()
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			var (
				t  int64
				v  float64
				h  *histogram.Histogram
				fh *histogram.FloatHistogram
			)
			switch vt {
			case chunkenc.ValFloat:
				t, v = it.At()
				st.Samples++
			case chunkenc.ValHistogram:
				t, h = it.AtHistogram(nil)
				st.Histograms++
			case chunkenc.ValFloatHistogram:
				t, fh = it.AtFloatHistogram(nil)
				st.Histograms++
			}
			if _, err := app.Append(0, ls, it.AtST(), t, v, h, fh, promstorage.AOptions{}); err != nil {
				_ = app.Rollback()
				return st, nil, fmt.Errorf("append %s at %d: %w", ls, t, err)
			}
			if pending++; pending >= compactBatch {
				if err := commit(); err != nil {
					return st, nil, err
				}
			}
		}
		if err := it.Err(); err != nil {
			_ = app.Rollback()
			return st, nil, fmt.Errorf("read %s: %w", ls, err)
		}
	}
	if err := set.Err(); err != nil {
		_ = app.Rollback()
		return st, nil, fmt.Errorf("select series: %w", err)
	}
	if err := app.Commit(); err != nil {
		return st, nil, fmt.Errorf("commit merged samples: %w", err)
	}
	for _, s := range srcs {
		n, err := copyLogs(ctx, s.Logs(), dst.Logs(), minT, maxT)
		st.Entries += n
		if err != nil {
			return st, nil, err
		}
	}
	n, ids, err := copyTraces(ctx, srcs, dst.Traces())
	st.Spans = n
	return st, ids, err
}

// copyTraces pushes every trace of srcs into dst, source after source in
// batches, and returns the spans copied and the traces' IDs (those of
// every source: the merged block's trace-ID filter). A trace in several sources (its
// spans arrived in two windows) gets the spans of each; dst assembles them
// into one trace as a single store that received them all would. A span
// of a trace that an earlier source held already (same span ID: a record
// replayed into both windows) is dropped. Each span keeps its stream's
// labels.
func copyTraces(ctx context.Context, srcs []*storage.Substrate, dst *tracestore.Store) (int, map[traceentry.TraceID]struct{}, error) {
	var (
		batch []tracestore.ResourceSpans
		size  int
		n     int
	)
	push := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := dst.Push(ctx, batch)
		if err != nil {
			return fmt.Errorf("push merged spans: %w", err)
		}
		n += res.Accepted
		batch, size = batch[:0], 0
		return nil
	}
	// copied are the traces of the sources before the current one: only
	// those can have spans in dst already.
	copied := map[traceentry.TraceID]struct{}{}
	for _, src := range srcs {
		var current []traceentry.TraceID
		err := src.Traces().Export(ctx, 0, 0, func(id traceentry.TraceID, rs []tracestore.ResourceSpans) error {
			current = append(current, id)
			if _, ok := copied[id]; ok {
				if err := push(); err != nil {
					return err
				}
				var err error
				if rs, err = withoutStored(ctx, dst, id, rs); err != nil {
					return err
				}
			}
			for _, r := range rs {
				if len(r.Spans) == 0 {
					continue
				}
				// The spans' attributes and resources may be kept; the
				// slices are Export's until we return.
				batch = append(batch, tracestore.ResourceSpans{Labels: r.Labels, Spans: slices.Clone(r.Spans)})
				size += len(r.Spans)
			}
			if size >= compactBatch {
				return push()
			}
			return nil
		})
		if err != nil {
			return n, nil, fmt.Errorf("copy traces: %w", err)
		}
		for _, id := range current {
			copied[id] = struct{}{}
		}
	}
	err := push() // before n is read: push counts what it pushes
	return n, copied, err
}

// withoutStored returns rs without the spans of trace id that dst holds
// already.
func withoutStored(ctx context.Context, dst *tracestore.Store, id traceentry.TraceID, rs []tracestore.ResourceSpans) ([]tracestore.ResourceSpans, error) {
	tr, err := dst.FindTraceByID(ctx, id, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("find merged trace %s: %w", id, err)
	}
	if tr == nil {
		return rs, nil
	}
	have := make(map[traceentry.SpanID]struct{}, len(tr.Spans))
	for i := range tr.Spans {
		have[tr.Spans[i].SpanID] = struct{}{}
	}
	out := make([]tracestore.ResourceSpans, 0, len(rs))
	for _, r := range rs {
		kept := tracestore.ResourceSpans{Labels: r.Labels}
		for _, sp := range r.Spans {
			if _, dup := have[sp.SpanID]; !dup {
				kept.Spans = append(kept.Spans, sp)
			}
		}
		out = append(out, kept)
	}
	return out, nil
}

// copyLogs pushes every stream of src with entries in [minT, maxT] (unix
// ms) into dst, in batches, and returns the entries copied.
func copyLogs(ctx context.Context, src, dst *logstore.Store, minT, maxT int64) (int, error) {
	start, end := int64(math.MinInt64), int64(math.MaxInt64)
	if minT > math.MinInt64/int64(1e6) {
		start = minT * 1e6
	}
	if maxT < math.MaxInt64/int64(1e6)-1 {
		end = (maxT + 1) * 1e6
	}
	it, err := src.Select(ctx, logentry.SelectParams{Start: start, End: end, Direction: logentry.Forward})
	if err != nil {
		return 0, fmt.Errorf("select log streams: %w", err)
	}
	defer it.Close()
	var (
		batch []logstore.PushStream
		n     int
		size  int
	)
	push := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := dst.Push(ctx, batch); err != nil {
			return fmt.Errorf("push merged log streams: %w", err)
		}
		batch, size = batch[:0], 0
		return nil
	}
	for it.Next() {
		ls, e := it.At()
		if len(batch) == 0 || !labels.Equal(batch[len(batch)-1].Labels, ls) {
			batch = append(batch, logstore.PushStream{Labels: ls.Copy()})
		}
		e.Line = strings.Clone(e.Line)
		e.Metadata = e.Metadata.Copy()
		last := &batch[len(batch)-1]
		last.Entries = append(last.Entries, e)
		n++
		if size++; size >= compactBatch {
			if err := push(); err != nil {
				return n, err
			}
		}
	}
	if err := it.Err(); err != nil {
		return n, fmt.Errorf("read log streams: %w", err)
	}
	return n, push()
}

type compactorMetrics struct {
	merged, sources, deleted, failures prometheus.Counter
	duration                           prometheus.Histogram
}

func newCompactorMetrics(r prometheus.Registerer) *compactorMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &compactorMetrics{
		merged:   c("weft_block_compactor_blocks_written_total", "Merged blocks uploaded to the bucket."),
		sources:  c("weft_block_compactor_sources_merged_total", "Blocks merged into a larger one."),
		deleted:  c("weft_block_compactor_blocks_deleted_total", "Blocks deleted because a merged block replaced them."),
		failures: c("weft_block_compactor_failures_total", "Compaction passes that failed (retried next interval)."),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "weft_block_compactor_merge_duration_seconds",
			Help: "Time to download, merge and upload one block.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}),
	}
	if r != nil {
		r.MustRegister(m.merged, m.sources, m.deleted, m.failures, m.duration)
	}
	return m
}

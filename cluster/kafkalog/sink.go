package kafkalog

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// producer is what a Sink writes through; *Producer provides it.
type producer interface {
	Produce(ctx context.Context, recs []Produced) ([]int64, error)
}

// Sink is the distributor's store: a Prometheus AppendableV2 (remote write,
// OTLP metrics) and a log Pusher (Loki push, OTLP logs) whose commits produce
// records to the partitions their series and streams hash to, and return
// only after the brokers acknowledged every record. Errors of Commit and
// Push wrap ingest.ErrUnavailable. Safe for concurrent use; appenders are
// not.
type Sink struct {
	p          producer
	partitions int32
	maxBytes   int
	encoders   sync.Pool
}

// NewSink returns a sink producing through p to partitions partitions
// (positive), splitting records above maxRecordBytes (0: the default).
func NewSink(p producer, partitions int32, maxRecordBytes int) *Sink {
	if maxRecordBytes <= 0 {
		maxRecordBytes = DefaultMaxRecordBytes
	}
	return &Sink{p: p, partitions: partitions, maxBytes: maxRecordBytes,
		encoders: sync.Pool{New: func() any { return record.NewEncoder() }}}
}

// AppenderV2 implements storage.AppendableV2.
func (s *Sink) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	return &sinkAppender{s: s, ctx: ctx, index: map[uint64][]int{}}
}

// sinkAppender buffers one transaction's samples by series. The labels,
// histograms and exemplar values it is given stay referenced until Commit
// or Rollback: every weft ingest path commits before it reuses them.
type sinkAppender struct {
	s      *Sink
	ctx    context.Context
	series []record.Series
	hashes []uint64
	index  map[uint64][]int // label hash → indexes in series
}

// Append implements storage.AppenderV2. It never rejects: validation is the
// ingest path's, storage-level checks (out of order, duplicates) the
// ingester's.
func (a *sinkAppender) Append(_ promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AppendV2Options) (promstorage.SeriesRef, error) {
	hash := record.Hash(ls)
	i := -1
	for _, j := range a.index[hash] {
		if labels.Equal(a.series[j].Labels, ls) {
			i = j
			break
		}
	}
	if i < 0 {
		i = len(a.series)
		a.series = append(a.series, record.Series{Labels: ls, FamilyName: strings.Clone(opts.MetricFamilyName), Metadata: opts.Metadata})
		a.hashes = append(a.hashes, hash)
		a.index[hash] = append(a.index[hash], i)
	}
	smp := record.Sample{T: t, ST: st, V: v, H: h, FH: fh, RejectOOO: opts.RejectOutOfOrder}
	if len(opts.Exemplars) > 0 {
		smp.Exemplars = slices.Clone(opts.Exemplars)
	}
	a.series[i].Samples = append(a.series[i].Samples, smp)
	return promstorage.SeriesRef(hash), nil
}

// AppendExemplars implements storage.ExemplarAppenderV2: the exemplars join
// the series' last sample.
func (a *sinkAppender) AppendExemplars(_ promstorage.SeriesRef, ls labels.Labels, es []exemplar.Exemplar) (promstorage.SeriesRef, error) {
	hash := record.Hash(ls)
	for _, j := range a.index[hash] {
		if labels.Equal(a.series[j].Labels, ls) && len(a.series[j].Samples) > 0 {
			last := &a.series[j].Samples[len(a.series[j].Samples)-1]
			last.Exemplars = append(last.Exemplars, es...)
			return promstorage.SeriesRef(hash), nil
		}
	}
	return promstorage.SeriesRef(hash), nil
}

// Commit produces the transaction's records and waits for their
// acknowledgement.
func (a *sinkAppender) Commit() error {
	if len(a.series) == 0 {
		return nil
	}
	byPart := make(map[int32][]record.Series)
	for i := range a.series {
		p := record.Partition(a.hashes[i], a.s.partitions)
		byPart[p] = append(byPart[p], a.series[i])
	}
	enc := a.s.encoders.Get().(*record.Encoder)
	defer a.s.encoders.Put(enc)
	var recs []Produced
	for _, p := range sortedKeys(byPart) {
		recs = a.s.splitMetrics(enc, recs, p, byPart[p])
	}
	a.series = nil
	_, err := a.s.p.Produce(a.ctx, recs)
	return err
}

// Rollback implements storage.AppenderV2: nothing was produced.
func (a *sinkAppender) Rollback() error {
	a.series = nil
	return nil
}

// split appends the records of items on partition p, halving items (or,
// for one item, its samples or entries: halve) until each record fits in
// maxBytes; a single sample larger than that goes as it is (the broker
// decides).
func split[T any](dst []Produced, p int32, kind record.Kind, maxBytes int, items []T, encode func([]T) []byte, halve func(T) (T, T, bool)) []Produced {
	b := encode(items)
	if len(b) <= maxBytes {
		return append(dst, Produced{Partition: p, Kind: kind, Value: b})
	}
	if len(items) > 1 {
		dst = split(dst, p, kind, maxBytes, items[:len(items)/2], encode, halve)
		return split(dst, p, kind, maxBytes, items[len(items)/2:], encode, halve)
	}
	lo, hi, ok := halve(items[0])
	if !ok {
		return append(dst, Produced{Partition: p, Kind: kind, Value: b})
	}
	dst = split(dst, p, kind, maxBytes, []T{lo}, encode, halve)
	return split(dst, p, kind, maxBytes, []T{hi}, encode, halve)
}

func (s *Sink) splitMetrics(enc *record.Encoder, dst []Produced, p int32, series []record.Series) []Produced {
	return split(dst, p, record.KindMetrics, s.maxBytes, series, func(ss []record.Series) []byte { return enc.AppendMetrics(nil, ss) },
		halves(func(s *record.Series) *[]record.Sample { return &s.Samples }))
}

// halves returns split's halve for items whose list items returns: the
// item twice, each with one half of the list (false when it holds one
// element or none).
func halves[T, E any](items func(*T) *[]E) func(T) (T, T, bool) {
	return func(one T) (T, T, bool) {
		l := *items(&one)
		if len(l) <= 1 {
			return one, one, false
		}
		lo, hi := one, one
		*items(&lo), *items(&hi) = l[:len(l)/2], l[len(l)/2:]
		return lo, hi, true
	}
}

func (s *Sink) splitLogs(enc *record.Encoder, dst []Produced, p int32, streams []logstore.PushStream) []Produced {
	return split(dst, p, record.KindLogs, s.maxBytes, streams, func(ss []logstore.PushStream) []byte { return enc.AppendLogs(nil, ss) },
		halves(func(s *logstore.PushStream) *[]logentry.Entry { return &s.Entries }))
}

// Push implements the log ingest paths' Pusher (ingest/loki.Pusher): the
// streams go to their partitions' records.
func (s *Sink) Push(ctx context.Context, streams []logstore.PushStream) error {
	byPart := make(map[int32][]logstore.PushStream)
	for _, ps := range streams {
		if len(ps.Entries) == 0 {
			continue
		}
		if ps.Labels.IsEmpty() {
			return logstore.ErrEmptyLabels
		}
		p := record.PartitionOf(ps.Labels, s.partitions)
		byPart[p] = append(byPart[p], ps)
	}
	if len(byPart) == 0 {
		return nil
	}
	enc := s.encoders.Get().(*record.Encoder)
	defer s.encoders.Put(enc)
	var recs []Produced
	for _, p := range sortedKeys(byPart) {
		recs = s.splitLogs(enc, recs, p, byPart[p])
	}
	_, err := s.p.Produce(ctx, recs)
	return err
}

func sortedKeys[V any](m map[int32]V) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// PushTraces implements the OTLP traces receiver's Pusher
// (ingest/otlptraces.Pusher): each span goes to the partition of its trace
// ID (record.TracePartition), so one partition, and one ingester, holds
// every span of a trace whichever resources sent them. It returns once the
// brokers acknowledged every record; every span is then accepted (the
// retention is the ingester's to apply).
func (s *Sink) PushTraces(ctx context.Context, batch []tracestore.ResourceSpans) (tracestore.PushResult, error) {
	byPart := make(map[int32][]tracestore.ResourceSpans)
	n := 0
	for _, rs := range batch {
		// Spans of one resource on one partition stay together, in order.
		for i := range rs.Spans {
			p := record.TracePartition(rs.Spans[i].TraceID, s.partitions)
			list := byPart[p]
			if len(list) == 0 || !sameResource(list[len(list)-1], rs) {
				list = append(list, tracestore.ResourceSpans{Labels: rs.Labels})
			}
			list[len(list)-1].Spans = append(list[len(list)-1].Spans, rs.Spans[i])
			byPart[p] = list
			n++
		}
	}
	if n == 0 {
		return tracestore.PushResult{}, nil
	}
	enc := s.encoders.Get().(*record.Encoder)
	defer s.encoders.Put(enc)
	var recs []Produced
	var encErr error
	encode := func(rs []tracestore.ResourceSpans) []byte {
		b, err := enc.AppendTraces(nil, rs)
		if err != nil && encErr == nil {
			encErr = err
		}
		return b
	}
	for _, p := range sortedKeys(byPart) {
		recs = split(recs, p, record.KindTraces, s.maxBytes, byPart[p], encode,
			halves(func(r *tracestore.ResourceSpans) *[]traceentry.Span { return &r.Spans }))
	}
	if encErr != nil {
		return tracestore.PushResult{}, encErr
	}
	if _, err := s.p.Produce(ctx, recs); err != nil {
		return tracestore.PushResult{}, err
	}
	return tracestore.PushResult{Accepted: n}, nil
}

// sameResource reports whether a holds spans of b's resource (the spans of
// one OTLP ResourceSpans point to one Resource).
func sameResource(a, b tracestore.ResourceSpans) bool {
	return len(a.Spans) > 0 && len(b.Spans) > 0 && a.Spans[0].Resource == b.Spans[0].Resource && labels.Equal(a.Labels, b.Labels)
}

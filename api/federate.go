package api

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/query"
)

// FederateOptions configure NewFederateHandler. Zero fields take the
// defaults of DefaultFederateOptions.
type FederateOptions struct {
	// LookbackDelta is how far back a series' latest sample may lie to be
	// federated, as for an instant query. Default 5m (Prometheus').
	LookbackDelta time.Duration
	// ExternalLabels are added to every series that lacks them, as
	// Prometheus adds its external labels. instance="" is added when they
	// have no instance, so the scraper's instance label is not attached.
	ExternalLabels labels.Labels
	// Logger receives errors after the answer started; nil discards them.
	Logger *slog.Logger
	// Now returns the evaluation time; nil is time.Now. For tests.
	Now func() time.Time
}

// DefaultFederateOptions returns the defaults documented on FederateOptions.
func DefaultFederateOptions() FederateOptions {
	return FederateOptions{LookbackDelta: 5 * time.Minute}
}

// NewFederateHandler serves Prometheus' federation endpoint, GET /federate:
// the latest sample (within LookbackDelta of now) of every series matching
// any match[] selector, in the exposition format the scraper negotiates
// (protobuf or text), with timestamps, grouped in families by metric name.
// Floats are untyped, native histograms are histograms (protobuf formats
// only, as in Prometheus), custom-bucket histograms are classic histograms.
// Stale markers are left out. Whether the scraper keeps the series' own job
// and instance is its honor_labels setting, as with Prometheus. A bad
// selector answers 400; a storage error before the answer started, 500.
// Safe for concurrent use.
func NewFederateHandler(q storage.Queryable, opts FederateOptions) http.Handler {
	d := DefaultFederateOptions()
	if opts.LookbackDelta <= 0 {
		opts.LookbackDelta = d.LookbackDelta
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ext := opts.ExternalLabels.Map()
	if _, ok := ext[model.InstanceLabel]; !ok {
		ext[model.InstanceLabel] = ""
	}
	h := &federateHandler{q: q, opts: opts, parser: query.NewParser()}
	for name, v := range ext {
		h.external = append(h.external, labels.Label{Name: name, Value: v})
	}
	slices.SortFunc(h.external, func(a, b labels.Label) int { return cmp.Compare(a.Name, b.Name) })
	return h
}

type federateHandler struct {
	q        storage.Queryable
	opts     FederateOptions
	external []labels.Label // sorted by name, instance included
	parser   parser.Parser
}

// federatedSample is the latest sample of one series.
type federatedSample struct {
	ls labels.Labels
	t  int64
	f  float64
	fh *histogram.FloatHistogram // nil for a float
}

func (h *federateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, fmt.Sprintf("error parsing form values: %v", err), http.StatusBadRequest)
		return
	}
	var sets [][]*labels.Matcher
	for _, s := range r.Form["match[]"] {
		ms, err := h.parser.ParseMetricSelector(s)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sets = append(sets, ms)
	}
	maxt := h.opts.Now().UnixMilli()
	mint := maxt - h.opts.LookbackDelta.Milliseconds()
	samples, err := h.latest(r, sets, mint, maxt)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, r.Context().Err()) {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, err.Error(), code)
		return
	}
	// Families are runs of one metric name: sort by name, keeping the
	// label order within a name (series with a label name sorting before
	// __name__, such as dcgm-exporter's UUID, would split them otherwise).
	slices.SortStableFunc(samples, func(a, b federatedSample) int {
		return cmp.Compare(a.ls.Get(model.MetricNameLabel), b.ls.Get(model.MetricNameLabel))
	})
	format := expfmt.NegotiateAccept(r.Header,
		expfmt.NewFormat(expfmt.TypeProtoDelim), expfmt.NewFormat(expfmt.TypeProtoText),
		expfmt.NewFormat(expfmt.TypeProtoCompact), expfmt.NewFormat(expfmt.TypeTextPlain))
	w.Header().Set("Content-Type", string(format))
	if err := h.encode(expfmt.NewEncoder(w, format), format.FormatType(), samples); err != nil {
		h.opts.Logger.Error("federate_encode_failed", "err", err)
	}
}

// latest returns the latest sample in [mint, maxt] of every selected series
// that has one, stale markers excluded, in the merged sets' order.
func (h *federateHandler) latest(r *http.Request, sets [][]*labels.Matcher, mint, maxt int64) ([]federatedSample, error) {
	if len(sets) == 0 {
		return nil, nil
	}
	q, err := h.q.Querier(mint, maxt)
	if err != nil {
		return nil, fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: mint, End: maxt}
	sss := make([]storage.SeriesSet, 0, len(sets))
	for _, ms := range sets {
		sss = append(sss, q.Select(r.Context(), true, hints, ms...))
	}
	set := storage.NewMergeSeriesSet(sss, 0, storage.ChainedSeriesMerge)
	var (
		out []federatedSample
		it  chunkenc.Iterator
	)
	for set.Next() {
		s := set.At()
		it = s.Iterator(it)
		fs, ok := lastSample(it, mint, maxt)
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("read series %s: %w", s.Labels(), err)
		}
		if !ok {
			continue
		}
		fs.ls = s.Labels()
		out = append(out, fs)
	}
	if err := set.Err(); err != nil {
		return nil, fmt.Errorf("select: %w", err)
	}
	return out, nil
}

// lastSample returns the newest sample in [mint, maxt]; ok is false when
// there is none or it is a stale marker.
func lastSample(it chunkenc.Iterator, mint, maxt int64) (federatedSample, bool) {
	var (
		s  federatedSample
		vt = chunkenc.ValNone
	)
	for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
		t := it.AtT()
		if t > maxt {
			break
		}
		if t < mint {
			continue
		}
		vt, s.t = typ, t
		switch typ {
		case chunkenc.ValFloat:
			_, s.f = it.At()
			s.fh = nil
		case chunkenc.ValHistogram, chunkenc.ValFloatHistogram:
			_, s.fh = it.AtFloatHistogram(nil) // a copy: the iterator reuses nothing of it
		}
	}
	switch {
	case vt == chunkenc.ValNone:
		return s, false
	case s.fh != nil:
		return s, !value.IsStaleNaN(s.fh.Sum)
	}
	return s, !value.IsStaleNaN(s.f)
}

// encode writes the samples, sorted by metric name, as metric families.
func (h *federateHandler) encode(enc expfmt.Encoder, ft expfmt.FormatType, samples []federatedSample) error {
	protobuf := ft == expfmt.TypeProtoDelim || ft == expfmt.TypeProtoText || ft == expfmt.TypeProtoCompact
	var fam *dto.MetricFamily
	for _, s := range samples {
		name := s.ls.Get(model.MetricNameLabel)
		if name == "" {
			continue // nameless series are not federated
		}
		typ := dto.MetricType_UNTYPED
		if s.fh != nil {
			if !s.fh.UsesCustomBuckets() && !protobuf {
				continue // text formats cannot carry native histograms
			}
			typ = dto.MetricType_HISTOGRAM
			if s.fh.CounterResetHint == histogram.GaugeType {
				typ = dto.MetricType_GAUGE_HISTOGRAM
			}
		}
		if fam == nil || fam.GetName() != name || fam.GetType() != typ {
			if fam != nil {
				if err := enc.Encode(fam); err != nil {
					return err
				}
			}
			fam = &dto.MetricFamily{Name: proto.String(name), Type: typ.Enum()}
		}
		fam.Metric = append(fam.Metric, h.metric(s))
	}
	if fam != nil {
		return enc.Encode(fam)
	}
	return nil
}

// metric is one sample as an exposition metric: its labels (empty values
// and __name__ left out) with the external labels it lacks.
func (h *federateHandler) metric(s federatedSample) *dto.Metric {
	m := &dto.Metric{TimestampMs: proto.Int64(s.t)}
	s.ls.Range(func(l labels.Label) {
		if l.Value != "" && l.Name != model.MetricNameLabel {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(l.Name), Value: proto.String(l.Value)})
		}
	})
	for _, l := range h.external {
		if !s.ls.Has(l.Name) {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(l.Name), Value: proto.String(l.Value)})
		}
	}
	switch {
	case s.fh == nil:
		m.Untyped = &dto.Untyped{Value: proto.Float64(s.f)}
	case s.fh.UsesCustomBuckets():
		m.Histogram = classicHistogram(s.fh)
	default:
		m.Histogram = nativeHistogram(s.fh)
	}
	return m
}

// nativeHistogram is an exponential-bucket histogram in the protobuf
// exposition's native fields.
func nativeHistogram(fh *histogram.FloatHistogram) *dto.Histogram {
	spans := func(ss []histogram.Span) []*dto.BucketSpan {
		out := make([]*dto.BucketSpan, len(ss))
		for i, sp := range ss {
			out[i] = &dto.BucketSpan{Offset: proto.Int32(sp.Offset), Length: proto.Uint32(sp.Length)}
		}
		return out
	}
	return &dto.Histogram{
		SampleCountFloat: proto.Float64(fh.Count),
		SampleSum:        proto.Float64(fh.Sum),
		Schema:           proto.Int32(fh.Schema),
		ZeroThreshold:    proto.Float64(fh.ZeroThreshold),
		ZeroCountFloat:   proto.Float64(fh.ZeroCount),
		PositiveSpan:     spans(fh.PositiveSpans),
		PositiveCount:    fh.PositiveBuckets,
		NegativeSpan:     spans(fh.NegativeSpans),
		NegativeCount:    fh.NegativeBuckets,
	}
}

// classicHistogram is a custom-bucket histogram as cumulative buckets (the
// +Inf bucket is implied by the count, as the protobuf format allows; the
// text encoder adds it).
func classicHistogram(fh *histogram.FloatHistogram) *dto.Histogram {
	h := &dto.Histogram{SampleCountFloat: proto.Float64(fh.Count), SampleSum: proto.Float64(fh.Sum)}
	counts := make([]float64, len(fh.CustomValues))
	for it := fh.PositiveBucketIterator(); it.Next(); {
		if b := it.At(); int(b.Index) < len(counts) {
			counts[b.Index] += b.Count
		}
	}
	cum := 0.0
	for i, le := range fh.CustomValues {
		cum += counts[i]
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(le), CumulativeCountFloat: proto.Float64(cum)})
	}
	return h
}

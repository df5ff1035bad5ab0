package bench

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// encodeChunks drains every chunk's buffered samples into one payload per
// chunk in the segment's protocol. Draining is sequential (it touches the
// fleet); encoding and compression run on all cores, and payload order is
// kept.
func encodeChunks(sd *SegmentData, chunks []chunk) error {
	type job struct {
		ss   []*series
		lane int
	}
	var jobs []job
	for _, c := range chunks {
		var ss []*series
		for _, u := range c.units {
			u.drain(func(s *series) {
				// drain clears s.buf after f returns, so copy what we keep.
				cp := *s
				cp.buf = append([]sample(nil), s.buf...)
				ss = append(ss, &cp)
			})
		}
		if len(ss) > 0 {
			jobs = append(jobs, job{ss, c.lane})
		}
	}
	out := make([]Payload, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				out[i], errs[i] = encode(sd.Protocol, jobs[i].ss)
				out[i].Lane = jobs[i].lane
			}
		}()
	}
	wg.Wait()
	for i, p := range out {
		if errs[i] != nil {
			return fmt.Errorf("encode %s payload: %w", sd.Protocol, errs[i])
		}
		sd.Payloads = append(sd.Payloads, p)
		sd.Samples += p.Samples
		sd.Bytes += len(p.Body)
	}
	return nil
}

func encode(proto Protocol, ss []*series) (Payload, error) {
	p := Payload{Protocol: proto, Series: len(ss)}
	for _, s := range ss {
		p.Samples += len(s.buf)
	}
	var err error
	switch proto {
	case RW1:
		p.Body, err = encodeRW1(ss)
	case RW2:
		p.Body, err = encodeRW2(ss)
	case OTLP:
		p.Body, err = encodeOTLP(ss)
	default:
		err = fmt.Errorf("unknown protocol %q", proto)
	}
	return p, err
}

func encodeRW1(ss []*series) ([]byte, error) {
	req := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, len(ss))}
	for i, s := range ss {
		ts := &req.Timeseries[i]
		ts.Labels = s.labels
		ts.Samples = make([]prompb.Sample, len(s.buf))
		for j, smp := range s.buf {
			ts.Samples[j] = prompb.Sample{Timestamp: smp.t, Value: smp.v}
		}
	}
	raw, err := req.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshal rw1: %w", err)
	}
	return s2.EncodeSnappy(nil, raw), nil
}

func encodeRW2(ss []*series) ([]byte, error) {
	st := writev2.NewSymbolTable()
	req := writev2.Request{Timeseries: make([]writev2.TimeSeries, len(ss))}
	for i, s := range ss {
		ts := &req.Timeseries[i]
		ts.LabelsRefs = make([]uint32, 0, 2*len(s.labels))
		for _, l := range s.labels {
			ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(l.Name), st.Symbolize(l.Value))
		}
		ts.Samples = make([]writev2.Sample, len(s.buf))
		for j, smp := range s.buf {
			ts.Samples[j] = writev2.Sample{Timestamp: smp.t, Value: smp.v}
		}
		switch s.kind {
		case kindCounter:
			ts.Metadata.Type = writev2.Metadata_METRIC_TYPE_COUNTER
		case kindHistogram:
			ts.Metadata.Type = writev2.Metadata_METRIC_TYPE_HISTOGRAM
		default:
			ts.Metadata.Type = writev2.Metadata_METRIC_TYPE_GAUGE
		}
	}
	req.Symbols = st.Symbols()
	raw, err := req.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshal rw2: %w", err)
	}
	return s2.EncodeSnappy(nil, raw), nil
}

// histAcc gathers the _bucket/_sum/_count series of one classic histogram
// so OTLP gets a real Histogram data point per scrape.
type histAcc struct {
	attrs  []prompb.Label
	bounds []float64
	cum    [][]sample // per bound (+Inf last), samples in time order
	sum    []sample
	count  []sample
}

func encodeOTLP(ss []*series) ([]byte, error) {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("weft-bench")
	metrics := map[string]pmetric.Metric{}
	metric := func(name string, kind metricKind) pmetric.Metric {
		if m, ok := metrics[name]; ok {
			return m
		}
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		switch kind {
		case kindCounter:
			m.SetEmptySum().SetIsMonotonic(true)
			m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		case kindHistogram:
			m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		default:
			m.SetEmptyGauge()
		}
		metrics[name] = m
		return m
	}
	hists := map[string]*histAcc{}
	var hkeys []string
	for _, s := range ss {
		if s.kind == kindHistogram {
			if err := addHistPart(hists, &hkeys, s); err != nil {
				return nil, err
			}
			continue
		}
		m := metric(s.name, s.kind)
		var dps pmetric.NumberDataPointSlice
		if s.kind == kindCounter {
			dps = m.Sum().DataPoints()
		} else {
			dps = m.Gauge().DataPoints()
		}
		for _, smp := range s.buf {
			dp := dps.AppendEmpty()
			putAttrs(dp.Attributes(), s.labels)
			dp.SetTimestamp(pcommon.Timestamp(smp.t * 1e6))
			if math.Float64bits(smp.v) == math.Float64bits(staleNaN) {
				dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
				continue
			}
			dp.SetDoubleValue(smp.v)
		}
	}
	for _, k := range hkeys {
		h := hists[k]
		family := k[:strings.IndexByte(k, 0)]
		dps := metric(family, kindHistogram).Histogram().DataPoints()
		for i := range h.count {
			dp := dps.AppendEmpty()
			putAttrs(dp.Attributes(), h.attrs)
			dp.SetTimestamp(pcommon.Timestamp(h.count[i].t * 1e6))
			dp.SetCount(uint64(h.count[i].v))
			if i < len(h.sum) {
				dp.SetSum(h.sum[i].v)
			}
			dp.ExplicitBounds().FromRaw(h.bounds[:len(h.bounds)-1])
			prev := 0.0
			for _, c := range h.cum {
				if i < len(c) {
					dp.BucketCounts().Append(uint64(c[i].v - prev))
					prev = c[i].v
				}
			}
		}
	}
	raw, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		return nil, fmt.Errorf("marshal otlp: %w", err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("gzip otlp: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip otlp: %w", err)
	}
	return buf.Bytes(), nil
}

// addHistPart files one histogram component series under its histogram.
func addHistPart(hists map[string]*histAcc, keys *[]string, s *series) error {
	var attrs []prompb.Label
	le := ""
	for _, l := range s.labels {
		switch l.Name {
		case "__name__":
		case "le":
			le = l.Value
		default:
			attrs = append(attrs, l)
		}
	}
	var kb strings.Builder
	kb.WriteString(s.family)
	kb.WriteByte(0)
	for _, l := range attrs {
		kb.WriteString(l.Name + "\xff" + l.Value + "\xff")
	}
	key := kb.String()
	h := hists[key]
	if h == nil {
		h = &histAcc{attrs: attrs}
		hists[key] = h
		*keys = append(*keys, key)
	}
	switch {
	case strings.HasSuffix(s.name, "_bucket"):
		b, err := strconv.ParseFloat(le, 64)
		if err != nil {
			return fmt.Errorf("bucket bound %q: %w", le, err)
		}
		i := sort.SearchFloat64s(h.bounds, b)
		h.bounds = append(h.bounds, 0)
		copy(h.bounds[i+1:], h.bounds[i:])
		h.bounds[i] = b
		h.cum = append(h.cum, nil)
		copy(h.cum[i+1:], h.cum[i:])
		h.cum[i] = s.buf
	case strings.HasSuffix(s.name, "_sum"):
		h.sum = s.buf
	default:
		h.count = s.buf
	}
	return nil
}

func putAttrs(m pcommon.Map, ls []prompb.Label) {
	m.EnsureCapacity(len(ls))
	for _, l := range ls {
		if l.Name != "__name__" && l.Name != "le" {
			m.PutStr(l.Name, l.Value)
		}
	}
}

package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"

	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/storage/chunkenc"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/tracestore"
)

// Format constants (docs/format/ingest-log.md).
const (
	magic   = 'w'
	version = 1
)

// Kind is the signal a record carries.
type Kind uint8

// Record kinds.
const (
	KindMetrics Kind = 1
	KindLogs    Kind = 2
	KindTraces  Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindMetrics:
		return "metrics"
	case KindLogs:
		return "logs"
	case KindTraces:
		return "traces"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Sample value kinds (the low two bits of a sample's flags).
const (
	valueFloat      = 0
	valueHistogram  = 1
	valueFHistogram = 2

	flagST        = 1 << 2 // a start timestamp follows t
	flagExemplars = 1 << 3 // exemplars follow the value
	flagRejectOOO = 1 << 4 // AppendV2Options.RejectOutOfOrder
	flagsKnown    = 0x1f
)

// Sentinels. Inspect with errors.Is.
var (
	// ErrCorrupt wraps every decoding error: the bytes are not a record of
	// a version this package reads.
	ErrCorrupt = errors.New("corrupt ingest log record")
)

// Series is one metric series of a record with its samples in append order.
type Series struct {
	Labels labels.Labels
	// FamilyName is AppendV2Options.MetricFamilyName ("" when unknown).
	FamilyName string
	// Metadata is the series' metadata (zero when unknown).
	Metadata metadata.Metadata
	Samples  []Sample
}

// Sample is one appended sample: a float (H and FH nil), an integer
// histogram (H) or a float histogram (FH).
type Sample struct {
	T, ST     int64 // ST 0: unknown
	V         float64
	H         *histogram.Histogram
	FH        *histogram.FloatHistogram
	Exemplars []exemplar.Exemplar
	RejectOOO bool
}

// Record is a decoded record: Series when Kind is KindMetrics, Streams when
// it is KindLogs, Resources when it is KindTraces.
type Record struct {
	Kind      Kind
	Series    []Series
	Streams   []logstore.PushStream
	Resources []tracestore.ResourceSpans
}

// Encoder builds records. Its buffers are reused between calls; not safe for
// concurrent use.
type Encoder struct {
	syms    map[string]uint64
	symList []string
	body    []byte
	scratch []*histogram.Histogram
	fscr    []*histogram.FloatHistogram
	otlp    []byte
}

// NewEncoder returns an empty Encoder.
func NewEncoder() *Encoder { return &Encoder{syms: map[string]uint64{}} }

func (e *Encoder) reset() {
	clear(e.syms)
	e.symList = e.symList[:0]
	e.body = e.body[:0]
}

func (e *Encoder) ref(s string) uint64 {
	if r, ok := e.syms[s]; ok {
		return r
	}
	r := uint64(len(e.symList))
	e.syms[s] = r
	e.symList = append(e.symList, s)
	return r
}

func (e *Encoder) putRef(s string) { e.body = binary.AppendUvarint(e.body, e.ref(s)) }

func (e *Encoder) putLabels(ls labels.Labels) {
	e.body = binary.AppendUvarint(e.body, uint64(ls.Len()))
	ls.Range(func(l labels.Label) {
		e.putRef(l.Name)
		e.putRef(l.Value)
	})
}

// finish appends the header, the symbol table and the body to dst.
func (e *Encoder) finish(dst []byte, k Kind) []byte {
	dst = append(dst, magic, version, byte(k))
	dst = binary.AppendUvarint(dst, uint64(len(e.symList)))
	for _, s := range e.symList {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return append(dst, e.body...)
}

// AppendMetrics appends the record of series to dst.
func (e *Encoder) AppendMetrics(dst []byte, series []Series) []byte {
	e.reset()
	e.body = binary.AppendUvarint(e.body, uint64(len(series)))
	for i := range series {
		s := &series[i]
		e.putLabels(s.Labels)
		e.putRef(s.FamilyName)
		e.putRef(string(s.Metadata.Type))
		e.putRef(s.Metadata.Unit)
		e.putRef(s.Metadata.Help)
		e.body = binary.AppendUvarint(e.body, uint64(len(s.Samples)))
		prevT := int64(0)
		for j := range s.Samples {
			e.putSample(&s.Samples[j], prevT)
			prevT = s.Samples[j].T
		}
	}
	return e.finish(dst, KindMetrics)
}

func (e *Encoder) putSample(smp *Sample, prevT int64) {
	var flags byte
	switch {
	case smp.FH != nil:
		flags = valueFHistogram
	case smp.H != nil:
		flags = valueHistogram
	default:
		flags = valueFloat
	}
	if smp.ST != 0 {
		flags |= flagST
	}
	if len(smp.Exemplars) > 0 {
		flags |= flagExemplars
	}
	if smp.RejectOOO {
		flags |= flagRejectOOO
	}
	e.body = append(e.body, flags)
	e.body = binary.AppendVarint(e.body, smp.T-prevT)
	if smp.ST != 0 {
		e.body = binary.AppendVarint(e.body, smp.T-smp.ST)
	}
	switch flags & 3 {
	case valueFloat:
		e.body = binary.LittleEndian.AppendUint64(e.body, math.Float64bits(smp.V))
	case valueHistogram:
		e.scratch = append(e.scratch[:0], smp.H)
		e.body = chunkenc.AppendHistograms(e.body, e.scratch)
	case valueFHistogram:
		e.fscr = append(e.fscr[:0], smp.FH)
		e.body = chunkenc.AppendFloatHistograms(e.body, e.fscr)
	}
	if len(smp.Exemplars) > 0 {
		e.body = binary.AppendUvarint(e.body, uint64(len(smp.Exemplars)))
		for _, ex := range smp.Exemplars {
			e.putLabels(ex.Labels)
			e.body = binary.AppendVarint(e.body, ex.Ts)
			e.body = binary.LittleEndian.AppendUint64(e.body, math.Float64bits(ex.Value))
			hasTs := byte(0)
			if ex.HasTs {
				hasTs = 1
			}
			e.body = append(e.body, hasTs)
		}
	}
}

// AppendLogs appends the record of streams to dst.
func (e *Encoder) AppendLogs(dst []byte, streams []logstore.PushStream) []byte {
	e.reset()
	e.body = binary.AppendUvarint(e.body, uint64(len(streams)))
	for i := range streams {
		s := &streams[i]
		e.putLabels(s.Labels)
		e.body = binary.AppendUvarint(e.body, uint64(len(s.Entries)))
		prevT := int64(0)
		for _, en := range s.Entries {
			e.body = binary.AppendVarint(e.body, en.Timestamp-prevT)
			prevT = en.Timestamp
			e.body = binary.AppendUvarint(e.body, uint64(len(en.Line)))
			e.body = append(e.body, en.Line...)
			e.putLabels(en.Metadata)
		}
	}
	return e.finish(dst, KindLogs)
}

// AppendTraces appends the record of resources to dst: per resource its
// stream labels and its spans as OTLP protobuf (TracesData), which carries
// every span field the store keeps.
func (e *Encoder) AppendTraces(dst []byte, resources []tracestore.ResourceSpans) ([]byte, error) {
	e.reset()
	e.body = binary.AppendUvarint(e.body, uint64(len(resources)))
	for i := range resources {
		r := &resources[i]
		e.putLabels(r.Labels)
		var err error
		e.otlp, err = otlptraces.MarshalSpans(e.otlp[:0], r.Spans)
		if err != nil {
			return dst, err
		}
		e.body = binary.AppendUvarint(e.body, uint64(len(e.otlp)))
		e.body = append(e.body, e.otlp...)
	}
	return e.finish(dst, KindTraces), nil
}

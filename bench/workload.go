package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

// Protocol is a write protocol the replayer speaks.
type Protocol string

// Write protocols.
const (
	RW1  Protocol = "rw1"
	RW2  Protocol = "rw2"
	OTLP Protocol = "otlp"
)

// Segment is a share of the workload's scrape steps sent over one protocol.
// Segments follow each other in time, so every series stays in order.
type Segment struct {
	Protocol Protocol
	// Share is the fraction of scrape steps in this segment; shares are
	// normalised over all segments.
	Share float64
}

// WorkloadOptions are the generator's knobs. The same options and seed always
// produce byte-identical payloads.
type WorkloadOptions struct {
	Seed int64
	// ActiveSeries is the number of series that receive a sample at every
	// scrape (about 90% GPU series, 10% inference series).
	ActiveSeries int
	// LabelsPerSeries pads every series with static node labels up to this
	// many labels (the metric name included); 0 keeps the natural ~20.
	LabelsPerSeries int
	// ChurnPerMinute is how many new series per minute finished training runs
	// hand to their successors (a rotating run re-labels its GPUs' series).
	ChurnPerMinute int
	// SpikeSeries is the size of the burst of new series (new training runs
	// on new nodes) sent after the other segments; 0 disables spike mode.
	SpikeSeries int
	// SpikeSteps is how many scrapes each spike series gets.
	SpikeSteps     int
	ScrapeInterval time.Duration
	// Duration is the covered time span of the non-spike segments.
	Duration time.Duration
	// SamplesPerSeriesPerRequest groups this many consecutive scrapes of a
	// series into one request.
	SamplesPerSeriesPerRequest int
	// SamplesPerRequest is the target request size in samples.
	SamplesPerRequest int
	// Workers is the number of ordered send lanes; every series belongs to
	// exactly one lane, so its samples arrive in order.
	Workers int
	// Start is the timestamp of the first scrape. Zero means
	// now - Duration - SpikeSteps*ScrapeInterval - 2m, truncated to the minute.
	Start time.Time
	// Segments split the scrape steps between protocols, in order.
	Segments []Segment
}

// DefaultWorkloadOptions is the small scale.
func DefaultWorkloadOptions() WorkloadOptions {
	return WorkloadOptions{
		Seed:                       1,
		ActiveSeries:               20_000,
		ChurnPerMinute:             2_000,
		SpikeSeries:                20_000,
		SpikeSteps:                 2,
		ScrapeInterval:             15 * time.Second,
		Duration:                   20 * time.Minute,
		SamplesPerSeriesPerRequest: 1,
		SamplesPerRequest:          2_000, // Prometheus' max_samples_per_send default
		Workers:                    8,
		Segments:                   []Segment{{RW1, 0.7}, {RW2, 0.15}, {OTLP, 0.15}},
	}
}

// Validate reports options the generator cannot work with.
func (o WorkloadOptions) Validate() error {
	switch {
	case o.ActiveSeries < 1:
		return fmt.Errorf("active series %d < 1", o.ActiveSeries)
	case o.ScrapeInterval < time.Second:
		return fmt.Errorf("scrape interval %s < 1s", o.ScrapeInterval)
	case o.Duration < o.ScrapeInterval:
		return fmt.Errorf("duration %s shorter than the scrape interval", o.Duration)
	case o.SamplesPerSeriesPerRequest < 1 || o.SamplesPerRequest < 1 || o.Workers < 1:
		return fmt.Errorf("samples per series per request, samples per request and workers must be >= 1")
	case len(o.Segments) == 0:
		return fmt.Errorf("no segments")
	case o.ChurnPerMinute < 0 || o.SpikeSeries < 0:
		return fmt.Errorf("negative churn or spike")
	}
	for _, s := range o.Segments {
		if s.Share <= 0 {
			return fmt.Errorf("segment %s share %v <= 0", s.Protocol, s.Share)
		}
		if s.Protocol != RW1 && s.Protocol != RW2 && s.Protocol != OTLP {
			return fmt.Errorf("unknown protocol %q", s.Protocol)
		}
	}
	return nil
}

// Scale returns the workload options of a named scale: tiny (tests), small,
// medium (1M active series) or large.
func Scale(name string) (WorkloadOptions, error) {
	o := DefaultWorkloadOptions()
	switch name {
	case "tiny":
		o.ActiveSeries = 600
		o.ChurnPerMinute = 300
		o.SpikeSeries = 300
		o.Duration = 10 * time.Minute
		o.SamplesPerRequest = 500
		o.Workers = 4
	case "small":
	case "medium":
		o.ActiveSeries = 1_000_000
		o.ChurnPerMinute = 20_000
		o.SpikeSeries = 1_000_000
		o.ScrapeInterval = 30 * time.Second
		o.Duration = 10 * time.Minute
		o.SamplesPerSeriesPerRequest = 2
		o.SamplesPerRequest = 10_000
		o.Workers = 16
	case "large":
		o.ActiveSeries = 4_000_000
		o.ChurnPerMinute = 80_000
		o.SpikeSeries = 1_000_000
		o.ScrapeInterval = 30 * time.Second
		o.Duration = 10 * time.Minute
		o.SamplesPerSeriesPerRequest = 4
		o.SamplesPerRequest = 20_000
		o.Workers = 32
	default:
		return o, fmt.Errorf("unknown scale %q (tiny, small, medium, large)", name)
	}
	return o, nil
}

type metricKind uint8

const (
	kindGauge metricKind = iota
	kindCounter
	kindHistogram // a classic histogram's _bucket, _sum or _count series
)

type sample struct {
	t int64
	v float64
}

// series is one generated series; buf holds its samples of the block being
// encoded.
type series struct {
	labels []prompb.Label // sorted by name
	name   string
	family string // metric family (histogram base name) for metadata
	kind   metricKind
	buf    []sample
}

func newSeries(name, family string, kind metricKind, ls []prompb.Label) *series {
	all := make([]prompb.Label, 0, len(ls)+1)
	all = append(all, prompb.Label{Name: "__name__", Value: name})
	all = append(all, ls...)
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return &series{labels: all, name: name, family: family, kind: kind}
}

func (s *series) add(t int64, v float64) { s.buf = append(s.buf, sample{t, v}) }

// unit is a scrape target (a GPU node or an inference replica): it emits all
// of its series' samples for one scrape and belongs to one send lane.
type unit interface {
	scrape(g *generator, step int, t int64)
	// drain calls f for every series with buffered samples, then clears them.
	drain(f func(*series))
}

// jitter returns a deterministic scrape timestamp offset, as real scrapes
// never land exactly on the interval grid.
func jitter(r *rand.Rand, interval time.Duration) int64 {
	j := interval.Milliseconds() / 20 // ±5% of the interval
	if j == 0 {
		return 0
	}
	return r.Int64N(2*j+1) - j
}

// staleNaN is Prometheus' staleness marker (model/value.StaleNaN).
var staleNaN = math.Float64frombits(0x7ff0000000000002)

func itoa(i int) string { return strconv.Itoa(i) }

// padLabels returns static labels that bring a series with have labels up to
// want labels.
func padLabels(have, want int, node int) []prompb.Label {
	var out []prompb.Label
	for i := 0; have+i < want; i++ {
		out = append(out, prompb.Label{Name: "extra_" + itoa(i), Value: "v" + itoa(node%(10+i))})
	}
	return out
}

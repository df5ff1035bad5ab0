package scenario

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestDeterministic: the same name and options give the same bytes, for
// every signal; another seed gives other bytes.
func TestDeterministic(t *testing.T) {
	o := testOptions()
	o.Duration, o.Onset = 30*time.Minute, 10*time.Minute
	encode := func(name string, o Options) *Payloads {
		d, err := Generate(name, o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := d.Encode(EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, name := range []string{"nvlink-stall", "bad-model-version"} {
		a, b := encode(name, o), encode(name, o)
		for _, sig := range []struct {
			name string
			a, b []Request
		}{{"metrics", a.Metrics, b.Metrics}, {"loki", a.Loki, b.Loki}, {"otlp logs", a.OTLPLogs, b.OTLPLogs}, {"traces", a.Traces, b.Traces}} {
			if len(sig.a) == 0 || len(sig.a) != len(sig.b) {
				t.Fatalf("%s %s: %d and %d requests", name, sig.name, len(sig.a), len(sig.b))
			}
			for i := range sig.a {
				if !bytes.Equal(sig.a[i].Body, sig.b[i].Body) || sig.a[i].Lane != sig.b[i].Lane {
					t.Fatalf("%s %s: request %d differs between two runs of one seed", name, sig.name, i)
				}
			}
		}
		o2 := o
		o2.Seed++
		c := encode(name, o2)
		if bytes.Equal(a.Metrics[0].Body, c.Metrics[0].Body) {
			t.Errorf("%s: seed %d and %d give the same first request", name, o.Seed, o2.Seed)
		}
	}
}

// TestCountsAndOrder checks the data's own books: every series in time
// order with one staleness marker at most, at its end; every stream's
// lines in time order; spans inside their traces' roots; the payloads
// carry exactly what Counts says.
func TestCountsAndOrder(t *testing.T) {
	d := generated(t, "ecc-xid")
	c := d.Counts()
	samples, stale := 0, 0
	for _, s := range d.Series {
		if len(s.T) != len(s.V) || len(s.T) == 0 {
			t.Fatalf("%v: %d timestamps, %d values", s.Labels, len(s.T), len(s.V))
		}
		for i := range s.T {
			if i > 0 && s.T[i] <= s.T[i-1] {
				t.Fatalf("%v: sample %d at %d, not after %d", s.Labels, i, s.T[i], s.T[i-1])
			}
			if math.Float64bits(s.V[i]) == staleNaN {
				stale++
				if i != len(s.T)-1 {
					t.Fatalf("%v: staleness marker in the middle", s.Labels)
				}
			} else {
				samples++
			}
		}
	}
	if samples != c.Samples || stale != c.StaleMarkers || c.StaleMarkers == 0 {
		t.Errorf("counted %d samples and %d markers, Counts says %d and %d", samples, stale, c.Samples, c.StaleMarkers)
	}
	for _, s := range d.Streams {
		for i := 1; i < len(s.Entries); i++ {
			if s.Entries[i].T < s.Entries[i-1].T {
				t.Fatalf("stream %v: line %d before its predecessor", s.Labels, i)
			}
		}
	}
	if c.LokiLines == 0 || c.OTLPLines == 0 || c.Spans == 0 || c.Traces == 0 || c.Lines != c.LokiLines+c.OTLPLines {
		t.Errorf("counts %+v", c)
	}
	p, err := d.Encode(EncodeOptions{SamplesPerRequest: 5000, LinesPerRequest: 300, SpansPerRequest: 700})
	if err != nil {
		t.Fatal(err)
	}
	sum := func(rs []Request) (items, stale int) {
		for _, r := range rs {
			items += r.Items
			stale += r.Stale
		}
		return
	}
	if n, s := sum(p.Metrics); n != c.Samples+c.StaleMarkers || s != c.StaleMarkers {
		t.Errorf("metric requests carry %d samples (%d markers), want %d (%d)", n, s, c.Samples+c.StaleMarkers, c.StaleMarkers)
	}
	if n, _ := sum(p.Loki); n != c.LokiLines {
		t.Errorf("Loki requests carry %d lines, want %d", n, c.LokiLines)
	}
	if n, _ := sum(p.OTLPLogs); n != c.OTLPLines {
		t.Errorf("OTLP requests carry %d lines, want %d", n, c.OTLPLines)
	}
	if n, _ := sum(p.Traces); n != c.Spans {
		t.Errorf("trace requests carry %d spans, want %d", n, c.Spans)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"onset too early", Options{Duration: time.Hour, Onset: 5 * time.Minute}},
		{"onset too late", Options{Duration: time.Hour, Onset: 50 * time.Minute}},
		{"interval", Options{Interval: time.Millisecond}},
		{"scale", Options{Scale: "huge"}},
		{"over a week", Options{Duration: 8 * 24 * time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Generate("nvlink-stall", tc.o); !errors.Is(err, ErrBadOptions) {
				t.Errorf("Generate = %v, want ErrBadOptions", err)
			}
		})
	}
	if _, err := Generate("no-such", Options{}); !errors.Is(err, ErrUnknownScenario) || !strings.Contains(err.Error(), "nvlink-stall") {
		t.Errorf("unknown scenario: %v", err)
	}
	o, err := Options{}.withDefaults()
	if err != nil || o.Onset != 2*time.Hour+47*time.Minute || o.Duration != 4*time.Hour || !o.Start.Equal(DefaultOptions().Start) {
		t.Errorf("defaults %+v, %v: want the story's 02:47 onset", o, err)
	}
	if o, _ := (Options{Duration: time.Hour}).withDefaults(); o.Onset != 40*time.Minute {
		t.Errorf("an hour's default onset is %s, want 40m", o.Onset)
	}
}

// TestScales: a larger scale adds background, not incident.
func TestScales(t *testing.T) {
	o := testOptions()
	o.Duration, o.Onset, o.Scale = 30*time.Minute, 10*time.Minute, "medium"
	d, err := Generate("nvlink-stall", o)
	if err != nil {
		t.Fatal(err)
	}
	small := generated(t, "nvlink-stall")
	if got, want := len(d.SeriesNamed("DCGM_FI_DEV_GPU_UTIL")), len(small.SeriesNamed("DCGM_FI_DEV_GPU_UTIL")); got < 2*want {
		t.Errorf("medium has %d GPU util series, small %d: want more background", got, want)
	}
	if d.Truth.Where.Nodes[0] != "node-6" {
		t.Errorf("medium's cause moved: %+v", d.Truth.Where)
	}
}

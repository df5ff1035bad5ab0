package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Options configure Generate. Zero fields take DefaultOptions' values.
type Options struct {
	// Seed selects the data set: the same Options give the same bytes.
	Seed int64
	// Start is the first scrape. Default 2026-12-01T00:00:00Z, so that the
	// nvlink-stall story's 02:47 is the default onset.
	Start time.Time
	// Duration is the generated window. Default 4h.
	Duration time.Duration
	// Onset is when the incident's cause begins, after Start. Default 2h47m
	// when the window is at least 3h long, else two thirds of the window
	// (rounded down to the minute). It must leave 10 minutes before it and
	// 20 after.
	Onset time.Duration
	// Interval is the scrape interval of every metric. Default 15s.
	Interval time.Duration
	// Scale sizes the healthy background: "small" (17 GPU nodes, 136 GPUs),
	// "medium" (4 background groups) or "large" (16). Default small.
	Scale string
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		Seed:     1,
		Start:    time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Duration: 4 * time.Hour,
		Interval: 15 * time.Second,
		Scale:    "small",
	}
}

// Scales are the background sizes, by name: how many background groups
// (4 training nodes, 2 and 1 more, 2 inference nodes each) the world has.
var scales = map[string]int{"small": 1, "medium": 4, "large": 16}

// Scales returns the scale names.
func Scales() []string {
	out := make([]string, 0, len(scales))
	for k := range scales {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Sentinel errors.
var (
	ErrUnknownScenario = errors.New("unknown scenario")
	ErrBadOptions      = errors.New("invalid scenario options")
)

// withDefaults fills zero fields and validates.
func (o Options) withDefaults() (Options, error) {
	d := DefaultOptions()
	if o.Start.IsZero() {
		o.Start = d.Start
	}
	if o.Duration == 0 {
		o.Duration = d.Duration
	}
	if o.Interval == 0 {
		o.Interval = d.Interval
	}
	if o.Scale == "" {
		o.Scale = d.Scale
	}
	if o.Onset == 0 {
		if o.Duration >= 3*time.Hour {
			o.Onset = 2*time.Hour + 47*time.Minute
		} else {
			o.Onset = (o.Duration * 2 / 3).Truncate(time.Minute)
		}
	}
	o.Start = o.Start.UTC().Truncate(time.Millisecond)
	switch {
	case o.Interval < time.Second:
		return o, fmt.Errorf("%w: interval %s < 1s", ErrBadOptions, o.Interval)
	case o.Onset < 10*time.Minute:
		return o, fmt.Errorf("%w: onset %s: the cause needs at least 10 minutes of healthy data before it", ErrBadOptions, o.Onset)
	case o.Duration-o.Onset < 20*time.Minute:
		return o, fmt.Errorf("%w: onset %s leaves %s of a %s window: at least 20 minutes must follow it", ErrBadOptions, o.Onset, o.Duration-o.Onset, o.Duration)
	case o.Duration > 7*24*time.Hour:
		return o, fmt.Errorf("%w: duration %s is over a week (Loki-style receivers refuse older lines)", ErrBadOptions, o.Duration)
	}
	if _, ok := scales[o.Scale]; !ok {
		return o, fmt.Errorf("%w: scale %q (want %s)", ErrBadOptions, o.Scale, strings.Join(Scales(), ", "))
	}
	return o, nil
}

package investigate

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
)

// SpreadRequest asks for the distribution of one metric over a workload's
// GPUs, ranks or nodes.
type SpreadRequest struct {
	// Selector is the workload ({run_id="r42"}, or a set of GPUs:
	// {gpu_uuid=~"GPU-a|GPU-b"}).
	Selector string
	// Metric is a metric name or a PromQL expression; the workload's
	// matchers are added to every selector of it. A bare counter name is
	// read as its rate.
	Metric string
	// By is gpu, rank or node. Default gpu.
	By string
	// Time and Window: each series' value is its average over the Window
	// before Time (default: now, 5 minutes).
	Time   time.Time
	Window time.Duration
	// Threshold is the robust z beyond which a member is an outlier
	// (|x − median| / (1.4826 × MAD)); default 3.5.
	Threshold float64
}

// Spread is the answer: each member's value, the robust centre and spread,
// and the outliers with their hardware context.
type Spread struct {
	Selector string         `json:"selector"`
	Query    string         `json:"query"`
	By       string         `json:"by"`
	Time     time.Time      `json:"time"`
	Median   float64        `json:"median"`
	MAD      float64        `json:"mad"`
	Members  []SpreadMember `json:"members"`
	Outliers []SpreadMember `json:"outliers"`
}

// SpreadMember is one GPU, rank or node.
type SpreadMember struct {
	Key    string  `json:"key"`
	Node   string  `json:"node,omitempty"`
	Value  float64 `json:"value"`
	Z      float64 `json:"z"`
	Series int     `json:"series"`
	// Hardware is, for outliers, what the member's GPUs showed over the
	// window: temperature, thermal clock events, ECC, NVLink, PCIe, XID.
	Hardware []HardwareSign `json:"hardware,omitempty"`
}

// HardwareSign is one hardware reading of an outlier, beside the
// workload's median of the same.
type HardwareSign struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Median float64 `json:"workload_median"`
	Query  string  `json:"query"`
}

var spreadKeys = map[string][]string{"gpu": {"gpu_uuid"}, "rank": {"rank"}, "node": {"node", "host"}}

// hardwareSigns are the readings an outlier is shown with: PromQL over
// the member's series (%s: its matchers, %w: the window).
var hardwareSigns = []struct{ name, expr string }{
	{"gpu_temperature_celsius", `max by (%k) (DCGM_FI_DEV_GPU_TEMP{%s})`},
	{"thermal_clock_event_seconds", `sum by (%k) (increase(weft_gpu_clock_event_seconds_total{reason=~".*thermal.*", %s}[%w]))`},
	{"sm_clock_mhz", `avg by (%k) (avg_over_time(DCGM_FI_DEV_SM_CLOCK{%s}[%w]))`},
	{"ecc_sbe_errors", `sum by (%k) (increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{%s}[%w]))`},
	{"ecc_dbe_errors", `sum by (%k) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{%s}[%w]))`},
	{"nvlink_errors", `sum by (%k) ({__name__=~"DCGM_FI_DEV_NVLINK_.*_ERROR_COUNT_TOTAL", %s}) - sum by (%k) ({__name__=~"DCGM_FI_DEV_NVLINK_.*_ERROR_COUNT_TOTAL", %s} offset %w)`},
	{"nvlink_kib_per_second", `sum by (%k) (rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{%s}[%w]))`},
	{"pcie_replays", `sum by (%k) (increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{%s}[%w]))`},
	{"pcie_rx_kb_per_second", `sum by (%k) (avg_over_time(DCGM_FI_DEV_PCIE_RX_THROUGHPUT{%s}[%w]))`},
	{"xid_errors", `sum by (%k) (max_over_time(weft_gpu_xid_errors_total{%s}[%w]))`},
}

// Spread answers r.
func (iv *Investigator) Spread(ctx context.Context, r SpreadRequest) (*Spread, error) {
	if iv.opts.Engine == nil || iv.opts.Metrics == nil {
		return nil, fmt.Errorf("spread: %w: no PromQL engine", ErrUnavailable)
	}
	sel, err := iv.parseSelector(r.Selector)
	if err != nil {
		return nil, err
	}
	by := cmp.Or(r.By, "gpu")
	keys, ok := spreadKeys[by]
	if !ok {
		return nil, invalid("by %q: one of gpu, rank, node", r.By)
	}
	if strings.TrimSpace(r.Metric) == "" {
		return nil, invalid("metric: a metric name or a PromQL expression is required")
	}
	at := r.Time
	if at.IsZero() {
		at = iv.opts.Now()
	}
	w := cmp.Or(r.Window, 5*time.Minute)
	thr := cmp.Or(r.Threshold, 3.5)
	sp := &Spread{Selector: r.Selector, By: by, Time: at.UTC()}
	members := map[string]*SpreadMember{}
	for _, alt := range sel.alts {
		q, err := spreadQuery(r.Metric, alt, w)
		if err != nil {
			return nil, err
		}
		sp.Query = cmp.Or(sp.Query, q)
		vec, err := iv.instant(ctx, q, at)
		if err != nil {
			return nil, err
		}
		for _, s := range vec {
			k := ""
			for _, name := range keys {
				if k = s.Metric.Get(name); k != "" {
					break
				}
			}
			if k == "" || math.IsNaN(s.F) {
				continue
			}
			m := members[k]
			if m == nil {
				m = &SpreadMember{Key: k, Node: cmp.Or(s.Metric.Get("node"), s.Metric.Get("host"))}
				members[k] = m
			}
			// The member's value is the mean of its series.
			m.Value = (m.Value*float64(m.Series) + s.F) / float64(m.Series+1)
			m.Series++
		}
	}
	vals := make([]float64, 0, len(members))
	for _, m := range members {
		vals = append(vals, m.Value)
		sp.Members = append(sp.Members, *m)
	}
	sp.Median = median(vals)
	sp.MAD = mad(vals, sp.Median)
	scale := 1.4826 * sp.MAD
	if scale == 0 {
		scale = max(1e-3*math.Abs(sp.Median), 1e-12)
	}
	for i := range sp.Members {
		m := &sp.Members[i]
		m.Z = round((m.Value - sp.Median) / scale)
		if math.Abs(m.Z) > thr {
			sp.Outliers = append(sp.Outliers, *m)
		}
	}
	slices.SortFunc(sp.Members, func(a, b SpreadMember) int { return naturalCompare(a.Key, b.Key) })
	slices.SortFunc(sp.Outliers, func(a, b SpreadMember) int { return cmp.Compare(math.Abs(b.Z), math.Abs(a.Z)) })
	if len(sp.Outliers) > 0 {
		if err := iv.hardware(ctx, sel, keys[0], sp, at, w); err != nil {
			return nil, err
		}
	}
	return sp, nil
}

// spreadQuery adds the workload's matchers to every selector of metric
// and averages it over the window per series.
func spreadQuery(metric string, ms []*labels.Matcher, w time.Duration) (string, error) {
	expr, err := newParser().ParseExpr(metric)
	if err != nil {
		return "", invalid("metric %q: %v", metric, err)
	}
	addMatchers(expr, ms)
	if vs, ok := expr.(*vectorSelector); ok {
		name := vs.Name
		if strings.HasSuffix(strings.ToLower(name), "_total") {
			return "rate(" + vs.String() + "[" + promDuration(w) + "])", nil
		}
		return "avg_over_time(" + vs.String() + "[" + promDuration(w) + "])", nil
	}
	return expr.String(), nil
}

// hardware fills the outliers' hardware signs, with the workload's
// median of each.
func (iv *Investigator) hardware(ctx context.Context, sel selector, key string, sp *Spread, at time.Time, w time.Duration) error {
	byKey := map[string]int{}
	for i, o := range sp.Outliers {
		byKey[o.Key] = i
	}
	groupKey := key
	if key == "node" {
		groupKey = "host" // GPU series name the node host
	}
	m := strings.Trim(matchersString(sel.alts[0], true), "{}")
	for _, hs := range hardwareSigns {
		q := strings.NewReplacer("%k", groupKey, "%s", m, "%w", promDuration(w)).Replace(hs.expr)
		vec, err := iv.instant(ctx, q, at)
		if err != nil {
			return err
		}
		var all []float64
		got := map[string]float64{}
		for _, s := range vec {
			all = append(all, s.F)
			got[s.Metric.Get(groupKey)] = s.F
		}
		if len(all) == 0 {
			continue
		}
		med := median(all)
		for k, i := range byKey {
			v, ok := got[k]
			if !ok {
				continue
			}
			sp.Outliers[i].Hardware = append(sp.Outliers[i].Hardware, HardwareSign{Name: hs.name, Value: round(v), Median: round(med),
				Query: strings.ReplaceAll(q, m, m+", "+groupKey+`="`+k+`"`)})
		}
	}
	return nil
}

// instant evaluates q at t.
func (iv *Investigator) instant(ctx context.Context, q string, t time.Time) (promql.Vector, error) {
	iq, err := iv.opts.Engine.NewInstantQuery(ctx, iv.opts.Metrics, nil, q, t)
	if err != nil {
		return nil, invalid("query %q: %v", q, err)
	}
	defer iq.Close()
	res := iq.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("query %q: %w", q, res.Err)
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		return promql.Vector{{F: v.V, T: v.T}}, nil
	}
	return nil, invalid("query %q: not an instant vector", q)
}

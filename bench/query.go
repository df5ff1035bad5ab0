package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// QueryKind is the Prometheus HTTP API endpoint a query uses.
type QueryKind string

// Query kinds.
const (
	Instant     QueryKind = "query"
	Range       QueryKind = "query_range"
	Series      QueryKind = "series"
	LabelValues QueryKind = "label_values"
)

// Query is one request of the suite.
type Query struct {
	Name  string
	Kind  QueryKind
	Expr  string // PromQL, or the match[] selector for series and label values
	Label string // label name for LabelValues
	// Range is the look-back from the evaluation time (range queries, series
	// and label values); Step is the range query resolution.
	Range time.Duration
	Step  time.Duration
}

// Suite is the query suite: high-cardinality selectors over GPU metrics,
// regex over run ids, aggregations over 1h and 24h, topk, histogram_quantile,
// label values with matchers, series lookups and count by.
func Suite() []Query {
	return []Query{
		{Name: "gpu_pods_all", Kind: Instant, Expr: `count by (__name__) ({__name__=~"DCGM_FI_DEV_.*", pod=~".+"})`},
		{Name: "power_by_pod", Kind: Instant, Expr: `DCGM_FI_DEV_POWER_USAGE{pod=~".+"}`},
		{Name: "util_run_regex", Kind: Instant, Expr: `sum by (run_id) (max_over_time(DCGM_FI_DEV_GPU_UTIL{run_id=~"r1.*"}[1h]))`},
		{Name: "energy_rate_by_model_1h", Kind: Range, Expr: `sum by (model) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))`, Range: time.Hour, Step: time.Minute},
		{Name: "energy_rate_by_model_24h", Kind: Range, Expr: `sum by (model) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))`, Range: 24 * time.Hour, Step: 5 * time.Minute},
		{Name: "util_by_team_1h", Kind: Range, Expr: `avg by (team) (DCGM_FI_DEV_GPU_UTIL)`, Range: time.Hour, Step: time.Minute},
		{Name: "topk_power", Kind: Instant, Expr: `topk(10, avg by (Hostname) (DCGM_FI_DEV_POWER_USAGE))`},
		{Name: "e2e_p99_by_model", Kind: Instant, Expr: `histogram_quantile(0.99, sum by (model_name, le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))`},
		{Name: "ttft_p50_by_model_1h", Kind: Range, Expr: `histogram_quantile(0.5, sum by (model_name, le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))`, Range: time.Hour, Step: time.Minute},
		{Name: "tokens_by_model", Kind: Instant, Expr: `sum by (model_name) (rate(vllm:generation_tokens_total[5m]))`},
		{Name: "runs_per_team", Kind: Instant, Expr: `count by (team) (count by (team, run_id) (DCGM_FI_DEV_GPU_UTIL))`},
		{Name: "gpus_by_tenant", Kind: Instant, Expr: `count by (tenant) (DCGM_FI_DEV_GPU_UTIL)`},
		{Name: "fb_used_sum", Kind: Instant, Expr: `sum(DCGM_FI_DEV_FB_USED)`},
		{Name: "model_values_for_team", Kind: LabelValues, Label: "model", Expr: `DCGM_FI_DEV_GPU_UTIL{team="pretrain"}`, Range: time.Hour},
		{Name: "run_values", Kind: LabelValues, Label: "run_id", Expr: `DCGM_FI_DEV_GPU_UTIL`, Range: time.Hour},
		{Name: "series_ecc_runs", Kind: Series, Expr: `DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{run_id=~"r1.*"}`, Range: time.Hour},
		{Name: "series_util", Kind: Series, Expr: `DCGM_FI_DEV_GPU_UTIL`, Range: 24 * time.Hour},
	}
}

// QueryClient runs queries against one target's Prometheus HTTP API. It is
// safe for concurrent use.
type QueryClient struct {
	Client *http.Client
	Base   string // e.g. http://127.0.0.1:9090
}

// Result is a normalised answer: for vectors and matrices one entry per
// series (key = sorted label set) with its points; for series and label
// values the keys alone. Comparable across targets.
type Result struct {
	Type   string
	Keys   []string
	Points map[string][][2]float64
	// Latency is from sending the request to having read the whole
	// response: the target's time, not the harness' JSON decoding, which
	// for a /series answer of 60k series takes longer than the query.
	Latency time.Duration
}

// Do runs q evaluated at evalTime (ms) and returns the normalised result.
func (c *QueryClient) Do(ctx context.Context, q Query, evalTime int64) (*Result, error) {
	v := url.Values{}
	path := "/api/v1/" + string(q.Kind)
	end := float64(evalTime) / 1000
	start := end - q.Range.Seconds()
	switch q.Kind {
	case Instant:
		v.Set("query", q.Expr)
		v.Set("time", fmtTime(end))
	case Range:
		// Align to the step so every target evaluates the same instants
		// (VictoriaMetrics aligns range queries to the step).
		st := q.Step.Seconds()
		end = math.Floor(end/st) * st
		start = end - q.Range.Seconds()
		v.Set("query", q.Expr)
		v.Set("start", fmtTime(start))
		v.Set("end", fmtTime(end))
		v.Set("step", strconv.FormatFloat(st, 'f', -1, 64))
	case Series:
		v.Set("match[]", q.Expr)
		v.Set("start", fmtTime(start))
		v.Set("end", fmtTime(end))
	case LabelValues:
		path = "/api/v1/label/" + q.Label + "/values"
		v.Set("match[]", q.Expr)
		v.Set("start", fmtTime(start))
		v.Set("end", fmtTime(end))
	}
	// GET: label values accepts nothing else, and every suite URL is short.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path+"?"+v.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	t0 := time.Now()
	resp, err := c.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	latency := time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", q.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("query %s: HTTP %d: %.300s", q.Name, resp.StatusCode, body)
	}
	r, err := parseResult(body)
	if err != nil {
		return nil, err
	}
	r.Latency = latency
	return r, nil
}

func fmtTime(sec float64) string { return strconv.FormatFloat(sec, 'f', 3, 64) }

type apiResponse struct {
	Status string          `json:"status"`
	Data   json.RawMessage `json:"data"`
	Error  string          `json:"error"`
}

type apiSeries struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
	Values [][]any           `json:"values"`
}

func parseResult(body []byte) (*Result, error) {
	var ar apiResponse
	if err := json.Unmarshal(body, &ar); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	if ar.Status != "success" {
		return nil, fmt.Errorf("status %q: %s", ar.Status, ar.Error)
	}
	r := &Result{Points: map[string][][2]float64{}}
	// series / label values: data is an array.
	if len(ar.Data) > 0 && ar.Data[0] == '[' {
		var raw []json.RawMessage
		if err := json.Unmarshal(ar.Data, &raw); err != nil {
			return nil, fmt.Errorf("decode data: %w", err)
		}
		r.Type = "list"
		for _, e := range raw {
			var s string
			if json.Unmarshal(e, &s) == nil {
				r.Keys = append(r.Keys, s)
				continue
			}
			var m map[string]string
			if err := json.Unmarshal(e, &m); err != nil {
				return nil, fmt.Errorf("decode list entry: %w", err)
			}
			r.Keys = append(r.Keys, labelKey(m))
		}
		sort.Strings(r.Keys)
		return r, nil
	}
	var d struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(ar.Data, &d); err != nil {
		return nil, fmt.Errorf("decode data: %w", err)
	}
	r.Type = d.ResultType
	switch d.ResultType {
	case "scalar":
		var v []any
		if err := json.Unmarshal(d.Result, &v); err != nil {
			return nil, fmt.Errorf("decode scalar: %w", err)
		}
		p, err := point(v)
		if err != nil {
			return nil, err
		}
		r.Keys = []string{""}
		r.Points[""] = [][2]float64{p}
		return r, nil
	case "vector", "matrix":
	default:
		return nil, fmt.Errorf("unsupported result type %q", d.ResultType)
	}
	var ss []apiSeries
	if err := json.Unmarshal(d.Result, &ss); err != nil {
		return nil, fmt.Errorf("decode %s: %w", d.ResultType, err)
	}
	for _, s := range ss {
		k := labelKey(s.Metric)
		vals := s.Values
		if s.Value != nil {
			vals = [][]any{s.Value}
		}
		for _, v := range vals {
			p, err := point(v)
			if err != nil {
				return nil, err
			}
			r.Points[k] = append(r.Points[k], p)
		}
		r.Keys = append(r.Keys, k)
	}
	sort.Strings(r.Keys)
	return r, nil
}

func point(v []any) ([2]float64, error) {
	if len(v) != 2 {
		return [2]float64{}, fmt.Errorf("point has %d fields", len(v))
	}
	t, ok := v[0].(float64)
	s, ok2 := v[1].(string)
	if !ok || !ok2 {
		return [2]float64{}, fmt.Errorf("malformed point %v", v)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return [2]float64{}, fmt.Errorf("point value %q: %w", s, err)
	}
	return [2]float64{t, f}, nil
}

func labelKey(m map[string]string) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range ks {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// RelTolerance is the relative difference two answers may have and still be
// the same answer (float summation order differs between engines).
const RelTolerance = 1e-6

// Diff lists how got differs from want; empty means the same answer.
func Diff(want, got *Result) []string {
	var out []string
	if want.Type != got.Type {
		return []string{fmt.Sprintf("result type %s, want %s", got.Type, want.Type)}
	}
	wk, gk := map[string]bool{}, map[string]bool{}
	for _, k := range want.Keys {
		wk[k] = true
	}
	for _, k := range got.Keys {
		gk[k] = true
		if !wk[k] {
			out = append(out, "extra "+k)
		}
	}
	for _, k := range want.Keys {
		if !gk[k] {
			out = append(out, "missing "+k)
			continue
		}
		wp, gp := want.Points[k], got.Points[k]
		if len(wp) != len(gp) {
			out = append(out, fmt.Sprintf("%s: %d points, want %d", k, len(gp), len(wp)))
			continue
		}
		for i := range wp {
			if wp[i][0] != gp[i][0] || !closeEnough(wp[i][1], gp[i][1]) {
				out = append(out, fmt.Sprintf("%s @%.3f: %g, want %g", k, gp[i][0], gp[i][1], wp[i][1]))
				break
			}
		}
	}
	const maxShown = 5
	if len(out) > maxShown {
		out = append(out[:maxShown], fmt.Sprintf("... %d more", len(out)-maxShown))
	}
	return out
}

func closeEnough(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if a == b {
		return true
	}
	d := math.Abs(a - b)
	return d <= RelTolerance*math.Max(math.Abs(a), math.Abs(b))
}

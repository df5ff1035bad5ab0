package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// relTolerance is the relative difference allowed between two float answers
// (both engines are Prometheus' own; only summation order could differ).
const relTolerance = 1e-6

var httpClient = &http.Client{Timeout: 30 * time.Second}

// envelope is Prometheus' response envelope.
type envelope struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

// get fetches base+path with params and returns the decoded envelope.
func get(base, path string, params url.Values) (envelope, error) {
	var env envelope
	resp, err := httpClient.Get(base + path + "?" + params.Encode())
	if err != nil {
		return env, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return env, err
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return env, fmt.Errorf("status %d, body %q: %w", resp.StatusCode, body, err)
	}
	if env.Status != "success" {
		return env, fmt.Errorf("status %d: %s: %s", resp.StatusCode, env.ErrorType, env.Error)
	}
	return env, nil
}

// series is one series of a query result, normalised for comparison.
type series struct {
	metric string // canonical label set
	points [][2]float64
}

type queryResult struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// parseResult turns a query's data into a sorted list of series (a scalar or
// string becomes one series with an empty metric).
func parseResult(raw json.RawMessage) (string, []series, error) {
	var qr queryResult
	if err := json.Unmarshal(raw, &qr); err != nil {
		return "", nil, err
	}
	var out []series
	switch qr.ResultType {
	case "vector":
		var v []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
		}
		if err := json.Unmarshal(qr.Result, &v); err != nil {
			return "", nil, err
		}
		for _, s := range v {
			p, err := point(s.Value)
			if err != nil {
				return "", nil, err
			}
			out = append(out, series{canon(s.Metric), [][2]float64{p}})
		}
	case "matrix":
		var m []struct {
			Metric map[string]string `json:"metric"`
			Values [][]any           `json:"values"`
		}
		if err := json.Unmarshal(qr.Result, &m); err != nil {
			return "", nil, err
		}
		for _, s := range m {
			ser := series{metric: canon(s.Metric)}
			for _, v := range s.Values {
				p, err := point(v)
				if err != nil {
					return "", nil, err
				}
				ser.points = append(ser.points, p)
			}
			out = append(out, ser)
		}
	case "scalar", "string":
		var v []any
		if err := json.Unmarshal(qr.Result, &v); err != nil {
			return "", nil, err
		}
		if qr.ResultType == "string" {
			return qr.ResultType, []series{{metric: fmt.Sprint(v...)}}, nil
		}
		p, err := point(v)
		if err != nil {
			return "", nil, err
		}
		out = append(out, series{points: [][2]float64{p}})
	default:
		return "", nil, fmt.Errorf("unknown resultType %q", qr.ResultType)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].metric < out[j].metric })
	return qr.ResultType, out, nil
}

// point parses a [float-seconds, "value"] pair.
func point(v []any) ([2]float64, error) {
	if len(v) != 2 {
		return [2]float64{}, fmt.Errorf("point %v is not a pair", v)
	}
	t, ok := v[0].(float64)
	s, ok2 := v[1].(string)
	if !ok || !ok2 {
		return [2]float64{}, fmt.Errorf("point %v is not [number, string]", v)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return [2]float64{}, fmt.Errorf("point value %q: %w", s, err)
	}
	return [2]float64{t, f}, nil
}

func canon(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	b.WriteByte('}')
	return b.String()
}

func floatsEqual(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if a == b {
		return true
	}
	return math.Abs(a-b) <= relTolerance*math.Max(math.Abs(a), math.Abs(b))
}

// diffResults describes how got (weft) differs from want (Prometheus), or
// returns "" when they agree.
func diffResults(wantRaw, gotRaw json.RawMessage) string {
	wt, want, err := parseResult(wantRaw)
	if err != nil {
		return "prometheus result: " + err.Error()
	}
	gt, got, err := parseResult(gotRaw)
	if err != nil {
		return "weft result: " + err.Error()
	}
	if wt != gt {
		return fmt.Sprintf("resultType %s, want %s", gt, wt)
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d series, want %d\n weft: %s\n prom: %s", len(got), len(want), metrics(got), metrics(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.metric != g.metric {
			return fmt.Sprintf("series %d is %s, want %s", i, g.metric, w.metric)
		}
		if len(w.points) != len(g.points) {
			return fmt.Sprintf("%s: %d points, want %d\n weft: %v\n prom: %v", w.metric, len(g.points), len(w.points), g.points, w.points)
		}
		for j := range w.points {
			if w.points[j][0] != g.points[j][0] || !floatsEqual(w.points[j][1], g.points[j][1]) {
				return fmt.Sprintf("%s point %d: %v, want %v", w.metric, j, g.points[j], w.points[j])
			}
		}
	}
	return ""
}

func metrics(ss []series) string {
	var names []string
	for _, s := range ss {
		names = append(names, s.metric)
	}
	if len(names) > 10 {
		names = append(names[:10], fmt.Sprintf("... (%d more)", len(names)-10))
	}
	return strings.Join(names, " ")
}

// diffJSONSets compares two JSON arrays as sets (series or label lists).
func diffJSONSets(wantRaw, gotRaw json.RawMessage) string {
	var want, got []any
	if err := json.Unmarshal(wantRaw, &want); err != nil {
		return "prometheus: " + err.Error()
	}
	if err := json.Unmarshal(gotRaw, &got); err != nil {
		return "weft: " + err.Error()
	}
	key := func(v any) string {
		if m, ok := v.(map[string]any); ok {
			sm := map[string]string{}
			for k, x := range m {
				sm[k] = fmt.Sprint(x)
			}
			return canon(sm)
		}
		return fmt.Sprint(v)
	}
	ws, gs := map[string]bool{}, map[string]bool{}
	for _, v := range want {
		ws[key(v)] = true
	}
	for _, v := range got {
		gs[key(v)] = true
	}
	var missing, extra []string
	for k := range ws {
		if !gs[k] {
			missing = append(missing, k)
		}
	}
	for k := range gs {
		if !ws[k] {
			extra = append(extra, k)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return fmt.Sprintf("weft lacks %v; weft has extra %v", missing, extra)
}

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/regexp"
	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/weftdb/weft/bench/scenario"
	"github.com/weftdb/weft/gpuagent"
)

// TestDashboards runs every query of every dashboard in dashboards/ against
// a real weft, as Grafana would run it: template variables resolved (query
// variables by running their label_values(...) against weft, "All" as the
// variable's allValue or Grafana's (a|b|...) regex), Grafana's built-in
// intervals substituted, each Prometheus target as a range or instant
// query and each Loki target as a range query. Any error, any empty
// variable and any empty result fails the test.
//
// weft is filled by weft-bench's ecc-xid scenario (an hour of a small
// cluster: weft-agent-shaped GPU metrics, training and inference metrics,
// Loki and OTLP logs), by weft-agent's own renderer and remote-write encoder
// for an H100 node with the profiling (DCGM_FI_PROF_*) fields NVIDIA's
// dashboard uses, and by weft's own /metrics (job="weft"), scraped while it
// ingests and imported, stamped every 15 s up to the end of the window, as
// a Prometheus that scrapes weft and remote-writes into it would store it.
func TestDashboards(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	// weft-agent pushes its XID event lines with the GPU's labels and its
	// workload context as stream labels: 19 with service_name, over Loki's
	// (and weft's) default of 15, so Loki push refuses them. An operator
	// running the agent raises the limit, as this config does.
	cfg := filepath.Join(t.TempDir(), "weft.yml")
	if err := os.WriteFile(cfg, []byte("limits:\n  logs:\n    max_label_names_per_stream: 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	weft := startProcess(t, "weft-dashboards", buildWeft(t),
		"-data-dir", filepath.Join(t.TempDir(), "data"), "-http-addr", addr,
		"-otlp-grpc-addr", "", "-otlp-http-addr", "", "-config", cfg, "-log-level", "warn")
	base := "http://" + addr
	waitReady(t, weft, base+"/-/ready")

	end := time.Now().Add(-time.Minute).Truncate(time.Minute)
	start := end.Add(-time.Hour)
	var scrapes []string
	scrape := func() {
		t.Helper()
		code, body := httpDo(t, http.MethodGet, base+"/metrics", "", nil)
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		scrapes = append(scrapes, body)
	}
	// Refusals, so that the refused-items panel has something to show.
	httpDo(t, http.MethodPost, base+"/api/v1/import", "", []byte("{not json\n"))
	old := fmt.Sprintf(`{"streams":[{"stream":{"app":"late"},"values":[["%d","a month late"]]}]}`, time.Now().AddDate(0, -1, 0).UnixNano())
	httpDo(t, http.MethodPost, base+"/loki/api/v1/push", "application/json", []byte(old))
	scrape()

	began := time.Now()
	_, rep, err := scenario.Run(ctx, "ecc-xid", scenario.Options{Seed: 1, Start: start, Duration: time.Hour, Onset: 35 * time.Minute},
		scenario.Target{URL: base}, scenario.ReplayOptions{})
	if err != nil {
		t.Fatalf("scenario replay: %v (%+v)", err, rep)
	}
	scrape()
	pushAgentShaped(t, base, start, end)
	scrape()
	t.Logf("filled weft in %s", time.Since(began).Round(time.Second))
	for len(scrapes) < 8 {
		time.Sleep(time.Second)
		scrape()
	}
	importScrapes(t, base, scrapes, end, strings.TrimPrefix(base, "http://"))

	files, err := filepath.Glob(filepath.Join(repoRoot(t), "dashboards", "*.json"))
	if err != nil || len(files) < 5 {
		t.Fatalf("dashboards: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			runDashboard(t, base, f, start, end)
		})
	}
}

// pushAgentShaped remote-writes, through weft-agent's renderer and RW2
// encoder with the instance label the agent adds, an hour of collections
// of an 8-GPU H100 node with the profiling fields.
func pushAgentShaped(tb testing.TB, base string, start, end time.Time) {
	tb.Helper()
	r := &gpuagent.Renderer{Naming: gpuagent.NamingDCGM, Hostname: "h100-agent"}
	instance := []gpuagent.Label{{Name: "instance", Value: "h100-agent:9400"}}
	for ts, i := start, 0; !ts.After(end); ts, i = ts.Add(15*time.Second), i+1 {
		snap := gpuagent.Snapshot{Time: ts, NVMLUp: true}
		for g := range 8 {
			f := float64(i%40) / 40
			snap.GPUs = append(snap.GPUs, gpuagent.GPUSnapshot{
				Info: gpuagent.GPUInfo{Index: g, Minor: g, UUID: fmt.Sprintf("GPU-h100-%d", g),
					PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+g), Model: "NVIDIA H100 80GB HBM3", DriverVersion: "570.86.15"},
				Samples: []gpuagent.Sample{
					{Def: gpuagent.MetricGPUTemp, Value: 45 + 20*f},
					{Def: gpuagent.MetricPower, Value: 300 + 350*f},
					{Def: gpuagent.MetricSMClock, Value: 1980},
					{Def: gpuagent.MetricGPUUtil, Value: 100 * f},
					{Def: gpuagent.MetricFBUsed, Value: 60000 + 100*float64(g)},
					{Def: gpuagent.MetricProfTensorActive, Value: 0.6 * f},
					{Def: gpuagent.MetricProfSMActive, Value: 0.8 * f},
				},
			})
		}
		body, err := gpuagent.EncodeRW2Labels(r.Render(snap), ts, instance)
		if err != nil {
			tb.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(s2.EncodeSnappy(nil, body)))
		req.Header.Set("Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request")
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			tb.Fatalf("agent-shaped remote write: %d %s", resp.StatusCode, b)
		}
	}
}

// importScrapes imports the scraped expositions as job="weft" series,
// stamped 15 s apart ending at end.
func importScrapes(tb testing.TB, base string, scrapes []string, end time.Time, instance string) {
	tb.Helper()
	var out bytes.Buffer
	for i, text := range scrapes {
		ts := end.Add(-time.Duration(len(scrapes)-1-i) * 15 * time.Second).UnixMilli()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			tb.Fatalf("parse /metrics: %v", err)
		}
		for name, mf := range fams {
			for _, m := range mf.GetMetric() {
				ls := map[string]string{"job": "weft", "instance": instance}
				for _, lp := range m.GetLabel() {
					ls[lp.GetName()] = lp.GetValue()
				}
				emit := func(n string, v float64, extra ...string) {
					l := map[string]string{"__name__": n}
					for k, v := range ls {
						l[k] = v
					}
					for j := 0; j+1 < len(extra); j += 2 {
						l[extra[j]] = extra[j+1]
					}
					b, _ := json.Marshal(map[string]any{"metric": l, "values": []any{jsonValue(v)}, "timestamps": []int64{ts}})
					out.Write(append(b, '\n'))
				}
				switch mf.GetType() {
				case dto.MetricType_COUNTER:
					emit(name, m.GetCounter().GetValue())
				case dto.MetricType_GAUGE:
					emit(name, m.GetGauge().GetValue())
				case dto.MetricType_UNTYPED:
					emit(name, m.GetUntyped().GetValue())
				case dto.MetricType_HISTOGRAM:
					h := m.GetHistogram()
					for _, b := range h.GetBucket() {
						emit(name+"_bucket", float64(b.GetCumulativeCount()), "le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64))
					}
					emit(name+"_bucket", float64(h.GetSampleCount()), "le", "+Inf")
					emit(name+"_sum", h.GetSampleSum())
					emit(name+"_count", float64(h.GetSampleCount()))
				case dto.MetricType_SUMMARY:
					s := m.GetSummary()
					for _, q := range s.GetQuantile() {
						emit(name, q.GetValue(), "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64))
					}
					emit(name+"_sum", s.GetSampleSum())
					emit(name+"_count", float64(s.GetSampleCount()))
				}
			}
		}
	}
	if code, msg := httpDo(tb, http.MethodPost, base+"/api/v1/import", "", out.Bytes()); code != http.StatusNoContent {
		tb.Fatalf("import weft's own metrics: %d %s", code, msg)
	}
}

func jsonValue(v float64) any {
	switch {
	case math.IsNaN(v):
		return nil
	case math.IsInf(v, 1):
		return "Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return v
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title      string `json:"title"`
	Templating struct {
		List []dashVar `json:"list"`
	} `json:"templating"`
	Panels []dashPanel `json:"panels"`
}

type dashVar struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   *string         `json:"allValue"`
	Current    struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
	Options []struct {
		Value    string `json:"value"`
		Selected bool   `json:"selected"`
	} `json:"options"`
}

type dashPanel struct {
	Title      string          `json:"title"`
	Type       string          `json:"type"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []struct {
		Expr       string          `json:"expr"`
		Instant    bool            `json:"instant"`
		Range      *bool           `json:"range"`
		Hide       bool            `json:"hide"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"` // a collapsed row's
}

// dsType is a datasource reference's type: "prometheus", "loki", or ""
// when unknown. Dashboards that predate typed references name it
// "$datasource" (a Prometheus variable here).
func dsType(raw json.RawMessage) string {
	var ref struct{ Type, UID string }
	if json.Unmarshal(raw, &ref) == nil && ref.Type != "" {
		return ref.Type
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && strings.Contains(s, "datasource") {
		return "prometheus"
	}
	return ""
}

func runDashboard(t *testing.T, base, path string, start, end time.Time) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("not a dashboard: %v", err)
	}
	const step = time.Minute
	// Grafana's built-ins for a one-hour range at a one-minute step with a
	// 15 s scrape interval ($__rate_interval = max($__interval + scrape, 4 × scrape)).
	vars := map[string]string{
		"__interval": "1m", "__interval_ms": "60000", "__rate_interval": "75s", "__auto": "1m",
		"__range": "3600s", "__range_s": "3600", "__range_ms": "3600000",
	}
	for _, v := range d.Templating.List {
		val, err := resolveVar(base, v, vars, start, end)
		if err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
			continue
		}
		vars[v.Name] = val
	}
	queries := 0
	var walk func(ps []dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				if tg.Hide || tg.Expr == "" {
					continue
				}
				ds := dsType(tg.Datasource)
				if ds == "" {
					ds = dsType(p.Datasource)
				}
				q := interpolate(tg.Expr, vars)
				instant := tg.Instant && (tg.Range == nil || !*tg.Range)
				n, err := runQuery(base, ds, q, instant, start, end, step)
				queries++
				switch {
				case err != nil:
					t.Errorf("panel %q: %s query %s: %v", p.Title, ds, q, err)
				case n == 0:
					t.Errorf("panel %q: %s query %s: empty result", p.Title, ds, q)
				}
			}
		}
	}
	walk(d.Panels)
	if queries == 0 {
		t.Fatal("no queries found")
	}
	t.Logf("%s: %d queries, %d variables", d.Title, queries, len(d.Templating.List))
}

var labelValuesRE = regexp.MustCompile(`^\s*label_values\(\s*(?:(.*)\s*,\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// resolveVar returns the value Grafana would interpolate for v with its
// default selection: "All" for query variables (allValue, else the regex
// of every value), the current or first option for custom variables, the
// default for text boxes, and the UID for data source variables (unused:
// every target's type names its data source here).
func resolveVar(base string, v dashVar, vars map[string]string, start, end time.Time) (string, error) {
	switch v.Type {
	case "datasource":
		return v.Name, nil
	case "textbox", "constant":
		var s string
		if err := json.Unmarshal(v.Query, &s); err != nil {
			return "", err
		}
		return s, nil
	case "custom", "interval":
		for _, o := range v.Options {
			if o.Selected {
				return o.Value, nil
			}
		}
		if len(v.Options) > 0 {
			return v.Options[0].Value, nil
		}
		var s string
		if err := json.Unmarshal(v.Query, &s); err != nil {
			return "", err
		}
		return strings.Split(s, ",")[0], nil
	case "query":
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var obj struct{ Query string }
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				return "", err
			}
			q = obj.Query
		}
		m := labelValuesRE.FindStringSubmatch(interpolate(q, vars))
		if m == nil {
			return "", fmt.Errorf("query %q is not label_values(...)", q)
		}
		params := url.Values{"start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix(), 10)}}
		if strings.TrimSpace(m[1]) != "" {
			params.Set("match[]", strings.TrimSpace(m[1]))
		}
		var values []string
		if err := getJSON(base+"/api/v1/label/"+m[2]+"/values?"+params.Encode(), &values); err != nil {
			return "", err
		}
		if len(values) == 0 {
			return "", fmt.Errorf("label_values %q: no values", q)
		}
		if v.AllValue != nil && *v.AllValue != "" {
			return *v.AllValue, nil
		}
		esc := make([]string, len(values))
		for i, s := range values {
			esc[i] = strings.ReplaceAll(regexp.QuoteMeta(s), `\`, `\\`)
		}
		if len(esc) == 1 {
			return esc[0], nil
		}
		return "(" + strings.Join(esc, "|") + ")", nil
	}
	return "", fmt.Errorf("variable type %q not supported by the test", v.Type)
}

var varRE = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)`)

// interpolate substitutes $var, ${var}, ${var:format} and [[var]].
func interpolate(s string, vars map[string]string) string {
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		sm := varRE.FindStringSubmatch(m)
		name := sm[1] + sm[2] + sm[3]
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}

// runQuery runs q and returns the number of series or streams it answered.
func runQuery(base, ds, q string, instant bool, start, end time.Time, step time.Duration) (int, error) {
	var (
		u    string
		data struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		}
	)
	switch ds {
	case "prometheus":
		p := url.Values{"query": {q}}
		if instant {
			p.Set("time", strconv.FormatInt(end.Unix(), 10))
			u = base + "/api/v1/query?" + p.Encode()
		} else {
			p.Set("start", strconv.FormatInt(start.Unix(), 10))
			p.Set("end", strconv.FormatInt(end.Unix(), 10))
			p.Set("step", strconv.Itoa(int(step.Seconds())))
			u = base + "/api/v1/query_range?" + p.Encode()
		}
	case "loki":
		p := url.Values{"query": {q}, "start": {strconv.FormatInt(start.UnixNano(), 10)}, "end": {strconv.FormatInt(end.UnixNano(), 10)},
			"limit": {"100"}, "step": {strconv.Itoa(int(step.Seconds()))}}
		u = base + "/loki/api/v1/query_range?" + p.Encode()
	default:
		return 0, fmt.Errorf("data source type %q not supported by the test", ds)
	}
	if err := getJSON(u, &data); err != nil {
		return 0, err
	}
	if data.ResultType == "scalar" || data.ResultType == "string" {
		return 1, nil
	}
	var rs []json.RawMessage
	if err := json.Unmarshal(data.Result, &rs); err != nil {
		return 0, fmt.Errorf("result: %w", err)
	}
	return len(rs), nil
}

// getJSON fetches a Prometheus- or Loki-style envelope into data.
func getJSON(u string, data any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &env) != nil || env.Status != "success" {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return json.Unmarshal(env.Data, data)
}

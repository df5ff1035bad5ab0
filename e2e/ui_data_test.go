package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
)

// The UI tests' data: one training run (r42) on 8 GPUs over two nodes, one
// of which (node-b gpu 1, rank 5) is faulty, loaded through remote write
// (dcgm-exporter's metric and label names) and Loki push, as an agent and
// a log shipper would. The bench/ scenario generator was not on main when
// this was written; this loader stands in for it.
const (
	uiRun        = "r42"
	uiFaultyHost = "node-b"
	uiFaultyGPU  = "1"
	uiFaultyRank = "5"
	uiTraceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	uiErrorLine  = "NCCL watchdog timeout: rank 5 (node-b gpu 1) missed allreduce after 600s"
	uiStep       = 15 * time.Second
)

// uiGPU is one GPU of the run.
type uiGPU struct {
	host, gpu, uuid, rank string
}

func (g uiGPU) faulty() bool { return g.host == uiFaultyHost && g.gpu == uiFaultyGPU }

func uiGPUs() []uiGPU {
	var out []uiGPU
	rank := 0
	for _, host := range []string{"node-a", "node-b"} {
		for i := 0; i < 4; i++ {
			out = append(out, uiGPU{host: host, gpu: strconv.Itoa(i), uuid: fmt.Sprintf("GPU-%08x-0000-4000-8000-%012d", 0xa100+rank, rank), rank: strconv.Itoa(rank)})
			rank++
		}
	}
	return out
}

// wobble is deterministic noise in [-1, 1].
func wobble(i, k int) float64 {
	return math.Sin(float64(i)*0.37+float64(k)*1.7) * math.Cos(float64(i)*0.11+float64(k))
}

// loadTrainingRun writes the run's last hour, ending at end, into weft, and
// returns the first and last sample times.
func loadTrainingRun(t testing.TB, base string, end time.Time) (time.Time, time.Time) {
	t.Helper()
	end = end.Truncate(uiStep)
	start := end.Add(-time.Hour)
	var series []prompb.TimeSeries
	for k, g := range uiGPUs() {
		lbl := func(name string) []prompb.Label {
			return []prompb.Label{
				{Name: "__name__", Value: name}, {Name: "Hostname", Value: g.host}, {Name: "UUID", Value: g.uuid},
				{Name: "gpu", Value: g.gpu}, {Name: "model", Value: "llama-3-8b"}, {Name: "modelName", Value: "NVIDIA H100 80GB HBM3"},
				{Name: "rank", Value: g.rank}, {Name: "run_id", Value: uiRun}, {Name: "team", Value: "vision"},
			}
		}
		util, power, temp, fb := prompb.TimeSeries{Labels: lbl("DCGM_FI_DEV_GPU_UTIL")}, prompb.TimeSeries{Labels: lbl("DCGM_FI_DEV_POWER_USAGE")},
			prompb.TimeSeries{Labels: lbl("DCGM_FI_DEV_GPU_TEMP")}, prompb.TimeSeries{Labels: lbl("DCGM_FI_DEV_FB_USED")}
		step := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "train_step_seconds"}, {Name: "rank", Value: g.rank}, {Name: "run_id", Value: uiRun}}}
		i := 0
		for ts := start; !ts.After(end); ts = ts.Add(uiStep) {
			ms := ts.UnixMilli()
			u, p, c, s := 96+2*wobble(i, k), 640+15*wobble(i, k+3), 68+2*wobble(i, k+5), 1.21+0.03*wobble(i, k+7)
			if g.faulty() {
				u, p, c, s = 34+4*wobble(i, k), 260+20*wobble(i, k), 86+wobble(i, k), 1.21+0.03*wobble(i, k+7)
			}
			util.Samples = append(util.Samples, prompb.Sample{Timestamp: ms, Value: math.Round(u)})
			power.Samples = append(power.Samples, prompb.Sample{Timestamp: ms, Value: p})
			temp.Samples = append(temp.Samples, prompb.Sample{Timestamp: ms, Value: math.Round(c)})
			fb.Samples = append(fb.Samples, prompb.Sample{Timestamp: ms, Value: 71000 + 300*wobble(i, k)})
			step.Samples = append(step.Samples, prompb.Sample{Timestamp: ms, Value: s})
			if g.rank == "0" && i%20 == 0 {
				step.Exemplars = append(step.Exemplars, prompb.Exemplar{
					Labels: []prompb.Label{{Name: "trace_id", Value: fmt.Sprintf("%032x", 0xabc000+i)}}, Value: s, Timestamp: ms,
				})
			}
			i++
		}
		series = append(series, util, power, temp, fb, step)
	}
	remoteWrite(t, base, series)

	// Logs: a progress line per rank every minute, the faulty rank's error.
	var streams []map[string]any
	for _, g := range uiGPUs() {
		var values [][]any
		n := 0
		for ts := start; !ts.After(end); ts = ts.Add(time.Minute) {
			line := fmt.Sprintf("level=info msg=\"step done\" step=%d loss=%.3f rank=%s", 1000+n, 2.5-float64(n)*0.01, g.rank)
			values = append(values, []any{strconv.FormatInt(ts.UnixNano(), 10), line, map[string]string{"trace_id": fmt.Sprintf("%032x", 0xdef000+n*8+len(values))}})
			n++
		}
		if g.rank == uiFaultyRank {
			values = append(values, []any{strconv.FormatInt(end.Add(-10*time.Minute).UnixNano(), 10), "level=error msg=\"" + uiErrorLine + "\"", map[string]string{"trace_id": uiTraceID}})
		}
		streams = append(streams, map[string]any{
			"stream": map[string]string{"service_name": "trainer", "run_id": uiRun, "rank": g.rank, "host": g.host},
			"values": values,
		})
	}
	lokiPush(t, base, streams)
	return start, end
}

// loadBenchData writes the benchmark's data ending at end: 100 series of
// one metric over an hour at 15 s, and 64 GPUs (8 nodes × 8) of run
// "bench64" over 6 h at 15 s.
func loadBenchData(t testing.TB, base string, end time.Time) {
	t.Helper()
	end = end.Truncate(uiStep)
	var series []prompb.TimeSeries
	for s := 0; s < 100; s++ {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "bench_requests"}, {Name: "instance", Value: fmt.Sprintf("i%03d", s)}}}
		i := 0
		for t := end.Add(-time.Hour); !t.After(end); t = t.Add(uiStep) {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t.UnixMilli(), Value: 100 + float64(s) + 10*wobble(i, s)})
			i++
		}
		series = append(series, ts)
	}
	remoteWrite(t, base, series)
	for node := 0; node < 8; node++ {
		series = series[:0]
		for gpu := 0; gpu < 8; gpu++ {
			k := node*8 + gpu
			ts := prompb.TimeSeries{Labels: []prompb.Label{
				{Name: "__name__", Value: "DCGM_FI_DEV_GPU_UTIL"}, {Name: "Hostname", Value: fmt.Sprintf("bnode-%d", node)},
				{Name: "UUID", Value: fmt.Sprintf("GPU-b%07x", k)}, {Name: "gpu", Value: strconv.Itoa(gpu)}, {Name: "run_id", Value: "bench64"},
			}}
			i := 0
			for t := end.Add(-6 * time.Hour); !t.After(end); t = t.Add(uiStep) {
				v := 95 + 3*wobble(i, k)
				if k == 42 {
					v = 40
				}
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t.UnixMilli(), Value: v})
				i++
			}
			series = append(series, ts)
		}
		remoteWrite(t, base, series)
	}
}

// remoteWrite sends one remote-write 1.0 request.
func remoteWrite(t testing.TB, base string, series []prompb.TimeSeries) {
	t.Helper()
	req := &prompb.WriteRequest{Timeseries: series}
	raw, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	post(t, base+"/api/v1/write", "application/x-protobuf", s2.EncodeSnappy(nil, raw), map[string]string{"Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"})
}

// lokiPush sends one Loki JSON push.
func lokiPush(t testing.TB, base string, streams []map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"streams": streams})
	if err != nil {
		t.Fatal(err)
	}
	post(t, base+"/loki/api/v1/push", "application/json", b, nil)
}

func post(t testing.TB, url, ctype string, body []byte, hdr map[string]string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, msg)
	}
}

package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// vLLM's histogram bucket bounds (vllm/engine/metrics.py), shared with
// weft-bench's workload, and the router's (Prometheus client defaults up to a
// minute). Not to be modified.
var (
	E2EBuckets    = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60}
	TTFTBuckets   = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	routerBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
)

// Inference metric names (docs/scenarios.md).
const (
	MetricE2E          = "vllm:e2e_request_latency_seconds"
	MetricTTFT         = "vllm:time_to_first_token_seconds"
	MetricSuccess      = "vllm:request_success_total"
	MetricPromptTokens = "vllm:prompt_tokens_total"
	MetricGenTokens    = "vllm:generation_tokens_total"
	MetricRunning      = "vllm:num_requests_running"
	MetricWaiting      = "vllm:num_requests_waiting"
	MetricCache        = "vllm:gpu_cache_usage_perc"
	MetricHTTPRequests = "http_requests_total"
	MetricHTTPDuration = "http_request_duration_seconds"
)

// profile is how a model version serves: latency and error rate.
type profile struct {
	latency, ttft, errRate float64 // latency factors over the service's base, share of 500s
}

// service is one inference service: vLLM replicas of one model behind the
// shared router.
type service struct {
	name, model, team string
	version           string // the version new replicas get
	profiles          map[string]profile
	replicas          []*replica
	rps               float64 // per replica
	mu, sigma         float64 // lognormal e2e latency (s) of the base profile
	ttftMu            float64
	promptTok, genTok float64
	rng               *rand.Rand
	router            *router
	httpReq           map[string]*Series // version/code
	httpDur           map[string]*histo  // version
	rollAt            []int64            // replica i switches to rollTo at rollAt[i]
	rollTo            string
}

// replica is one vLLM server pod on tp GPUs.
type replica struct {
	idx         int
	pod         string
	version     string
	slots       []*slot
	e2e, ttft   *histo
	counters    [4]*Series // success stop, success length, prompt, generation tokens
	gauges      [3]*Series // running, waiting, cache
	stop, len   float64
	prompt, gen float64
	stream      *Stream
	api, worker int // trace resources
	offset      int64
}

// router is the shared HTTP gateway in front of every service.
type router struct {
	pod    string
	res    int
	stream *Stream
	offset int64
}

func (w *world) newRouter() *router {
	rt := &router{pod: "inference-router-7c9f5d8b6-x2kqp", offset: 1234 % w.iv}
	rt.res = w.newResource(Label{Name: "service.name", Value: "inference-router"}, Label{Name: "service.instance.id", Value: rt.pod},
		Label{Name: "k8s.namespace.name", Value: "serving"}, Label{Name: "k8s.pod.name", Value: rt.pod}, Label{Name: "host.name", Value: "cpu-node-1"})
	rt.stream = w.newStream(Label{Name: "container", Value: "router"}, Label{Name: "job", Value: "inference-router"}, Label{Name: "namespace", Value: "serving"}, Label{Name: "pod", Value: rt.pod})
	return rt
}

// newService declares a service of replicas, each on tp consecutive slots.
func (w *world) newService(rt *router, name, model, version, team string, slots []*slot, tp int, rps, latency float64) *service {
	s := &service{name: name, model: model, version: version, team: team, rps: rps, router: rt,
		profiles: map[string]profile{version: {1, 1, 0.001}}, rng: w.rand(uint64(0x5e7 + len(w.services))),
		httpReq: map[string]*Series{}, httpDur: map[string]*histo{}}
	s.mu, s.sigma = math.Log(latency), 0.45
	s.ttftMu = math.Log(latency / 25)
	s.promptTok, s.genTok = 400+400*s.rng.Float64(), 120+200*s.rng.Float64()
	for i := 0; i+tp <= len(slots); i += tp {
		rp := &replica{idx: len(s.replicas), slots: slots[i : i+tp]}
		s.replicas = append(s.replicas, rp)
	}
	w.services = append(w.services, s)
	return s
}

func (s *service) start(w *world, rp *replica, t int64) {
	rp.version = s.version
	rp.pod = fmt.Sprintf("%s-%s-%s", s.name, strings.ReplaceAll(rp.version, ".", "-"), podSuffix(s.rng))
	rp.offset = s.rng.Int64N(w.iv)
	n := rp.slots[0].n
	ctx := []Label{{Name: "container", Value: "vllm"}, {Name: "model", Value: s.model}, {Name: "model_version", Value: rp.version}, {Name: "namespace", Value: "serving"}, {Name: "pod", Value: rp.pod}, {Name: "team", Value: s.team}}
	for _, sl := range rp.slots {
		sl.place(t, ctx)
		sl.act = gputelemetry.Activity{Phase: gputelemetry.PhaseLoading, Warm: 4, FBMiB: 74_000}
	}
	lbl := []Label{{Name: "instance", Value: rp.pod + ":8000"}, {Name: "job", Value: "vllm"}, {Name: "model", Value: s.model}, {Name: "model_name", Value: s.model}, {Name: "model_version", Value: rp.version},
		{Name: "namespace", Value: "serving"}, {Name: "node", Value: n.name}, {Name: "pod", Value: rp.pod}, {Name: "service", Value: s.name}}
	rp.e2e = w.newHisto(MetricE2E, E2EBuckets, lbl)
	rp.ttft = w.newHisto(MetricTTFT, TTFTBuckets, lbl)
	rp.counters = [4]*Series{
		w.newSeries(MetricSuccess, Counter, lbl, []Label{{Name: "finished_reason", Value: "stop"}}),
		w.newSeries(MetricSuccess, Counter, lbl, []Label{{Name: "finished_reason", Value: "length"}}),
		w.newSeries(MetricPromptTokens, Counter, lbl),
		w.newSeries(MetricGenTokens, Counter, lbl),
	}
	rp.gauges = [3]*Series{w.newSeries(MetricRunning, Gauge, lbl), w.newSeries(MetricWaiting, Gauge, lbl), w.newSeries(MetricCache, Gauge, lbl)}
	rp.stop, rp.len, rp.prompt, rp.gen = 0, 0, 0, 0
	res := []Label{{Name: "k8s.namespace.name", Value: "serving"}, {Name: "k8s.pod.name", Value: rp.pod}, {Name: "k8s.node.name", Value: n.name}, {Name: "host.name", Value: n.name},
		{Name: "ai.model.name", Value: s.model}, {Name: "ai.model.version", Value: rp.version}, {Name: "ai.team", Value: s.team}}
	rp.api = w.newResource(append([]Label{{Name: "service.name", Value: s.name}, {Name: "service.version", Value: rp.version}}, res...)...)
	rp.worker = w.newResource(append([]Label{{Name: "service.name", Value: "gpu-worker"}, {Name: "service.version", Value: rp.version}, {Name: "gpu.uuid", Value: rp.slots[0].dev.UUID}}, res...)...)
	rp.stream = w.newOTLPStream("vllm.entrypoints.openai", append([]Label{{Name: "service.name", Value: s.name}, {Name: "service.version", Value: rp.version}}, res...)...)
}

func podSuffix(rng *rand.Rand) string {
	const chars = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = chars[rng.IntN(len(chars))]
	}
	return string(b)
}

func (s *service) stopReplica(t int64, rp *replica) {
	rp.e2e.stale(t + rp.offset)
	rp.ttft.stale(t + rp.offset)
	stale(t+rp.offset, rp.counters[:]...)
	stale(t+rp.offset, rp.gauges[:]...)
}

// advance simulates the service's requests over the interval ending at t.
func (s *service) advance(w *world, t int64) {
	dt := float64(w.iv) / 1000
	for i, rp := range s.replicas {
		if rp.pod == "" {
			s.start(w, rp, t)
		}
		if len(s.rollAt) > i && w.at(t, s.rollAt[i]) && rp.version != s.rollTo {
			s.stopReplica(t, rp)
			old := rp.pod
			s.version = s.rollTo
			s.start(w, rp, t)
			w.deployLog(t, fmt.Sprintf("rollout %s: replica %s (model %s %s) ready, replaced %s", s.name, rp.pod, s.model, rp.version, old))
		}
		p := s.profiles[rp.version]
		ts := t + rp.offset
		lam := s.rps * dt * (1 + 0.15*math.Sin(float64(t)/3.6e6*2*math.Pi+float64(i)))
		n := math.Max(0, math.Round(lam+s.rng.NormFloat64()*math.Sqrt(lam)))
		errs := math.Min(n, math.Max(0, math.Round(n*p.errRate+s.rng.NormFloat64()*math.Sqrt(n*p.errRate))))
		ok := n - errs
		mu := s.mu + math.Log(p.latency)
		rp.e2e.observe(ok, mu, s.sigma)
		rp.ttft.observe(ok, s.ttftMu+math.Log(p.ttft), 0.6)
		rp.e2e.emit(ts)
		rp.ttft.emit(ts)
		stop := math.Round(ok * 0.86)
		rp.stop += stop
		rp.len += ok - stop
		rp.prompt += math.Round(ok * s.promptTok * (0.9 + 0.2*s.rng.Float64()))
		rp.gen += math.Round(ok * s.genTok * (0.9 + 0.2*s.rng.Float64()))
		for k, v := range []float64{rp.stop, rp.len, rp.prompt, rp.gen} {
			rp.counters[k].add(ts, v)
		}
		mean := math.Exp(mu + s.sigma*s.sigma/2)
		running := math.Max(0, math.Round(n/dt*mean+s.rng.NormFloat64()))
		waiting := math.Max(0, math.Round(s.rng.NormFloat64()*0.8+(p.latency-1)*4))
		cache := math.Min(0.98, running*0.03+0.05+0.02*s.rng.Float64())
		rp.gauges[0].add(ts, running)
		rp.gauges[1].add(ts, waiting)
		rp.gauges[2].add(ts, round(cache, 4))
		for _, sl := range rp.slots {
			// The engine's kernels hold a plateau that follows the load.
			sl.act.Step++
			if sl.act.Step >= 4 {
				sl.act.Phase = gputelemetry.PhaseTraining
			}
			sl.act.Level = math.Min(97, 35+running*4)
			sl.act.Tensor = 0.2
			sl.act.NVLinkGBps = 20 + running
		}
		s.routerCount(w, rp, t+s.router.offset, ok, errs, mu)
		rp.statsLog(s, ts, n/dt, running, waiting, cache)
		s.requests(w, rp, t, ok, errs, mu, p)
		if errs > 0 {
			w.ev.seen("errors/"+s.name+"/"+rp.version, t)
		}
	}
}

// routerCount records the router's view at its scrape rt: requests by
// code, latency. Every replica of a version adds to the same series.
func (s *service) routerCount(w *world, rp *replica, rt int64, ok, errs, mu float64) {
	for _, c := range []struct {
		code string
		n    float64
	}{{"200", ok}, {"500", errs}} {
		key := rp.version + "/" + c.code
		sr := s.httpReq[key]
		if sr == nil {
			if c.n == 0 {
				continue
			}
			sr = w.newSeries(MetricHTTPRequests, Counter, []Label{{Name: "code", Value: c.code}, {Name: "instance", Value: s.router.pod + ":8080"}, {Name: "job", Value: "inference-router"},
				{Name: "method", Value: "POST"}, {Name: "model", Value: s.model}, {Name: "model_version", Value: rp.version}, {Name: "namespace", Value: "serving"}, {Name: "service", Value: s.name}})
			s.httpReq[key] = sr
		}
		if n := len(sr.T); n > 0 && sr.T[n-1] == rt {
			sr.V[n-1] += c.n // another replica's share of this scrape
			continue
		}
		last := 0.0
		if len(sr.V) > 0 {
			last = sr.V[len(sr.V)-1]
		}
		sr.add(rt, last+c.n)
	}
	h := s.httpDur[rp.version]
	if h == nil {
		h = w.newHisto(MetricHTTPDuration, routerBuckets, []Label{{Name: "instance", Value: s.router.pod + ":8080"}, {Name: "job", Value: "inference-router"},
			{Name: "model", Value: s.model}, {Name: "model_version", Value: rp.version}, {Name: "namespace", Value: "serving"}, {Name: "service", Value: s.name}})
		s.httpDur[rp.version] = h
	}
	h.observe(ok+errs, mu+0.004/math.Exp(mu), s.sigma)
	if len(h.countS.T) == 0 || h.countS.T[len(h.countS.T)-1] < rt {
		h.emit(rt)
	} else {
		h.overwrite()
	}
}

// statsLog is vLLM's periodic engine line.
func (rp *replica) statsLog(s *service, ts int64, rps, running, waiting, cache float64) {
	stamp := time.UnixMilli(ts).UTC().Format("01-02 15:04:05")
	line := fmt.Sprintf("INFO %s [metrics.py:455] Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Swapped: 0 reqs, Pending: %d reqs, GPU KV cache usage: %.1f%%, CPU KV cache usage: 0.0%%.",
		stamp, rps*s.promptTok, rps*s.genTok, int(running), int(waiting), cache*100)
	rp.stream.Entries = append(rp.stream.Entries, Entry{T: ts * 1e6, Line: line, Severity: "INFO"})
}

// requests traces one request per replica per interval, and one in five
// failed ones, each with the router's access log line and the server's.
func (s *service) requests(w *world, rp *replica, t int64, ok, errs, mu float64, p profile) {
	traced := 0
	if ok > 0 {
		traced = 1
	}
	failed := 0
	for i := 0; i < int(errs) && failed < 3; i++ {
		if s.rng.Float64() < 0.2 {
			failed++
		}
	}
	for i := 0; i < traced+failed; i++ {
		s.request(w, rp, t+s.rng.Int64N(w.iv), mu, p, i >= traced)
	}
	// Every failure is in the router's log, traced or not.
	for i := failed; i < int(errs); i++ {
		at := t + s.rng.Int64N(w.iv)
		s.router.access(at, s, rp, 500, math.Exp(mu+s.sigma*s.rng.NormFloat64())*0.3, TraceID{})
	}
}

func (s *service) request(w *world, rp *replica, at int64, mu float64, p profile, failed bool) {
	lat := math.Exp(mu + s.sigma*s.rng.NormFloat64())
	ttft := math.Min(lat*0.8, math.Exp(s.ttftMu+math.Log(p.ttft)+0.6*s.rng.NormFloat64()))
	code := 200
	if failed {
		code, lat = 500, lat*0.3
	}
	tid := w.traceID()
	st := at * 1e6
	ns := func(sec float64) int64 { return st + int64(sec*1e9) }
	route := "/v1/chat/completions"
	if strings.HasPrefix(s.name, "embed") {
		route = "/v1/embeddings"
	}
	msg := ""
	if failed {
		msg = "RuntimeError: shape '[1, 32, -1, 128]' is invalid for input of size 262144"
	}
	var serverID SpanID
	w.data.Spans, serverID = InferenceCall{Trace: tid, Start: st, Latency: lat, TTFT: ttft, Route: route, Model: s.model, Version: rp.version, Pod: rp.pod,
		PromptTokens: int(s.promptTok), GenTokens: int(s.genTok), Failed: failed, Message: msg,
		Router: s.router.res, API: rp.api, Worker: rp.worker}.AppendSpans(w.data.Spans, w.spanID)
	reqID := "chatcmpl-" + hexID(tid[:6])
	sev, line := "INFO", fmt.Sprintf("Finished request %s: prompt_tokens=%d generation_tokens=%d e2e=%.3fs ttft=%.3fs", reqID, int(s.promptTok), int(s.genTok), lat, ttft)
	if failed {
		sev, line = "ERROR", fmt.Sprintf("Request %s failed: %s (model %s %s)", reqID, msg, s.model, rp.version)
	}
	rp.stream.Entries = append(rp.stream.Entries, Entry{T: ns(lat + 0.004), Line: line, Severity: sev, TraceID: tid, SpanID: serverID,
		Meta: []Label{{Name: "request_id", Value: reqID}}})
	s.router.access(at, s, rp, code, lat, tid)
}

// access is the router's access log line (logfmt), with the request's
// trace ID as structured metadata when it was traced.
func (rt *router) access(at int64, s *service, rp *replica, code int, lat float64, tid TraceID) {
	level := "info"
	if code >= 500 {
		level = "error"
	}
	line := fmt.Sprintf("level=%s msg=request method=POST path=/v1/chat/completions service=%s model=%s model_version=%s upstream=%s status=%d duration_ms=%d",
		level, s.name, s.model, rp.version, rp.pod, code, int(lat*1000))
	e := Entry{T: at*1e6 + int64(lat*1e9) + 6e6, Line: line}
	if tid != (TraceID{}) {
		e.Meta = []Label{{Name: "trace_id", Value: hexID(tid[:])}}
	}
	rt.stream.Entries = append(rt.stream.Entries, e)
}

// deployLog is the deployment controller's log.
func (w *world) deployLog(t int64, msg string) {
	if w.deployer == nil {
		w.deployer = w.newStream(Label{Name: "job", Value: "deployer"}, Label{Name: "namespace", Value: "serving"})
	}
	w.deployer.Entries = append(w.deployer.Entries, Entry{T: t*1e6 + 250e6, Line: "level=info component=rollout-controller msg=\"" + msg + "\""})
}

// histo is a classic cumulative histogram fed by a lognormal latency model.
type histo struct {
	bounds       []float64
	counts       []float64
	sum, count   float64
	buckets      []*Series // one per bound, then +Inf
	sumS, countS *Series
}

func (w *world) newHisto(family string, bounds []float64, ls []Label) *histo {
	h := &histo{bounds: bounds, counts: make([]float64, len(bounds)+1)}
	for i := 0; i <= len(bounds); i++ {
		le := "+Inf"
		if i < len(bounds) {
			le = strconv.FormatFloat(bounds[i], 'f', -1, 64)
		}
		h.buckets = append(h.buckets, w.newSeries(family+"_bucket", Histogram, ls, []Label{{Name: "le", Value: le}}))
	}
	h.sumS = w.newSeries(family+"_sum", Histogram, ls)
	h.countS = w.newSeries(family+"_count", Histogram, ls)
	return h
}

// observe adds n requests distributed by the lognormal CDF (counts stay
// integers and cumulative buckets monotonic).
func (h *histo) observe(n, mu, sigma float64) {
	prev := 0.0
	for i, b := range h.bounds {
		c := math.Max(prev, math.Round(n*0.5*math.Erfc(-(math.Log(b)-mu)/(sigma*math.Sqrt2))))
		h.counts[i] += c
		prev = c
	}
	h.counts[len(h.bounds)] += n
	h.count += n
	h.sum += n * math.Exp(mu+sigma*sigma/2)
}

func (h *histo) emit(t int64) {
	for i, s := range h.buckets {
		s.add(t, h.counts[i])
	}
	h.sumS.add(t, round(h.sum, 6))
	h.countS.add(t, h.count)
}

// overwrite replaces the last emitted sample of every part (several
// replicas feed one router histogram in one scrape).
func (h *histo) overwrite() {
	for i, s := range h.buckets {
		s.V[len(s.V)-1] = h.counts[i]
	}
	h.sumS.V[len(h.sumS.V)-1] = round(h.sum, 6)
	h.countS.V[len(h.countS.V)-1] = h.count
}

func (h *histo) stale(t int64) {
	stale(t, h.buckets...)
	stale(t, h.sumS, h.countS)
}

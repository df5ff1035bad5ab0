package bench

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/weftdb/weft/bench/scenario"
)

// TraceOptions configure GenerateTraces: the AI world's two trace shapes
// (scenario.InferenceCall and scenario.TrainingStep) at a chosen volume.
type TraceOptions struct {
	// Seed and End select the data: the same options give the same spans.
	Seed int64
	// Spans is the volume; generation stops at the first trace past it.
	Spans int
	// End is when the newest span ends; Span is the window covered before
	// it. Searches run over the window's last hour.
	End  time.Time
	Span time.Duration
	// Services are model services behind one router, Replicas each: every
	// replica has its API server and GPU worker resources.
	Services, Replicas int
	// Runs are training runs of RanksPerRun ranks each.
	Runs, RanksPerRun int
	// TrainingShare is the fraction of spans from training steps.
	TrainingShare float64
	// FailureRate is the fraction of inference calls that fail.
	FailureRate float64
	// SpansPerRequest bounds an OTLP request; Workers is how many requests
	// are in flight at once.
	SpansPerRequest, Workers int
	// ByID is how many trace IDs the trace-by-ID measurement looks up.
	ByID int
	// SearchQuantile sets each search's minimum duration: that quantile of
	// the service's span durations in the search hour.
	SearchQuantile float64
}

// DefaultTraceOptions are the measurement of record's (docs/benchmarks.md).
func DefaultTraceOptions() TraceOptions {
	return TraceOptions{
		Seed: 1, Spans: 1_000_000, Span: 2 * time.Hour,
		Services: 4, Replicas: 4, Runs: 2, RanksPerRun: 16,
		TrainingShare: 0.5, FailureRate: 0.01,
		SpansPerRequest: 2000, Workers: 8, ByID: 300, SearchQuantile: 0.99,
	}
}

// Validate reports options that cannot generate a workload.
func (o TraceOptions) Validate() error {
	switch {
	case o.Spans <= 0:
		return errors.New("spans must be positive")
	case o.Span < 2*time.Hour:
		return errors.New("span must be at least 2h (searches cover the last hour)")
	case o.End.IsZero():
		return errors.New("end must be set")
	case o.Services <= 0 || o.Replicas <= 0 || o.Runs <= 0 || o.RanksPerRun <= 0:
		return errors.New("services, replicas, runs and ranks must be positive")
	case o.TrainingShare < 0 || o.TrainingShare > 1 || o.FailureRate < 0 || o.FailureRate > 1:
		return errors.New("training share and failure rate must be in [0, 1]")
	case o.SpansPerRequest <= 0 || o.Workers <= 0 || o.ByID <= 0:
		return errors.New("spans per request, workers and by-ID lookups must be positive")
	case o.SearchQuantile <= 0 || o.SearchQuantile >= 1:
		return errors.New("search quantile must be in (0, 1)")
	}
	return nil
}

// TraceRequest is one encoded OTLP/HTTP traces request (protobuf, gzip).
type TraceRequest struct {
	Body  []byte
	Spans int
}

// TraceLookup is one trace the trace-by-ID measurement fetches, with the
// number of spans it holds.
type TraceLookup struct {
	ID    scenario.TraceID
	Spans int
}

// TraceSearch is one search by service and minimum duration over
// [Start, End] (unix ns). Must holds the traces every correct answer
// contains (a matching span and every span inside the range); May those it
// may contain (a matching span overlapping the range): stores differ on
// whether the range bounds span starts or whole traces. MayAnySpan is May
// for a store that matches the service and the duration on any spans of a
// trace, not necessarily the same one (Jaeger's Badger store intersects a
// service index with a duration index of every service).
type TraceSearch struct {
	Service     string
	MinDuration time.Duration
	Start, End  int64
	Limit       int
	Must, May   map[scenario.TraceID]bool
	MayAnySpan  map[scenario.TraceID]bool
}

// TraceWorkload is a generated trace workload. Immutable once generated.
type TraceWorkload struct {
	Opts      TraceOptions
	Spans     int
	Traces    int
	Resources int
	Requests  []TraceRequest
	Bytes     int // request bodies
	Lookups   []TraceLookup
	Searches  []TraceSearch
	GenTime   time.Duration
}

// inferenceProfile is one model service's latency model.
type inferenceProfile struct {
	name, model, route string
	latency            float64 // median end-to-end, s
}

var inferenceProfiles = []inferenceProfile{
	{"llama-8b-chat", "meta-llama/Llama-3.1-8B-Instruct", "/v1/chat/completions", 0.9},
	{"llama-70b-chat", "meta-llama/Llama-3.1-70B-Instruct", "/v1/chat/completions", 2.8},
	{"embed-bge", "BAAI/bge-large-en-v1.5", "/v1/embeddings", 0.04},
	{"mixtral-chat", "mistralai/Mixtral-8x7B-Instruct", "/v1/chat/completions", 1.6},
	{"qwen-32b-chat", "Qwen/Qwen2.5-32B-Instruct", "/v1/chat/completions", 1.9},
	{"deepseek-v3", "deepseek-ai/DeepSeek-V3", "/v1/chat/completions", 3.5},
}

// inferenceSpansPerCall is the spans of a successful call (a failed one has
// no decode span).
const inferenceSpansPerCall = 5

// GenerateTraces builds the workload: spans, their requests, the traces
// looked up by ID and the searches with their expected answers.
func GenerateTraces(o TraceOptions) (*TraceWorkload, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	began := time.Now()
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x7ace))
	ids := rand.New(rand.NewPCG(uint64(o.Seed), 0x1d5))
	traceID := func() (id scenario.TraceID) {
		for i := range id {
			id[i] = byte(ids.Uint32())
		}
		return id
	}
	spanID := func() (id scenario.SpanID) {
		for i := range id {
			id[i] = byte(ids.Uint32())
		}
		return id
	}
	end := o.End.UnixNano()
	start := end - o.Span.Nanoseconds()
	var res [][]scenario.Label
	newRes := func(ls ...scenario.Label) int { res = append(res, ls); return len(res) - 1 }
	lb := func(k, v string) scenario.Label { return scenario.Label{Name: k, Value: v} }

	// Resources: one router, per service replicas of API server and GPU
	// worker, per run its ranks.
	router := newRes(lb("service.name", "inference-router"), lb("service.instance.id", "inference-router-7c9f5d8b6-x2kqp"),
		lb("k8s.namespace.name", "serving"), lb("k8s.pod.name", "inference-router-7c9f5d8b6-x2kqp"), lb("host.name", "cpu-node-1"))
	type replica struct {
		pod, version string
		api, worker  int
	}
	services := make([][]replica, o.Services)
	for s := range services {
		p := inferenceProfiles[s%len(inferenceProfiles)]
		name := p.name
		if s >= len(inferenceProfiles) {
			name += "-" + strconv.Itoa(s/len(inferenceProfiles))
		}
		for r := range o.Replicas {
			version := "v" + strconv.Itoa(1+r%3) + ".0"
			node := fmt.Sprintf("gpu-node-%d", 1+(s*o.Replicas+r)/8)
			pod := fmt.Sprintf("%s-%s-%d", name, version, r)
			common := []scenario.Label{lb("k8s.namespace.name", "serving"), lb("k8s.pod.name", pod), lb("k8s.node.name", node), lb("host.name", node),
				lb("ai.model.name", p.model), lb("ai.model.version", version), lb("ai.team", "serving")}
			rp := replica{pod: pod, version: version}
			rp.api = newRes(append([]scenario.Label{lb("service.name", name), lb("service.version", version)}, common...)...)
			rp.worker = newRes(append([]scenario.Label{lb("service.name", "gpu-worker"), lb("service.version", version),
				lb("gpu.uuid", fmt.Sprintf("GPU-%08x-%04x", s, r))}, common...)...)
			services[s] = append(services[s], rp)
		}
	}
	type run struct {
		id    string
		ranks []int
		base  float64 // median step time, s
	}
	runs := make([]run, o.Runs)
	for i := range runs {
		runs[i].id = fmt.Sprintf("r%d", 40+i)
		for k := range o.RanksPerRun {
			node := fmt.Sprintf("gpu-train-%d-%d", i, k/8)
			pod := fmt.Sprintf("trainer-%s-%d", runs[i].id, k)
			runs[i].ranks = append(runs[i].ranks, newRes(lb("service.name", "trainer"), lb("service.instance.id", pod+"/"+strconv.Itoa(k%8)),
				lb("host.name", node), lb("k8s.namespace.name", "research"), lb("k8s.pod.name", pod), lb("k8s.node.name", node),
				lb("ai.run.id", runs[i].id), lb("ai.rank", strconv.Itoa(k)), lb("ai.team", "research"), lb("ai.model.name", "llama-3-8b-pretrain"),
				lb("gpu.uuid", fmt.Sprintf("GPU-7a%06x-%04x", i, k))))
		}
	}

	// Volumes: training steps spread evenly over the runs and the window,
	// inference calls over the services, their replicas and the window.
	stepSpans := 1 + 5*o.RanksPerRun
	steps := int(math.Round(float64(o.Spans) * o.TrainingShare / float64(stepSpans)))
	calls := int(math.Round(float64(o.Spans) * (1 - o.TrainingShare) / inferenceSpansPerCall))
	spans := make([]scenario.Span, 0, o.Spans+stepSpans)
	traces := 0
	window := float64(o.Span.Nanoseconds())
	if perRun := steps / o.Runs; perRun > 0 {
		for i := range runs {
			r := &runs[i]
			r.base = window / 1e9 / float64(perRun)
			t := start
			for k := range perRun {
				ts := scenario.TrainingStep{Trace: traceID(), Start: t, RunID: r.id, Step: 1000 + k, Seq: 3000 + k, Comm: 0.06 * r.base, Root: r.ranks[0]}
				slow := -1
				if rng.Float64() < 0.02 { // a straggler step: one rank computes 1.5-3x longer
					slow = rng.IntN(len(r.ranks))
				}
				var longest float64
				for j, rr := range r.ranks {
					c := 0.8 * r.base * math.Exp(0.05*rng.NormFloat64())
					if j == slow {
						c *= 1.5 + 1.5*rng.Float64()
					}
					wt := 0.02 * r.base * math.Exp(0.5*rng.NormFloat64())
					ts.Ranks = append(ts.Ranks, scenario.StepRank{Resource: rr, Wait: wt, Compute: c})
					longest = max(longest, wt+c)
				}
				ts.End = t + int64((longest+0.06*r.base)*1e9)
				if ts.End > end { // nothing ends after the window
					break
				}
				spans = ts.AppendSpans(spans, spanID)
				traces++
				t = max(ts.End, start+int64(float64(k+1)*window/float64(perRun)))
			}
		}
	}
	for k := range calls {
		s := k % o.Services
		p := inferenceProfiles[s%len(inferenceProfiles)]
		rp := services[s][rng.IntN(o.Replicas)]
		lat := math.Exp(math.Log(p.latency) + 0.45*rng.NormFloat64())
		failed := rng.Float64() < o.FailureRate
		msg := ""
		if failed {
			lat *= 0.3
			msg = "RuntimeError: shape '[1, 32, -1, 128]' is invalid for input of size 262144"
		}
		ttft := math.Min(lat*0.8, p.latency/25*math.Exp(0.6*rng.NormFloat64()))
		at := start + int64(rng.Float64()*(window-(lat+0.01)*1e9))
		spans, _ = scenario.InferenceCall{Trace: traceID(), Start: at, Latency: lat, TTFT: ttft, Route: p.route, Model: p.model, Version: rp.version, Pod: rp.pod,
			PromptTokens: 200 + rng.IntN(800), GenTokens: 50 + rng.IntN(400), Failed: failed, Message: msg,
			Router: router, API: rp.api, Worker: rp.worker}.AppendSpans(spans, spanID)
		traces++
	}
	// Spans arrive as finished: in end order, so a trace's spans come in
	// several requests.
	slices.SortStableFunc(spans, func(a, b scenario.Span) int { return cmp.Compare(a.End, b.End) })

	w := &TraceWorkload{Opts: o, Spans: len(spans), Traces: traces, Resources: len(res)}
	for i := 0; i < len(spans); i += o.SpansPerRequest {
		batch := spans[i:min(i+o.SpansPerRequest, len(spans))]
		body, err := scenario.EncodeSpans(batch, res)
		if err != nil {
			return nil, err
		}
		w.Requests = append(w.Requests, TraceRequest{Body: body, Spans: len(batch)})
		w.Bytes += len(body)
	}
	w.Lookups = pickLookups(spans, o.ByID, rng)
	w.Searches = traceSearches(spans, res, o, end)
	w.GenTime = time.Since(began)
	return w, nil
}

// pickLookups draws n distinct traces (fewer when there are fewer).
func pickLookups(spans []scenario.Span, n int, rng *rand.Rand) []TraceLookup {
	count := map[scenario.TraceID]int{}
	var order []scenario.TraceID
	for i := range spans {
		if count[spans[i].Trace] == 0 {
			order = append(order, spans[i].Trace)
		}
		count[spans[i].Trace]++
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	out := make([]TraceLookup, 0, min(n, len(order)))
	for _, id := range order[:min(n, len(order))] {
		out = append(out, TraceLookup{ID: id, Spans: count[id]})
	}
	return out
}

// searchLimitFloor is the smallest result limit a search asks for; it is
// raised to twice the largest possible answer, so no answer is cut.
const searchLimitFloor = 100

// traceSearches builds one search per model service and one for the
// trainers, over the window's last hour, with the minimum duration at the
// options' quantile of the service's span durations in that hour.
func traceSearches(spans []scenario.Span, res [][]scenario.Label, o TraceOptions, end int64) []TraceSearch {
	from := end - time.Hour.Nanoseconds()
	svcs := make([]string, len(res))
	for r, ls := range res {
		for _, l := range ls {
			if l.Name == "service.name" {
				svcs[r] = l.Value
			}
		}
	}
	durs := map[string][]int64{}
	var names []string
	for i := range spans {
		sp := &spans[i]
		if sp.Start < from || sp.Start > end {
			continue
		}
		svc := svcs[sp.Resource]
		if svc == "inference-router" || svc == "gpu-worker" {
			continue
		}
		if _, ok := durs[svc]; !ok {
			names = append(names, svc)
		}
		durs[svc] = append(durs[svc], sp.End-sp.Start)
	}
	slices.Sort(names)
	// Trace extents, for Must.
	type extent struct{ first, last int64 }
	ext := map[scenario.TraceID]extent{}
	for i := range spans {
		sp := &spans[i]
		e, ok := ext[sp.Trace]
		if !ok {
			e = extent{sp.Start, sp.End}
		}
		e.first, e.last = min(e.first, sp.Start), max(e.last, sp.End)
		ext[sp.Trace] = e
	}
	// The longest span of each trace overlapping the range, for MayAnySpan.
	longest := map[scenario.TraceID]int64{}
	for i := range spans {
		if sp := &spans[i]; sp.End >= from && sp.Start <= end {
			longest[sp.Trace] = max(longest[sp.Trace], sp.End-sp.Start)
		}
	}
	var out []TraceSearch
	for _, svc := range names {
		d := durs[svc]
		slices.Sort(d)
		q := time.Duration(d[int(o.SearchQuantile*float64(len(d)-1))]).Truncate(time.Millisecond)
		s := TraceSearch{Service: svc, MinDuration: q, Start: from, End: end,
			Must: map[scenario.TraceID]bool{}, May: map[scenario.TraceID]bool{}, MayAnySpan: map[scenario.TraceID]bool{}}
		for i := range spans {
			sp := &spans[i]
			if sp.End >= from && sp.Start <= end && svcs[sp.Resource] == svc && longest[sp.Trace] >= q.Nanoseconds() {
				s.MayAnySpan[sp.Trace] = true
			}
			if sp.End-sp.Start < q.Nanoseconds() || sp.End < from || sp.Start > end || svcs[sp.Resource] != svc {
				continue
			}
			s.May[sp.Trace] = true
			if e := ext[sp.Trace]; e.first >= from && e.last <= end {
				s.Must[sp.Trace] = true
			}
		}
		s.Limit = max(searchLimitFloor, 2*len(s.MayAnySpan))
		out = append(out, s)
	}
	return out
}

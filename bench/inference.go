package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/prometheus/prometheus/prompb"

	"github.com/weftdb/weft/bench/scenario"
)

// vLLM's histogram bucket bounds (vllm/engine/metrics.py), as the
// scenarios use them.
var (
	e2eBuckets  = scenario.E2EBuckets
	ttftBuckets = scenario.TTFTBuckets
)

var serveModels = []string{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", "mistralai/Mixtral-8x7B-Instruct", "Qwen/Qwen2.5-32B-Instruct", "deepseek-ai/DeepSeek-V3"}

// SeriesPerReplica is the number of series one vLLM replica emits.
var SeriesPerReplica = (len(e2eBuckets) + 3) + (len(ttftBuckets) + 3) + 6

// histo is a classic cumulative histogram with a lognormal latency model.
type histo struct {
	bounds       []float64
	mu, sigma    float64 // of ln(latency)
	counts       []float64
	sum, count   float64
	buckets      []*series // one per bound, then +Inf
	sumS, countS *series
	family       string
}

func newHisto(family string, bounds []float64, mu, sigma float64, ls []prompb.Label, g *generator) *histo {
	h := &histo{bounds: bounds, mu: mu, sigma: sigma, counts: make([]float64, len(bounds)+1), family: family}
	for i := 0; i <= len(bounds); i++ {
		le := "+Inf"
		if i < len(bounds) {
			le = strconv.FormatFloat(bounds[i], 'f', -1, 64)
		}
		bl := append(append([]prompb.Label{}, ls...), prompb.Label{Name: "le", Value: le})
		h.buckets = append(h.buckets, newSeries(family+"_bucket", family, kindHistogram, bl))
	}
	h.sumS = newSeries(family+"_sum", family, kindHistogram, ls)
	h.countS = newSeries(family+"_count", family, kindHistogram, ls)
	g.created[family+"_bucket"] += len(bounds) + 1
	g.created[family+"_sum"]++
	g.created[family+"_count"]++
	return h
}

// observe adds n requests distributed by the lognormal CDF (counts stay
// integers and cumulative buckets stay monotonic).
func (h *histo) observe(n float64) {
	prev := 0.0
	for i, b := range h.bounds {
		c := math.Round(n * 0.5 * math.Erfc(-(math.Log(b)-h.mu)/(h.sigma*math.Sqrt2)))
		if c < prev {
			c = prev
		}
		h.counts[i] += c
		prev = c
	}
	h.counts[len(h.bounds)] += n
	h.count += n
	h.sum += n * math.Exp(h.mu+h.sigma*h.sigma/2)
}

func (h *histo) emit(t int64) {
	for i, s := range h.buckets {
		s.add(t, h.counts[i])
	}
	h.sumS.add(t, math.Round(h.sum*1e6)/1e6)
	h.countS.add(t, h.count)
}

func (h *histo) all(f func(*series)) {
	for _, s := range h.buckets {
		f(s)
	}
	f(h.sumS)
	f(h.countS)
}

// replica is one vLLM server pod; it is a scrape unit.
type replica struct {
	idx                  int
	rng                  *rand.Rand
	rate                 float64 // requests per second
	e2e, ttft            *histo
	prompt, gen, success *series
	running, waiting     *series
	cache                *series
	promptN, genN, succN float64
}

func newReplica(g *generator, idx int) *replica {
	rp := &replica{idx: idx, rng: rand.New(rand.NewPCG(uint64(g.opts.Seed), uint64(idx)<<1))}
	m := idx % len(serveModels)
	team := teams[(idx/len(serveModels))%len(teams)]
	ls := []prompb.Label{
		{Name: "model_name", Value: serveModels[m]},
		{Name: "pod", Value: fmt.Sprintf("vllm-%d-%05d", m, idx)},
		{Name: "namespace", Value: "serving"},
		{Name: "team", Value: team},
		{Name: "tenant", Value: "tenant-" + itoa(idx%3)},
		{Name: "instance", Value: fmt.Sprintf("10.%d.%d.%d:8000", idx>>16&255, idx>>8&255, idx&255)},
		{Name: "job", Value: "vllm"},
		{Name: "engine", Value: "0"},
	}
	ls = append(ls, padLabels(10, g.opts.LabelsPerSeries, idx)...)
	rp.rate = 2 + rp.rng.Float64()*20
	rp.e2e = newHisto("vllm:e2e_request_latency_seconds", e2eBuckets, math.Log(1.5+float64(m)), 0.6, ls, g)
	rp.ttft = newHisto("vllm:time_to_first_token_seconds", ttftBuckets, math.Log(0.05+0.03*float64(m)), 0.8, ls, g)
	mk := func(name string, k metricKind) *series {
		g.created[name]++
		return newSeries(name, name, k, ls)
	}
	rp.prompt = mk("vllm:prompt_tokens_total", kindCounter)
	rp.gen = mk("vllm:generation_tokens_total", kindCounter)
	rp.success = mk("vllm:request_success_total", kindCounter)
	rp.running = mk("vllm:num_requests_running", kindGauge)
	rp.waiting = mk("vllm:num_requests_waiting", kindGauge)
	rp.cache = mk("vllm:gpu_cache_usage_perc", kindGauge)
	return rp
}

func (rp *replica) scrape(g *generator, step int, t int64) {
	t += jitter(rp.rng, g.opts.ScrapeInterval)
	// Load follows a slow swing plus noise.
	lam := rp.rate * (1 + 0.3*math.Sin(float64(step)/40+float64(rp.idx))) * g.opts.ScrapeInterval.Seconds()
	n := math.Max(0, math.Round(lam+rp.rng.NormFloat64()*math.Sqrt(lam)))
	rp.e2e.observe(n)
	rp.ttft.observe(n)
	rp.e2e.emit(t)
	rp.ttft.emit(t)
	rp.promptN += math.Round(n * (400 + rp.rng.Float64()*200))
	rp.genN += math.Round(n * (150 + rp.rng.Float64()*100))
	rp.succN += n
	rp.prompt.add(t, rp.promptN)
	rp.gen.add(t, rp.genN)
	rp.success.add(t, rp.succN)
	running := math.Round(n / g.opts.ScrapeInterval.Seconds() * 2.5)
	rp.running.add(t, running)
	rp.waiting.add(t, math.Max(0, math.Round(rp.rng.NormFloat64()*2)))
	rp.cache.add(t, math.Round(math.Min(1, running/64+rp.rng.Float64()*0.05)*1e4)/1e4)
}

func (rp *replica) drain(f func(*series)) {
	g := func(s *series) {
		if len(s.buf) > 0 {
			f(s)
			s.buf = s.buf[:0]
		}
	}
	rp.e2e.all(g)
	rp.ttft.all(g)
	for _, s := range []*series{rp.prompt, rp.gen, rp.success, rp.running, rp.waiting, rp.cache} {
		g(s)
	}
}

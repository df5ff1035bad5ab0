package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"
)

// LogOptions describe a generated log workload: AI training and inference
// logs from a few dozen streams, spread over Span ending at End.
type LogOptions struct {
	Seed int64
	// Lines is the number of log lines generated (all streams together).
	Lines int
	// End is the newest timestamp; lines cover (End-Span, End]. Zero means
	// now, truncated to the second.
	End  time.Time
	Span time.Duration
	// Runs is the number of training runs; each has RanksPerRun trainer
	// streams, one eval stream and one GPU node stream per 8 ranks.
	Runs, RanksPerRun int
	// Replicas is the number of vLLM inference streams.
	Replicas int
	// TraceFraction of lines carry a trace_id.
	TraceFraction float64
	// LinesPerPush bounds the lines of one push request.
	LinesPerPush int
	// Workers is the number of concurrent send lanes; a stream always goes
	// through the same lane, so its lines arrive in time order.
	Workers int
}

// DefaultLogOptions are the bench-logs defaults: 48 streams, 24 h.
func DefaultLogOptions() LogOptions {
	return LogOptions{
		Seed: 1, Lines: 600_000, Span: 24 * time.Hour,
		Runs: 4, RanksPerRun: 8, Replicas: 8,
		TraceFraction: 0.1, LinesPerPush: 1000, Workers: 4,
	}
}

// Validate reports options that cannot generate a workload.
func (o LogOptions) Validate() error {
	switch {
	case o.Lines <= 0:
		return errors.New("lines must be positive")
	case o.Span < time.Hour:
		return errors.New("span must be at least 1h (the aggregation query covers the last hour)")
	case o.Runs <= 0 || o.RanksPerRun <= 0 || o.Replicas < 0:
		return errors.New("runs and ranks per run must be positive")
	case o.TraceFraction < 0 || o.TraceFraction > 1:
		return errors.New("trace fraction must be in [0, 1]")
	case o.LinesPerPush <= 0 || o.Workers <= 0:
		return errors.New("lines per push and workers must be positive")
	case int64(o.Span)/int64(o.Lines) < 2*int64(time.Millisecond):
		return errors.New("too many lines for the span (fewer than 2 ms apart)")
	}
	return nil
}

// LogStream is one generated stream: its labels (sorted by name) and how
// often it logs relative to the others.
type LogStream struct {
	Labels [][2]string
	Job    string
	RunID  string
	Rank   int
	weight float64
	json   bool // trainer lines as JSON instead of logfmt
}

// LogLine is one generated line's identity, enough to check answers.
type LogLine struct {
	TS   int64 // unix ns
	Line string
}

// LogExpect is what a target must answer, from the generator's own books.
type LogExpect struct {
	// Needle is a trace ID and NeedleLines every line that contains it.
	Needle      string
	NeedleLines []LogLine
	// AggStart and AggEnd bound the aggregation hour (ms aligned; no line
	// lies on either bound, so inclusive and exclusive bounds agree);
	// TrainerPerRun counts job="trainer" lines per run_id inside it.
	AggStart, AggEnd int64
	TrainerPerRun    map[string]int
	// MinTS and MaxTS bound every line.
	MinTS, MaxTS int64
}

// LogPayload is one pre-encoded Loki JSON push body.
type LogPayload struct {
	Body  []byte
	Lines int
	Lane  int
}

// LogWorkload is the generated, pre-encoded log workload.
type LogWorkload struct {
	Opts     LogOptions
	Streams  []LogStream
	Payloads []LogPayload
	Lines    int
	Bytes    int // line bytes (the text only)
	Expect   LogExpect
	GenTime  time.Duration
}

// GenerateLogs builds the workload deterministically from o (and o.End).
func GenerateLogs(o LogOptions) (*LogWorkload, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("log options: %w", err)
	}
	began := time.Now()
	if o.End.IsZero() {
		o.End = time.Now().Truncate(time.Second)
	}
	w := &LogWorkload{Opts: o, Streams: logStreams(o)}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x6c6f6773))
	cum := make([]float64, len(w.Streams))
	total := 0.0
	for i, s := range w.Streams {
		total += s.weight
		cum[i] = total
	}
	endNs := o.End.UnixNano()
	startNs := endNs - int64(o.Span)
	slot := int64(o.Span) / int64(o.Lines)
	const ms = int64(time.Millisecond)
	ex := &w.Expect
	ex.AggEnd = endNs / ms * ms
	ex.AggStart = ex.AggEnd - int64(time.Hour)
	ex.TrainerPerRun = map[string]int{}
	ex.MinTS, ex.MaxTS = math.MaxInt64, math.MinInt64

	enc := newLogEncoder(w, o)
	needleAt := o.Lines / 3 // the needle is the first trace started after this line
	needleTrace := -1
	traces := make([]logTrace, len(w.Streams)) // per stream: the open trace
	nextTrace := 0
	var buf []byte
	for i := range o.Lines {
		si := sort.SearchFloat64s(cum, rng.Float64()*total)
		si = min(si, len(w.Streams)-1)
		s := &w.Streams[si]
		ts := startNs + int64(i)*slot + 1 + rng.Int64N(slot-1)
		if ts%ms == 0 { // keep every line off ms-aligned query bounds
			ts++
		}
		trace := -1
		if rng.Float64() < o.TraceFraction {
			tr := &traces[si]
			if tr.left == 0 { // a new trace covers 1-4 lines of its stream
				tr.id, tr.left = nextTrace, 1+rng.IntN(4)
				nextTrace++
				if needleTrace < 0 && i >= needleAt {
					needleTrace = tr.id
				}
			}
			tr.left--
			trace = tr.id
		}
		buf = appendLogLine(buf[:0], rng, s, ts, startNs, trace, o.Seed)
		line := string(buf)
		if trace >= 0 && trace == needleTrace {
			ex.NeedleLines = append(ex.NeedleLines, LogLine{TS: ts, Line: line})
		}
		if s.Job == "trainer" && ts >= ex.AggStart && ts <= ex.AggEnd {
			ex.TrainerPerRun[s.RunID]++
		}
		ex.MinTS, ex.MaxTS = min(ex.MinTS, ts), max(ex.MaxTS, ts)
		w.Lines++
		w.Bytes += len(line)
		enc.add(si, ts, line)
	}
	enc.flushAll()
	if needleTrace < 0 {
		return nil, errors.New("no traced line after the first third; raise lines or trace fraction")
	}
	ex.Needle = traceID(o.Seed, needleTrace)
	w.GenTime = time.Since(began)
	return w, nil
}

type logTrace struct{ id, left int }

// traceID is a deterministic 32-hex-digit trace ID.
func traceID(seed int64, n int) string {
	r := rand.New(rand.NewPCG(uint64(seed)^0x7472616365, uint64(n)))
	return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
}

// logStreams lays out the streams: per run RanksPerRun trainer ranks, one
// eval job and one node (kernel/driver) log per 8 ranks; plus the vLLM
// replicas. Trainers log most.
func logStreams(o LogOptions) []LogStream {
	var ss []LogStream
	add := func(job, ns, pod, run string, rank int, weight float64, json bool) {
		ss = append(ss, LogStream{
			Labels: [][2]string{{"job", job}, {"namespace", ns}, {"pod", pod}, {"rank", strconv.Itoa(rank)}, {"run_id", run}},
			Job:    job, RunID: run, Rank: rank, weight: weight, json: json,
		})
	}
	models := []string{"llama-3-70b", "mixtral-8x22b", "qwen2-72b", "gpt-neox-20b"}
	for r := range o.Runs {
		run := fmt.Sprintf("run-%04x", 0x1a2b+r*0x111)
		ns := "train-" + models[r%len(models)]
		for k := range o.RanksPerRun {
			add("trainer", ns, fmt.Sprintf("%s-worker-%d", run, k), run, k, 1, r%2 == 1)
		}
		add("eval", ns, run+"-eval-0", run, 0, 0.15, false)
		for n := range (o.RanksPerRun + 7) / 8 {
			add("gpu-node", "kube-system", fmt.Sprintf("gpu-node-%02d-%d", r, n), run, n*8, 0.05, false)
		}
	}
	for k := range o.Replicas {
		m := models[k%len(models)]
		add("vllm", "inference", fmt.Sprintf("vllm-%s-%d", m, k), "serve-"+m, k, 0.6, false)
	}
	return ss
}

// stepEvery is the trainer step time, so step numbers grow with time.
const stepEvery = 2 * time.Second

// appendLogLine writes one realistic line of s at ts.
func appendLogLine(b []byte, rng *rand.Rand, s *LogStream, ts, startNs int64, trace int, seed int64) []byte {
	tsText := time.Unix(0, ts).UTC().Format("2006-01-02T15:04:05.000Z")
	p := rng.Float64()
	tid := ""
	if trace >= 0 {
		tid = traceID(seed, trace)
	}
	kv := func(b []byte, k, v string) []byte { return append(append(append(append(b, ' '), k...), '='), v...) }
	switch s.Job {
	case "trainer":
		step := (ts - startNs) / int64(stepEvery)
		loss := 2.4*math.Exp(-float64(step)/15000) + 0.35 + rng.NormFloat64()*0.02
		tput := 180000 + rng.NormFloat64()*4000
		switch {
		case p < 0.01:
			b = fmt.Appendf(b, "%s %s:%d:%d [%d] NCCL WARN Call to ibv_poll_cq failed: remote access error, retrying (attempt %d) run_id=%s", tsText, s.Labels[2][1], 4000+s.Rank, 4100+s.Rank, s.Rank, 1+rng.IntN(3), s.RunID)
		case p < 0.03:
			b = fmt.Appendf(b, "%s %s:%d:%d [%d] NCCL INFO Channel %02d/32 : %d[%d] -> %d[%d] via P2P/NVL comm 0x%x nRanks 8", tsText, s.Labels[2][1], 4000+s.Rank, 4100+s.Rank, s.Rank, rng.IntN(32), s.Rank, s.Rank, (s.Rank+1)%8, (s.Rank+1)%8, rng.Uint32())
		case p < 0.045:
			b = fmt.Appendf(b, `ts=%s level=warn msg="dataloader stall" run_id=%s rank=%d step=%d wait_ms=%d`, tsText, s.RunID, s.Rank, step, 200+rng.IntN(3000))
		case p < 0.05:
			b = fmt.Appendf(b, `ts=%s level=info msg="saved checkpoint" run_id=%s rank=%d step=%d path=s3://ckpt/%s/step-%d bytes=%d`, tsText, s.RunID, s.Rank, step, s.RunID, step, 1<<34+rng.Int64N(1<<30))
		case p < 0.052:
			b = fmt.Appendf(b, `ts=%s level=error msg="loss is nan, skipping batch" run_id=%s rank=%d step=%d`, tsText, s.RunID, s.Rank, step)
		case s.json:
			b = fmt.Appendf(b, `{"ts":"%s","level":"info","msg":"train step","run_id":"%s","rank":%d,"step":%d,"loss":%.4f,"lr":%.3e,"tokens_per_s":%.0f,"grad_norm":%.3f`,
				tsText, s.RunID, s.Rank, step, loss, 3e-4*math.Min(1, float64(step)/2000), tput, 0.6+rng.Float64()*0.6)
			if tid != "" {
				b = fmt.Appendf(b, `,"trace_id":"%s"`, tid)
			}
			return append(b, '}')
		default:
			b = fmt.Appendf(b, `ts=%s level=info msg="train step" run_id=%s rank=%d step=%d loss=%.4f lr=%.3e tokens_per_s=%.0f grad_norm=%.3f`,
				tsText, s.RunID, s.Rank, step, loss, 3e-4*math.Min(1, float64(step)/2000), tput, 0.6+rng.Float64()*0.6)
		}
	case "eval":
		b = fmt.Appendf(b, `ts=%s level=info msg="eval" run_id=%s step=%d dataset=mmlu accuracy=%.4f ppl=%.3f`, tsText, s.RunID, (ts-startNs)/int64(stepEvery), 0.5+rng.Float64()*0.3, 4+rng.Float64())
	case "gpu-node":
		switch {
		case p < 0.1:
			b = fmt.Appendf(b, "%s kernel: NVRM: Xid (PCI:0000:%02x:00): %d, pid=%d, name=python3, Ch %08x", tsText, 0x18+rng.IntN(8)*0x10, []int{13, 31, 43, 48, 63, 74, 79, 94}[rng.IntN(8)], 10000+rng.IntN(50000), rng.Uint32())
		case p < 0.4:
			b = fmt.Appendf(b, "%s nvidia-persistenced: device 0000:%02x:00.0 - persistence mode enabled, temp=%dC power=%dW", tsText, 0x18+rng.IntN(8)*0x10, 60+rng.IntN(25), 500+rng.IntN(200))
		default:
			b = fmt.Appendf(b, "%s kubelet: level=info msg=\"probe succeeded\" pod=%s-worker-%d probe=liveness", tsText, s.RunID, rng.IntN(8))
		}
	case "vllm":
		switch {
		case p < 0.02:
			b = fmt.Appendf(b, `%s WARNING scheduler.py:1234 Sequence group %d is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. total_num_cumulative_preemption=%d`, tsText, rng.IntN(1<<20), rng.IntN(500))
		default:
			b = fmt.Appendf(b, `%s INFO metrics.py:351 Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Pending: %d reqs, GPU KV cache usage: %.1f%%`,
				tsText, 2000+rng.Float64()*3000, 800+rng.Float64()*900, rng.IntN(64), rng.IntN(8), rng.Float64()*95)
		}
	}
	if tid != "" {
		b = kv(b, "trace_id", tid)
	}
	return b
}

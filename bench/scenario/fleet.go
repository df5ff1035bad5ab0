package scenario

import (
	"fmt"
	"time"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// base holds the workloads every scenario shares, so a scenario can pick
// its victim and culprit.
type base struct {
	pretrain  *trainRun // run A: 8 nodes x 8 GPUs, reads the shared dataset export
	finetune  *trainRun // run B: 4 nodes x GPUs 0-3
	multimod  *trainRun // run C: 2 nodes x 8 GPUs; a CUDA OOM restarts it (a decoy)
	chat      *service
	others    []*service
	router    *router
	decoyNode *node
}

// slotsOf returns GPUs from..to-1 of each node, node by node.
func slotsOf(nodes []*node, from, to int) []*slot {
	var out []*slot
	for _, n := range nodes {
		out = append(out, n.gpus[from:to]...)
	}
	return out
}

// build creates the shared world: 17 GPU nodes of training runs and
// inference services, plus the background groups of larger scales.
func (w *world) build() *base {
	var nodes []*node
	for i := 0; i < 17; i++ {
		nodes = append(nodes, w.addNode())
	}
	b := &base{router: w.newRouter()}
	b.pretrain = w.newRun("pt-llama70b-0427", "llama-3-70b", "pretrain", "fineweb-edu-v2", slotsOf(nodes[0:8], 0, 8), 2.4, 0)
	b.pretrain.readsExport = true
	b.finetune = w.newRun("ft-mixtral-0311", "mixtral-8x22b", "post-train", "ultrachat-200k", slotsOf(nodes[8:12], 0, 4), 1.6, 0)
	b.multimod = w.newRun("mm-dit-0158", "dit-xl-2", "multimodal", "laion-aesthetic-6p", slotsOf(nodes[12:14], 0, 8), 0.9, 0)
	speech := w.newRun("asr-whisper-0092", "whisper-large-v3", "speech", "common-voice-17", nodes[14].gpus, 0.6, 0)
	speech.endAt = w.start + (80 * time.Minute).Milliseconds()
	w.newRun("eval-llama8b-0517", "llama-3-8b", "eval", "mmlu-pro", nodes[14].gpus, 0.5, w.start+(90*time.Minute).Milliseconds())
	b.chat = w.newService(b.router, "chat-api", "llama-3.1-70b-instruct", "v2.3", "assistant", nodes[15].gpus, 2, 6, 1.4)
	b.others = append(b.others,
		w.newService(b.router, "code-assist", "qwen2.5-coder-32b-instruct", "v1.8", "devtools", nodes[16].gpus[0:4], 2, 4, 1.1),
		w.newService(b.router, "embed-search", "bge-m3", "v3.1", "search", nodes[16].gpus[4:8], 1, 30, 0.04))
	w.oomDecoy(b.multimod, w.o.Onset*45/100)
	b.decoyNode = nodes[1]
	w.warmDecoy(nodes[1].gpus[3], -27*time.Minute)

	teams := []string{"research", "recsys", "safety", "vision", "agents", "robotics"}
	for g := 1; g < scales[w.o.Scale]; g++ {
		var gn []*node
		for i := 0; i < 7; i++ {
			gn = append(gn, w.addNode())
		}
		team := teams[(g-1)%len(teams)]
		w.newRun(fmt.Sprintf("bg-%s-%02d-a", team, g), "llama-3-8b", team, "internal-mix-v7", slotsOf(gn[0:4], 0, 8), 1.1, 0)
		w.newRun(fmt.Sprintf("bg-%s-%02d-b", team, g), "qwen2-7b", team, "internal-mix-v7", slotsOf(gn[4:6], 0, 8), 0.8, 0)
		w.newService(b.router, fmt.Sprintf("%s-assist-%02d", team, g), "llama-3.1-8b-instruct", "v1.0", team, gn[6].gpus, 2, 8, 0.7)
	}
	return b
}

// oomDecoy: a rank of r runs out of memory `after` the start (well before
// the onset); the launcher stops the run and restarts it from its last
// checkpoint three minutes later, under the same run_id. Unrelated to every
// scenario's cause.
func (w *world) oomDecoy(r *trainRun, after time.Duration) {
	at := w.start + after.Milliseconds()
	r.killRank, r.killAt = 5, at
	r.killMsg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 5 has a total capacity of 79.19 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 78.06 GiB memory in use."
	r.teardownAt = at + 20_000
	again := w.newRun(r.id, r.model, r.team, r.dataset, r.slots, r.baseStep, at+3*time.Minute.Milliseconds())
	w.hooks = append(w.hooks, func(t int64) {
		if w.at(t, at) {
			again.step = float64(int(r.step) / 500 * 500) // resumes from its last checkpoint
			w.truthDecoy("CUDA out of memory on one rank of "+r.id+", restarted from its checkpoint", Where{RunID: r.id, Team: r.team, Ranks: []int{5}, Nodes: []string{r.slots[5].n.name}}, t)
		}
	})
}

// warmDecoy: one GPU runs 5 °C warmer from onset+offset, without
// throttling.
func (w *world) warmDecoy(s *slot, offset time.Duration) {
	from := w.onset + offset.Milliseconds()
	w.hooks = append(w.hooks, func(t int64) {
		if t >= from {
			s.faults.CoolingLoss = 5
		}
		if w.at(t, from) {
			w.truthDecoy("a GPU running 5 °C warmer, without throttling", Where{Nodes: []string{s.n.name}, GPUUUIDs: []string{s.dev.UUID}}, t)
		}
	})
}

func (w *world) truthDecoy(what string, where Where, t int64) {
	w.data.Truth.Decoys = append(w.data.Truth.Decoys, Decoy{What: what, Where: where, At: ms(t)})
}

// runWhere describes a run: its nodes, ranks and pods.
func runWhere(r *trainRun) Where {
	wh := Where{RunID: r.id, Team: r.team, Model: r.model}
	seen := map[string]bool{}
	for _, s := range r.slots {
		if !seen[s.n.name] {
			seen[s.n.name] = true
			wh.Nodes = append(wh.Nodes, s.n.name)
		}
	}
	return wh
}

// ranksOn returns r's ranks on node n, with their GPUs.
func ranksOn(r *trainRun, n *node) (ranks []int, uuids []string, slots []*slot) {
	for i, s := range r.slots {
		if s.n == n {
			ranks = append(ranks, i)
			uuids = append(uuids, s.dev.UUID)
			slots = append(slots, s)
		}
	}
	return ranks, uuids, slots
}

var _ = gputelemetry.PhaseIdle

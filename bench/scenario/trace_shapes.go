package scenario

import "strconv"

// The two trace shapes of the AI world, as pure functions of their
// parameters, so that the scenarios and the trace benchmark (bench,
// weft-bench -mode traces) build the same spans.

// InferenceCall is one traced inference request: the router's server span,
// its client span to a model-server replica, the replica's server span and
// the GPU worker's prefill and (unless the call failed) decode spans.
type InferenceCall struct {
	Trace   TraceID
	Start   int64   // unix ns
	Latency float64 // end to end, s
	TTFT    float64 // time to first token, s
	Route   string  // /v1/chat/completions, /v1/embeddings
	Model   string  // gen_ai.request.model
	Version string  // model_version
	Pod     string  // the replica's pod (server.address of the client span)
	// PromptTokens and GenTokens are the usage attributes of prefill and
	// decode.
	PromptTokens, GenTokens int
	Failed                  bool
	Message                 string // the server span's status message when failed
	// Router, API and Worker are the resources (Data.Resources indexes) of
	// the router, the replica's API server and its GPU worker.
	Router, API, Worker int
}

// AppendSpans appends c's spans to dst. Span IDs are drawn from id in the
// order root, client, server, prefill, decode. It returns the server span's
// ID (the one the replica's log line carries).
func (c InferenceCall) AppendSpans(dst []Span, id func() SpanID) ([]Span, SpanID) {
	code := "200"
	if c.Failed {
		code = "500"
	}
	ns := func(sec float64) int64 { return c.Start + int64(sec*1e9) }
	rootID, clientID, serverID := id(), id(), id()
	http := []Label{{Name: "http.request.method", Value: "POST"}, {Name: "http.route", Value: c.Route}, {Name: "http.response.status_code", Value: code},
		{Name: "gen_ai.request.model", Value: c.Model}, {Name: "model_version", Value: c.Version}}
	dst = append(dst,
		Span{Trace: c.Trace, ID: rootID, Name: "POST " + c.Route, Kind: KindServer, Start: c.Start, End: ns(c.Latency + 0.006), Error: c.Failed, Attrs: http, Resource: c.Router},
		Span{Trace: c.Trace, ID: clientID, Parent: rootID, Name: "POST", Kind: KindClient, Start: ns(0.001), End: ns(c.Latency + 0.005), Error: c.Failed,
			Attrs: []Label{{Name: "server.address", Value: c.Pod}, {Name: "http.response.status_code", Value: code}}, Resource: c.Router},
		Span{Trace: c.Trace, ID: serverID, Parent: clientID, Name: "POST " + c.Route, Kind: KindServer, Start: ns(0.002), End: ns(c.Latency + 0.004), Error: c.Failed, Message: c.Message,
			Attrs: http, Resource: c.API},
		Span{Trace: c.Trace, ID: id(), Parent: serverID, Name: "prefill", Kind: KindInternal, Start: ns(0.003), End: ns(0.003 + c.TTFT),
			Attrs: []Label{{Name: "gen_ai.usage.input_tokens", Value: strconv.Itoa(c.PromptTokens)}}, Resource: c.Worker},
	)
	if !c.Failed {
		dst = append(dst, Span{Trace: c.Trace, ID: id(), Parent: serverID, Name: "decode", Kind: KindInternal,
			Start: ns(0.003 + c.TTFT), End: ns(c.Latency + 0.003), Attrs: []Label{{Name: "gen_ai.usage.output_tokens", Value: strconv.Itoa(c.GenTokens)}}, Resource: c.Worker})
	}
	return dst, serverID
}

// TrainingStep is one traced step of a data-parallel training run: a root
// span on rank 0 and, per live rank, its data wait, forward, backward,
// all-reduce and optimizer spans. A rank's all-reduce lasts until the
// slowest rank is done computing (the barrier) plus the communication time.
type TrainingStep struct {
	Trace      TraceID
	Start, End int64 // unix ns
	RunID      string
	Step       int
	Seq        int     // NCCL collective sequence number
	Comm       float64 // all-reduce communication time, s
	Root       int     // the root span's resource (rank 0's)
	Ranks      []StepRank
}

// StepRank is one rank's part of a step.
type StepRank struct {
	Resource      int
	Wait, Compute float64 // data wait and compute time, s
	Dead          bool    // a dead rank still counts in the world size but has no spans
}

// AppendSpans appends s's spans to dst, drawing span IDs from id: the
// root's first, then each rank's five in order.
func (s TrainingStep) AppendSpans(dst []Span, id func() SpanID) []Span {
	root := id()
	step := strconv.Itoa(s.Step)
	dst = append(dst, Span{Trace: s.Trace, ID: root, Name: "train_step", Kind: KindInternal, Start: s.Start, End: s.End,
		Attrs: []Label{{Name: "run_id", Value: s.RunID}, {Name: "step", Value: step}, {Name: "world_size", Value: strconv.Itoa(len(s.Ranks))}}, Resource: s.Root})
	var barrier float64
	for _, rk := range s.Ranks {
		barrier = max(barrier, rk.Wait+0.92*rk.Compute)
	}
	sec := func(x float64) int64 { return s.Start + int64(x*1e9) }
	for i, rk := range s.Ranks {
		if rk.Dead {
			continue
		}
		c, wt := rk.Compute, rk.Wait
		phases := []struct {
			name     string
			from, to float64
		}{
			{"dataloader.next", 0, wt},
			{"forward", wt, wt + 0.34*c},
			{"backward", wt + 0.34*c, wt + 0.92*c},
			{"nccl:all_reduce", wt + 0.92*c, barrier + s.Comm},
			{"optimizer.step", barrier + s.Comm, barrier + s.Comm + 0.08*c},
		}
		for _, p := range phases {
			attrs := []Label{{Name: "rank", Value: strconv.Itoa(i)}, {Name: "step", Value: step}}
			if p.name == "nccl:all_reduce" {
				attrs = append(attrs, Label{Name: "nccl.op", Value: "ALLREDUCE"}, Label{Name: "nccl.seq", Value: strconv.Itoa(s.Seq)})
			}
			dst = append(dst, Span{Trace: s.Trace, ID: id(), Parent: root, Name: p.name, Kind: KindInternal,
				Start: sec(p.from), End: min(sec(p.to), s.End), Attrs: attrs, Resource: rk.Resource})
		}
	}
	return dst
}

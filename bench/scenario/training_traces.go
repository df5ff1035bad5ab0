package scenario

import (
	"encoding/hex"
	"strconv"
	"time"
)

func hexID(b []byte) string { return hex.EncodeToString(b) }

// traceStep traces the step that ended at t when one is due: a root span on
// rank 0 and, per rank, its data wait, forward, backward, all-reduce and
// optimizer spans. The slow rank's compute spans are the long ones; the
// others' all-reduce spans are (they wait for it).
func (r *trainRun) traceStep(w *world, t int64) {
	if r.elapsed < r.nextTrace {
		return
	}
	r.nextTrace += r.traceEvery
	end := t * 1e6
	ts := TrainingStep{Trace: w.traceID(), Start: end - int64(r.stepT*1e9), End: end, RunID: r.id, Step: int(r.step), Seq: r.seq,
		Comm: commShare * r.baseStep, Root: r.ranks[0].res, Ranks: make([]StepRank, len(r.ranks))}
	for i, rk := range r.ranks {
		ts.Ranks[i] = StepRank{Resource: rk.res, Wait: r.waitT[i], Compute: r.computeT[i], Dead: rk.dead}
	}
	w.data.Spans = ts.AppendSpans(w.data.Spans, w.spanID)
	r.seq++
}

// traceHung traces a step whose all-reduce hangs from at until the NCCL
// watchdog gives up on it, and returns its trace ID (the watchdog lines
// carry it).
func (r *trainRun) traceHung(w *world, at int64) TraceID {
	tid := w.traceID()
	st := at*1e6 - int64(0.9*r.baseStep*1e9)
	end := (at + ncclTimeout.Milliseconds()) * 1e6
	root := w.spanID()
	msg := "Watchdog caught collective operation timeout"
	w.data.Spans = append(w.data.Spans, Span{Trace: tid, ID: root, Name: "train_step", Kind: KindInternal, Start: st, End: end + 2e9,
		Error: true, Message: msg, Attrs: []Label{{Name: "run_id", Value: r.id}, {Name: "step", Value: strconv.Itoa(int(r.step))}, {Name: "world_size", Value: strconv.Itoa(len(r.ranks))}},
		Resource: r.ranks[0].res})
	for i, rk := range r.ranks {
		if rk.dead {
			continue
		}
		jit := int64(r.rng.IntN(1500)) * int64(time.Millisecond)
		w.data.Spans = append(w.data.Spans,
			Span{Trace: tid, ID: w.spanID(), Parent: root, Name: "backward", Kind: KindInternal, Start: st, End: at * 1e6,
				Attrs: []Label{{Name: "rank", Value: strconv.Itoa(i)}}, Resource: rk.res},
			Span{Trace: tid, ID: w.spanID(), Parent: root, Name: "nccl:all_reduce", Kind: KindInternal, Start: at * 1e6, End: end + jit,
				Error: true, Message: msg, Attrs: []Label{{Name: "rank", Value: strconv.Itoa(i)}, {Name: "nccl.op", Value: "ALLREDUCE"}, {Name: "nccl.seq", Value: strconv.Itoa(r.seq)}},
				Resource: rk.res})
	}
	return tid
}

package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TestBufferedPostings interleaves every kind of write (creations that
// repeat the previous stream's values or not, touches into other partitions,
// deletions, Persist and reopen) with every kind of read, at random points
// of the write buffers (postTail), and checks each read against a model.
func TestBufferedPostings(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	e := newTestEnv(t, Options{PartitionDuration: time.Hour})
	type stream struct {
		ls    labels.Labels
		parts map[int64]bool
	}
	live := map[ID]*stream{}
	job, pod := 0, 0
	newLabels := func() labels.Labels {
		// Runs of streams share job and pod, like the series of one target.
		if rng.IntN(10) == 0 {
			job = rng.IntN(5)
		}
		if rng.IntN(6) == 0 {
			pod = rng.IntN(40)
		}
		kv := []string{"__name__", fmt.Sprintf("m%d", rng.IntN(12)), "job", fmt.Sprint(job), "i", fmt.Sprint(rng.IntN(1000))}
		// Mostly every stream has pod (its name bitmap is the partition's
		// own), now and then one lacks it or has an extra label.
		if rng.IntN(8) != 0 {
			kv = append(kv, "pod", fmt.Sprint(pod))
		}
		if rng.IntN(8) == 0 {
			kv = append(kv, "extra", fmt.Sprint(rng.IntN(3)))
		}
		return labels.FromStrings(kv...)
	}
	// Partitions move on every 50 steps, right after a reopen, so new
	// partitions start in memory (where name bitmaps alias the partition's
	// own) as well as from disk.
	base := int64(0)
	check := func(step int) {
		t.Helper()
		ix := e.ix
		for _, tc := range []struct {
			part int64
			m    *labels.Matcher
		}{
			{0, mustMatcher(t, labels.MatchRegexp, "pod", ".+")},
			{0, mustMatcher(t, labels.MatchEqual, "job", fmt.Sprint(job))},
			{1, mustMatcher(t, labels.MatchEqual, "pod", fmt.Sprint(pod))},
			{2, mustMatcher(t, labels.MatchRegexp, "__name__", "m1.*")},
			{2, mustMatcher(t, labels.MatchNotEqual, "job", "0")},
			{0, mustMatcher(t, labels.MatchEqual, "pod", "")},
			{1, mustMatcher(t, labels.MatchNotEqual, "pod", "")},
			{2, mustMatcher(t, labels.MatchRegexp, "extra", ".+")},
			{0, mustMatcher(t, labels.MatchEqual, "extra", "")},
		} {
			tc.part += base
			want := []ID{}
			values := map[string]bool{}
			for id, s := range live {
				if s.parts[tc.part] && tc.m.Matches(s.ls.Get(tc.m.Name)) {
					want = append(want, id)
					if s.ls.Has("pod") {
						values[s.ls.Get("pod")] = true
					}
				}
			}
			slices.Sort(want)
			mint := tc.part * hourMs
			got := mustPostings(t, ix, KindMetric, mint, mint, tc.m)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: Postings(part %d, %v) = %v, want %v", step, tc.part, tc.m, got, want)
			}
			vs, err := ix.LabelValues(t.Context(), KindMetric, "pod", mint, mint, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			wantVs := []string{}
			for v := range values {
				wantVs = append(wantVs, v)
			}
			slices.Sort(wantVs)
			if !slices.Equal(vs, wantVs) {
				t.Fatalf("step %d: LabelValues(pod, part %d, %v) = %v, want %v", step, tc.part, tc.m, vs, wantVs)
			}
		}
		for part := base; part < base+3; part++ {
			wantNames := map[string]bool{}
			for _, s := range live {
				if s.parts[part] {
					s.ls.Range(func(l labels.Label) { wantNames[l.Name] = true })
				}
			}
			want := []string{}
			for n := range wantNames {
				want = append(want, n)
			}
			slices.Sort(want)
			got, err := ix.LabelNames(t.Context(), KindMetric, part*hourMs, part*hourMs)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: LabelNames(part %d) = %v, want %v", step, part, got, want)
			}
		}
		st, err := ix.Stats(t.Context(), KindMetric, base*hourMs, base*hourMs, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range live {
			if s.parts[base] {
				n++
			}
		}
		if st.NumStreams != uint64(n) {
			t.Fatalf("step %d: Stats streams = %d, want %d", step, st.NumStreams, n)
		}
	}
	for step := 0; step < 300; step++ {
		base = int64(step / 50)
		for i := rng.IntN(3 * postTailLen); i > 0; i-- {
			ls := newLabels()
			part := base + int64(rng.IntN(3))
			id := mustCreate(t, e.ix, KindMetric, ls, part*hourMs)
			s := live[id]
			if s == nil {
				s = &stream{ls: ls, parts: map[int64]bool{}}
				live[id] = s
			}
			s.parts[part] = true
		}
		switch rng.IntN(10) {
		case 0, 1: // touch a few streams into another partition
			for id, s := range live {
				if rng.IntN(8) == 0 {
					part := base + int64(rng.IntN(3))
					e.ix.Touch(id, part*hourMs)
					s.parts[part] = true
				}
			}
		case 2: // delete a few, possibly still buffered
			del := bitmapOf()
			for id := range live {
				if rng.IntN(6) == 0 {
					del.Add(uint64(id))
					delete(live, id)
				}
			}
			if err := e.ix.Delete(t.Context(), del); err != nil {
				t.Fatal(err)
			}
		case 3:
			if err := e.ix.Persist(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if step%50 == 49 || step%50 == 20 {
			e.reopen()
		}
		if rng.IntN(3) == 0 {
			check(step)
		}
	}
	check(-1)
	e.reopen()
	check(-2)
}

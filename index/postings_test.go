package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// matcherFixture is a small index with streams of two kinds.
func matcherFixture(t *testing.T) (*Index, map[string]ID) {
	ix, _, _ := testIndex(t, DefaultOptions())
	ids := map[string]ID{}
	add := func(name string, kind Kind, kv ...string) {
		ids[name] = mustCreate(t, ix, kind, labels.FromStrings(kv...), 0)
	}
	add("m1", KindMetric, "__name__", "gpu_util", "pod", "trainer-1", "run_id", "r42", "gpu", "0")
	add("m2", KindMetric, "__name__", "gpu_util", "pod", "trainer-2", "run_id", "r42", "gpu", "1")
	add("m3", KindMetric, "__name__", "gpu_temp", "pod", "infer-1", "run_id", "r7", "gpu", "0")
	add("m4", KindMetric, "__name__", "node_load", "host", "h1")
	add("l1", KindLog, "pod", "trainer-1", "run_id", "r42", "stream", "stderr")
	add("l2", KindLog, "pod", "infer-1", "stream", "stdout")
	return ix, ids
}

func TestPostingsMatchers(t *testing.T) {
	ix, ids := matcherFixture(t)
	type m = []string // type, name, value triples
	tests := []struct {
		name string
		kind Kind
		ms   []string
		want []string
	}{
		{"no matchers metric", KindMetric, nil, []string{"m1", "m2", "m3", "m4"}},
		{"no matchers any", KindAny, nil, []string{"m1", "m2", "m3", "m4", "l1", "l2"}},
		{"equal", KindMetric, m{"=", "__name__", "gpu_util"}, []string{"m1", "m2"}},
		{"equal unknown value", KindMetric, m{"=", "__name__", "nope"}, nil},
		{"equal unknown name", KindMetric, m{"=", "nope", "x"}, nil},
		{"run_id across kinds", KindAny, m{"=", "run_id", "r42"}, []string{"m1", "m2", "l1"}},
		{"run_id logs only", KindLog, m{"=", "run_id", "r42"}, []string{"l1"}},
		{"not equal (selects missing)", KindMetric, m{"!=", "run_id", "r42"}, []string{"m3", "m4"}},
		{"equal empty: label absent", KindAny, m{"=", "run_id", ""}, []string{"m4", "l2"}},
		{"not equal empty: label present", KindAny, m{"!=", "host", ""}, []string{"m4"}},
		{"dot plus", KindAny, m{"=~", "pod", ".+"}, []string{"m1", "m2", "m3", "l1", "l2"}},
		{"dot star matches all", KindMetric, m{"=~", "pod", ".*"}, []string{"m1", "m2", "m3", "m4"}},
		{"not dot plus: label absent", KindMetric, m{"!~", "pod", ".+"}, []string{"m4"}},
		{"not dot star: nothing", KindMetric, m{"!~", "pod", ".*"}, nil},
		{"alternation", KindAny, m{"=~", "pod", "trainer-2|infer-1"}, []string{"m2", "m3", "l2"}},
		{"prefix", KindAny, m{"=~", "pod", "trainer-.*"}, []string{"m1", "m2", "l1"}},
		{"general regexp", KindMetric, m{"=~", "pod", ".*-1"}, []string{"m1", "m3"}},
		{"not regexp", KindMetric, m{"!~", "pod", "trainer-.*"}, []string{"m3", "m4"}},
		{"not alternation", KindMetric, m{"!~", "gpu", "0|1"}, []string{"m4"}},
		{"regexp matching empty", KindMetric, m{"=~", "gpu", "|1"}, []string{"m2", "m4"}},
		{"not regexp not matching empty", KindMetric, m{"!~", "gpu", "|1"}, []string{"m1", "m3"}},
		{"anchored", KindMetric, m{"=~", "pod", "trainer"}, nil},
		{"case insensitive", KindMetric, m{"=~", "pod", "(?i)TRAINER-1"}, []string{"m1"}},
		{"intersection", KindAny, m{"=", "run_id", "r42", "=~", "pod", "trainer-.*", "!=", "gpu", "1"}, []string{"m1", "l1"}},
		{"only empty-matching", KindAny, m{"=", "gpu", "", "!=", "stream", "stdout"}, []string{"m4", "l1"}},
		{"empty result", KindAny, m{"=", "run_id", "r42", "=", "run_id", "r7"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ms []*labels.Matcher
			for i := 0; i < len(tc.ms); i += 3 {
				ms = append(ms, mustMatcher(t, matchType(t, tc.ms[i]), tc.ms[i+1], tc.ms[i+2]))
			}
			got := mustPostings(t, ix, tc.kind, 0, hourMs, ms...)
			want := []ID{}
			for _, n := range tc.want {
				want = append(want, ids[n])
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("Postings(%v, %v) = %v, want %v", tc.kind, ms, got, want)
			}
		})
	}
}

func matchType(tb testing.TB, s string) labels.MatchType {
	tb.Helper()
	switch s {
	case "=":
		return labels.MatchEqual
	case "!=":
		return labels.MatchNotEqual
	case "=~":
		return labels.MatchRegexp
	case "!~":
		return labels.MatchNotRegexp
	}
	tb.Fatalf("bad match type %q", s)
	return 0
}

// TestPostingsDifferential compares Postings with a brute-force evaluation
// (labels.Matcher.Matches on every stream's labels) on random-ish streams,
// random time ranges and random matchers covering every fast path.
func TestPostingsDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ix, _, _ := testIndex(t, Options{PartitionDuration: time.Hour})
	names := []string{"__name__", "pod", "gpu", "run_id", "zone"}
	values := []string{"a", "b", "ab", "ba", "abc", "trainer-1", "trainer-12", "infer-1", "0", "1", "x"}
	type stream struct {
		kind  Kind
		ls    labels.Labels
		parts map[int64]bool
	}
	streams := map[ID]*stream{}
	for i := 0; i < 600; i++ {
		var kv []string
		for _, n := range names {
			if rng.IntN(4) > 0 {
				kv = append(kv, n, values[rng.IntN(len(values))])
			}
		}
		if len(kv) == 0 {
			kv = []string{"zone", "z"}
		}
		// uid has many values, so selective queries check candidates
		// directly instead of scanning its values (filterCandidates).
		kv = append(kv, "uid", strconv.Itoa(rng.IntN(400)))
		kind := Kind(1 + rng.IntN(3))
		ls := labels.FromStrings(kv...)
		ts := int64(rng.IntN(6)) * hourMs
		id := mustCreate(t, ix, kind, ls, ts)
		s := streams[id]
		if s == nil {
			s = &stream{kind: kind, ls: ls, parts: map[int64]bool{}}
			streams[id] = s
		}
		s.parts[ts/hourMs] = true
		if rng.IntN(3) == 0 { // touch in another partition
			ts2 := int64(rng.IntN(6)) * hourMs
			ix.Touch(id, ts2+1)
			s.parts[ts2/hourMs] = true
		}
	}
	regexps := []string{"a", "a|b", "a|ab|x", ".*", ".+", "", "|a", "a.*", "ab.*", "trainer-.*", ".*1", "a.*c", "[ab]+", "(a|b)c?", "(?i)A", ".*a.*", "x|"}
	uidRegexps := []string{"1.*", ".*7", "[0-9]{2}", "1|22|333", ".+", "|5"}
	randMatcher := func() *labels.Matcher {
		if rng.IntN(6) == 0 {
			// A stream or two: a set regexp beside it checks these
			// candidates' values instead of building its union.
			return mustMatcher(t, labels.MatchEqual, "uid", strconv.Itoa(rng.IntN(400)))
		}
		if rng.IntN(5) == 0 {
			return mustMatcher(t, labels.MatchType(2+rng.IntN(2)), "uid", uidRegexps[rng.IntN(len(uidRegexps))])
		}
		n := names[rng.IntN(len(names))]
		typ := labels.MatchType(rng.IntN(4))
		v := values[rng.IntN(len(values))]
		if typ == labels.MatchRegexp || typ == labels.MatchNotRegexp {
			v = regexps[rng.IntN(len(regexps))]
		} else if rng.IntN(5) == 0 {
			v = ""
		}
		return mustMatcher(t, typ, n, v)
	}
	nonEmpty := 0
	for q := 0; q < 1500; q++ {
		ms := make([]*labels.Matcher, 1+rng.IntN(3))
		for i := range ms {
			ms[i] = randMatcher()
		}
		kind := Kind(rng.IntN(4))
		lo := int64(rng.IntN(7)) - 1
		hi := lo + int64(rng.IntN(4))
		mint, maxt := lo*hourMs+hourMs/2, hi*hourMs+hourMs/2
		var want []ID
		for id, s := range streams {
			if kind != KindAny && s.kind != kind {
				continue
			}
			inRange := false
			for p := range s.parts {
				if p >= lo && p <= hi {
					inRange = true
				}
			}
			ok := inRange
			for _, m := range ms {
				ok = ok && m.Matches(s.ls.Get(m.Name))
			}
			if ok {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		if want == nil {
			want = []ID{}
		}
		got := mustPostings(t, ix, kind, mint, maxt, ms...)
		if !slices.Equal(got, want) {
			t.Fatalf("query %d: Postings(%v, [%d,%d], %v):\n got %v\nwant %v", q, kind, lo, hi, ms, got, want)
		}
		if len(want) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 300 {
		t.Fatalf("only %d of 1500 random queries had results; the generator is too sparse to test much", nonEmpty)
	}
}

func TestPostingsResultIsCallers(t *testing.T) {
	ix, ids := matcherFixture(t)
	bm, err := ix.Postings(t.Context(), KindMetric, 0, 0, mustMatcher(t, labels.MatchRegexp, "pod", ".+"))
	if err != nil {
		t.Fatal(err)
	}
	bm.Clear()
	got := mustPostings(t, ix, KindMetric, 0, 0, mustMatcher(t, labels.MatchRegexp, "pod", ".+"))
	if want := []ID{ids["m1"], ids["m2"], ids["m3"]}; !slices.Equal(got, want) {
		t.Fatalf("after clearing a result: %v, want %v", got, want)
	}
}

// TestPrefixIndexUnderChurn interleaves prefix queries with new values and
// deletions, so the sorted value lists are merged, extended and hold refs of
// removed values.
func TestPrefixIndexUnderChurn(t *testing.T) {
	ix, _, _ := testIndex(t, DefaultOptions())
	rng := rand.New(rand.NewPCG(3, 4))
	live := map[ID]string{}
	matchers := []*labels.Matcher{
		mustMatcher(t, labels.MatchRegexp, "pod", "train-1.*"),
		mustMatcher(t, labels.MatchRegexp, "pod", "train-.*"),
		mustMatcher(t, labels.MatchNotRegexp, "pod", "train-2.*"),
		mustMatcher(t, labels.MatchRegexp, "pod", "infer.*"),
	}
	for round := 0; round < 40; round++ {
		for i := 0; i < 1+rng.IntN(30); i++ {
			pod := []string{"train-", "infer-", "x-"}[rng.IntN(3)] + strconv.Itoa(rng.IntN(300))
			id := mustCreate(t, ix, KindMetric, labels.FromStrings("pod", pod, "r", strconv.Itoa(round)), 0)
			live[id] = pod
		}
		if round%5 == 4 {
			del := bitmapOf()
			for id := range live {
				if rng.IntN(4) == 0 {
					del.Add(uint64(id))
					delete(live, id)
				}
			}
			if err := ix.Delete(t.Context(), del); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range matchers {
			want := []ID{}
			for id, pod := range live {
				if m.Matches(pod) {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			if got := mustPostings(t, ix, KindMetric, 0, 0, m); !slices.Equal(got, want) {
				t.Fatalf("round %d %v: got %v, want %v", round, m, got, want)
			}
		}
	}
}

// TestPostingsSetBesideNeighbour: a regexp over literal alternatives next
// to a selective matcher (a tenant of 10 streams beside one of 10,000 that
// shares its names) checks the few candidates' values, and next to an
// unselective one builds the union; both answer exactly.
func TestPostingsSetBesideNeighbour(t *testing.T) {
	ix, _, _ := testIndex(t, Options{})
	want := map[string][]ID{}
	for _, team := range []struct {
		name string
		n    int
	}{{"small", 10}, {"big", 10_000}} {
		for i := range team.n {
			id := mustCreate(t, ix, KindMetric, labels.FromStrings("__name__", fmt.Sprintf("gpu_m%d", i%10), "pod", fmt.Sprintf("%s-%d", team.name, i), "team", team.name), 1)
			if m := i % 10; m == 1 || m == 3 || m == 7 {
				want[team.name] = append(want[team.name], id)
			}
		}
	}
	for _, team := range []string{"small", "big"} {
		for _, re := range []string{"gpu_m1|gpu_m3|gpu_m7", "gpu_m7|gpu_m3|gpu_m1|gpu_m99"} {
			got := mustPostings(t, ix, KindMetric, 0, 10,
				mustMatcher(t, labels.MatchEqual, "team", team), mustMatcher(t, labels.MatchRegexp, "__name__", re))
			w := slices.Clone(want[team])
			slices.Sort(w)
			if !slices.Equal(got, w) {
				t.Errorf("team %s, __name__=~%q: %d streams %v, want %d", team, re, len(got), got, len(w))
			}
		}
	}
	if got := mustPostings(t, ix, KindMetric, 0, 10, mustMatcher(t, labels.MatchEqual, "team", "small"), mustMatcher(t, labels.MatchRegexp, "__name__", "nope|gone")); len(got) != 0 {
		t.Errorf("alternatives no stream has: %v", got)
	}
}

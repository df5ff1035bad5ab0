package logpattern

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/query/logql"
)

// mine feeds lines at sample time 0 and returns the patterns by text.
func mine(tb testing.TB, opts Options, lines []string) map[string]Pattern {
	tb.Helper()
	m := New(opts)
	for _, l := range lines {
		m.Add(l, 0)
	}
	out := map[string]Pattern{}
	for _, p := range m.Patterns() {
		out[p.Text] = p
	}
	return out
}

func TestMinerClusters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  map[string]int64 // pattern -> lines
	}{
		{
			name: "logfmt with varying IDs and durations",
			lines: []string{
				`level=info msg="request served" method=GET path=/api/users/123 status=200 duration=12ms`,
				`level=info msg="request served" method=GET path=/api/users/7 status=200 duration=3.1ms`,
				`level=info msg="request served" method=GET path=/api/orders/99812 status=200 duration=140ms`,
			},
			want: map[string]int64{`level=info msg="request served" method=GET path=<_> status=<_> duration=<_>`: 3},
		},
		{
			name: "different templates of one shape stay apart",
			lines: []string{
				`level=info msg=started job=backup-17 worker=3`,
				`level=info msg=listening addr=:8080 proto=http`,
				`level=info msg=started job=reindex-2 worker=1`,
				`level=info msg=listening addr=:9090 proto=grpc`,
			},
			want: map[string]int64{
				`level=info msg=started job=<_> worker=<_>`:   2,
				`level=info msg=listening addr=<_> proto=<_>`: 2,
			},
		},
		{
			name: "plain text with a leading timestamp",
			lines: []string{
				`2026-11-30T12:00:01.123Z INFO user 42 logged in from 10.0.0.7`,
				`2026-11-30T12:00:02.456Z INFO user 1337 logged in from 192.168.1.20`,
				`2026-11-30T12:00:03.001Z WARN disk /dev/sda1 is 91% full`,
				`2026-11-30T12:00:04.777Z INFO user 7 logged out`,
			},
			want: map[string]int64{
				`<_> INFO user <_> logged in from <_>`: 2,
				`<_> WARN disk /dev/sda1 is <_> full`:  1,
				`<_> INFO user <_> logged out`:         1,
			},
		},
		{
			name: "JSON keys stay literal",
			lines: []string{
				`{"level":"info","msg":"request done","latency":"12ms","trace_id":"0af7651916cd43dd8448eb211c80319c"}`,
				`{"level":"info","msg":"request done","latency":"3s","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`,
			},
			want: map[string]int64{`{"level":"info","msg":"request done","latency":<_>,"trace_id":<_>`: 2},
		},
		{
			name:  "a constant line ends in a capture",
			lines: []string{"checkpoint complete", "checkpoint complete"},
			want:  map[string]int64{"checkpoint complete<_>": 2},
		},
		{
			name:  "double spaces are kept",
			lines: []string{"GET  /a 200", "GET  /b 200"},
			want:  map[string]int64{"GET  <_> <_>": 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mine(t, DefaultOptions(), tc.lines)
			if len(got) != len(tc.want) {
				t.Errorf("got %d patterns, want %d: %v", len(got), len(tc.want), keys(got))
			}
			for text, n := range tc.want {
				if got[text].Total != n {
					t.Errorf("pattern %q: %d lines, want %d (have %v)", text, got[text].Total, n, keys(got))
				}
			}
			checkLogQL(t, got, tc.lines)
		})
	}
}

func keys(m map[string]Pattern) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// checkLogQL proves that every pattern is a valid LogQL pattern filter and
// that the lines, filtered by all patterns together, are all kept.
func checkLogQL(tb testing.TB, ps map[string]Pattern, lines []string) {
	tb.Helper()
	src := &memSource{ls: labels.FromStrings("app", "x")}
	for i, l := range lines {
		src.es = append(src.es, logql.Entry{Timestamp: int64(i + 1), Line: l})
	}
	eng := logql.NewEngine(src, logql.EngineOptions{})
	matched := map[string]bool{}
	for text := range ps {
		q := `{app="x"} |> ` + strconv.Quote(text)
		res, err := eng.Query(context.Background(), logql.QueryParams{Query: q, Start: 0, End: int64(len(lines) + 1), Direction: logql.Forward})
		if err != nil {
			tb.Fatalf("pattern %q in LogQL: %v", text, err)
		}
		for _, s := range res.Streams {
			for _, e := range s.Entries {
				matched[e.Line] = true
			}
		}
	}
	for _, l := range lines {
		if !matched[l] {
			tb.Errorf("line %q matches none of its patterns %v", l, keys(ps))
		}
	}
}

type memSource struct {
	ls labels.Labels
	es []logql.Entry
}

func (s *memSource) Select(_ context.Context, p logql.SelectParams) (logql.EntryIterator, error) {
	var es []logql.Entry
	for _, e := range s.es {
		if e.Timestamp >= p.Start && e.Timestamp < p.End {
			es = append(es, e)
		}
	}
	return &memIter{ls: s.ls, es: es, i: -1}, nil
}

type memIter struct {
	ls labels.Labels
	es []logql.Entry
	i  int
}

func (it *memIter) Next() bool                       { it.i++; return it.i < len(it.es) }
func (it *memIter) At() (labels.Labels, logql.Entry) { return it.ls, it.es[it.i] }
func (it *memIter) Err() error                       { return nil }
func (it *memIter) Close() error                     { return nil }

func TestMinerSamples(t *testing.T) {
	m := New(DefaultOptions())
	for i := range 10 {
		m.Add(fmt.Sprintf("request %d served", i), int64(i/4)*10) // 4, 4, 2 lines at 0, 10, 20
	}
	m.Add("shutting down now", 20)
	ps := m.Patterns()
	if len(ps) != 2 || ps[0].Text != "request <_> served" || ps[0].Total != 10 {
		t.Fatalf("patterns %+v", ps)
	}
	want := []Sample{{0, 4}, {10, 4}, {20, 2}}
	if fmt.Sprint(ps[0].Samples) != fmt.Sprint(want) {
		t.Errorf("samples %v, want %v", ps[0].Samples, want)
	}
	if ps[1].Text != "shutting down now<_>" || fmt.Sprint(ps[1].Samples) != fmt.Sprint([]Sample{{20, 1}}) {
		t.Errorf("second pattern %+v", ps[1])
	}
}

func TestMinerBounds(t *testing.T) {
	t.Run("max clusters", func(t *testing.T) {
		o := DefaultOptions()
		o.MaxClusters = 3
		m := New(o)
		words := []string{"alpha", "bravo", "charlie", "delta", "echo"}
		for _, w := range words {
			m.Add(w+" started", 0)
		}
		if !m.Add("alpha started", 0) {
			t.Error("a line of a kept cluster was dropped")
		}
		if got := len(m.Patterns()); got != 3 {
			t.Errorf("%d patterns, want 3", got)
		}
		if m.Dropped() != 2 {
			t.Errorf("dropped %d, want 2", m.Dropped())
		}
		// Once full, the tree stops growing: new paths are not kept.
		before := countNodes(m)
		for i := range 1000 {
			m.Add(fmt.Sprintf("word%c%c started at %d", 'a'+i%26, 'a'+i/26%26, i), 0)
		}
		if after := countNodes(m); after != before || m.Dropped() != 1002 {
			t.Errorf("tree grew from %d to %d nodes when full; dropped %d", before, after, m.Dropped())
		}
	})
	t.Run("max tokens", func(t *testing.T) {
		o := DefaultOptions()
		o.MaxTokens = 4
		got := mine(t, o, []string{"a b c d e f g", "a b c x y z", "a b c"})
		if got["a b c <_>"].Total != 2 || got["a b c<_>"].Total != 1 {
			t.Errorf("patterns %v", keys(got))
		}
	})
	t.Run("max line bytes", func(t *testing.T) {
		o := DefaultOptions()
		o.MaxLineBytes = 16
		long1 := "upload done " + strings.Repeat("x", 100)
		long2 := "upload done " + strings.Repeat("y", 5000)
		got := mine(t, o, []string{long1, long2})
		if len(got) != 1 || got["upload done <_>"].Total != 2 {
			t.Errorf("patterns %v", keys(got))
		}
	})
}

func TestRenderMergesTouchingWildcards(t *testing.T) {
	// Keys that vary become wildcards next to their values' wildcards.
	got := mine(t, DefaultOptions(), []string{"x y a=one", "x y b=two"})
	if _, ok := got["x y <_>"]; !ok || len(got) != 1 {
		t.Errorf("patterns %v", keys(got))
	}
}

func TestNumeric(t *testing.T) {
	for s, want := range map[string]bool{
		"42": true, "12ms": true, "3.1s": true, "10.0.0.7": true, "2026-11-30T12:00:01Z": true,
		"0af7651916cd43dd8448eb211c80319c": true, "91%": true,
		"sda1": false, "http2": false, "backup-17": false, "GET": false, "": false, "-": false,
	} {
		if got := numeric(s); got != want {
			t.Errorf("numeric(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestMinerAllVariableLines(t *testing.T) {
	m := New(DefaultOptions())
	for i := range 50 {
		m.Add(fmt.Sprintf("%d %d.%d", i, i*7, i%3), 0)
	}
	ps := m.Patterns()
	if len(ps) != 1 || ps[0].Text != "<_> <_>" || ps[0].Total != 50 || len(m.clusters) != 1 {
		t.Fatalf("patterns %+v from %d clusters", ps, len(m.clusters))
	}
}

func countNodes(m *Miner) int {
	var walk func(n *node) int
	walk = func(n *node) int {
		c := 1
		for _, ch := range n.children {
			c += walk(ch)
		}
		return c
	}
	total := 0
	for _, n := range m.root {
		total += walk(n)
	}
	return total
}

// A miner's memory is bounded by its options, not by the lines it reads:
// 5,000 lines that share nothing (each a new pattern) keep at most
// MaxClusters templates of at most MaxTokens tokens alive, about what 500
// such lines keep.
func TestMinerMemoryBounded(t *testing.T) {
	live := func(f func() *Miner) (uint64, *Miner) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := f()
		runtime.GC()
		runtime.ReadMemStats(&after)
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc), m
	}
	o := DefaultOptions()
	feed := func(n int) func() *Miner {
		return func() *Miner {
			m := New(o)
			var b strings.Builder
			for i := range n {
				b.Reset()
				for k := range 200 { // 200 tokens, over MaxTokens, of distinct words
					fmt.Fprintf(&b, "w%c%c%c ", 'a'+(i+k)%26, 'a'+(i/26+k)%26, 'a'+(i/676+k)%26)
				}
				m.Add(b.String(), int64(i%100))
			}
			return m
		}
	}
	small, m1 := live(feed(500))
	large, m2 := live(feed(5000))
	t.Logf("live heap: %d bytes after 500 lines, %d after 5,000", small, large)
	if len(m2.Patterns()) > o.MaxClusters || m2.Dropped() == 0 {
		t.Fatalf("%d patterns, %d dropped", len(m2.Patterns()), m2.Dropped())
	}
	// ~300 templates of 128 tokens: a few MB, whatever the lines read.
	if large > 16<<20 || large > 2*small {
		t.Fatalf("live heap %d bytes after 5,000 lines, %d after 500", large, small)
	}
	runtime.KeepAlive(m1)
	runtime.KeepAlive(m2)
}

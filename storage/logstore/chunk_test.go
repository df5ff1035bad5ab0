package logstore

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
)

func TestChunkRoundTrip(t *testing.T) {
	cases := map[string][]logentry.Entry{
		"one":   {ent(5, "x")},
		"empty": {ent(-3, ""), ent(-3, "", "k", "")},
		"mixed": {ent(1, "level=info a"), ent(1, "ünïcode ✓", "trace_id", "0af7651916cd43dd8448eb211c80319c", "span_id", "b7ad6b7169203331"), ent(1e18, strings.Repeat("long ", 1000))},
	}
	for name, es := range cases {
		t.Run(name, func(t *testing.T) {
			head, filter, data := encodeChunk(es)
			m, err := decodeChunkMeta(head)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.setFilter(filter); err != nil {
				t.Fatal(err)
			}
			if m.n != len(es) || m.minT != es[0].Timestamp || m.maxT != es[len(es)-1].Timestamp {
				t.Fatalf("meta %+v", m)
			}
			got, err := decodeChunkEntries(nil, m, data)
			if err != nil {
				t.Fatal(err)
			}
			ts, err := decodeChunkTimestamps(nil, m, data)
			if err != nil || len(ts) != len(es) {
				t.Fatalf("timestamps %v: %v", ts, err)
			}
			var names []string
			for _, e := range es {
				e.Metadata.Range(func(l labels.Label) {
					if !slices.Contains(names, l.Name) {
						names = append(names, l.Name)
					}
				})
			}
			slices.Sort(names)
			var gotNames []string
			m.eachName(func(n string) { gotNames = append(gotNames, n) })
			if !slices.Equal(gotNames, names) {
				t.Fatalf("metadata names %q, want %q", gotNames, names)
			}
			for i := range es {
				if ts[i] != es[i].Timestamp {
					t.Fatalf("timestamp %d: %d, want %d", i, ts[i], es[i].Timestamp)
				}
				if got[i].Timestamp != es[i].Timestamp || got[i].Line != es[i].Line || !labels.Equal(got[i].Metadata, es[i].Metadata) {
					t.Fatalf("entry %d: %+v, want %+v", i, got[i], es[i])
				}
			}
		})
	}
}

// The token filter never rules out a chunk holding a line that contains the
// needle: every substring of every line, and every metadata pair, passes.
func TestFilterSound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"error", "GPU", "x", "ab", "timeout", "0af7651916cd43dd8448eb211c80319c", "rank=3", "ü✓", "a-b_c", "  ", "{\"level\":\"warn\"}"}
	var es []logentry.Entry
	for i := range 200 {
		var sb strings.Builder
		for range 1 + r.IntN(8) {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(" =:/,"[r.IntN(5)])
		}
		es = append(es, ent(int64(i), sb.String(), "trace_id", fmt.Sprintf("%016x", r.Uint64())))
	}
	head, filter, _ := encodeChunk(es)
	m, err := decodeChunkMeta(head)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.setFilter(filter); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		for i := 0; i < len(e.Line); i++ {
			for j := i + 1; j <= len(e.Line); j++ {
				if !m.filter.mayContain(e.Line[i:j]) {
					t.Fatalf("filter rules out %q, a substring of %q", e.Line[i:j], e.Line)
				}
			}
		}
		if !m.filter.mayHaveMeta("trace_id", e.Metadata.Get("trace_id")) {
			t.Fatalf("filter rules out metadata %s", e.Metadata)
		}
	}
	// And it rules out most needles that are not there.
	out := 0
	for i := range 1000 {
		if !m.filter.mayContain(fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15)) {
			out++
		}
	}
	if out < 990 {
		t.Fatalf("filter ruled out only %d of 1000 absent IDs (fill %.2f)", out, m.filter.fillRatio())
	}
}

func FuzzDecodeChunk(f *testing.F) {
	head, filter, data := encodeChunk([]logentry.Entry{ent(1, "a b c", "k", "v"), ent(2, "d")})
	f.Add(head, filter, data)
	f.Add([]byte{chunkVersion, 1, 2, 2, 0}, []byte{}, []byte{})
	f.Add([]byte{chunkVersionV1, 1, 2, 2, 0, 0, 0}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, head, filter, data []byte) {
		m, err := decodeChunkMeta(head)
		if err != nil {
			return
		}
		if m.version == chunkVersion && m.setFilter(filter) != nil {
			return
		}
		m.filter.mayContain("abcdef gh")
		m.hasName("k")
		decodeChunkTimestamps(nil, m, data)
		decodeChunkEntries(nil, m, data)
	})
}

func FuzzDecodeEntries(f *testing.F) {
	f.Add(appendEntries(nil, []logentry.Entry{ent(1, "a", "k", "v")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := decodeEntries(nil, b)
		if err != nil {
			return
		}
		// Every decoded entry took at least three bytes of input.
		if 3*len(es) > len(b) {
			t.Fatalf("%d entries from %d bytes", len(es), len(b))
		}
	})
}

func TestEntriesSize(t *testing.T) {
	for _, es := range [][]logentry.Entry{
		nil,
		{ent(0, "")},
		{ent(-1, "x", "k", "v"), ent(1<<62, strings.Repeat("y", 300), "a", strings.Repeat("b", 200), "c", "")},
		{ent(-1<<62, "ünï"), ent(63, "z"), ent(-64, "w"), ent(64, "v")},
	} {
		if got, want := entriesSize(es), len(appendEntries(nil, es)); got != want {
			t.Fatalf("entriesSize %d, encoded %d", got, want)
		}
	}
}

// The head filters (long words only) never rule out a substring of a line
// either, and still rule out absent IDs.
func TestHeadFilterSound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"error", "GPU", "x", "dataloader", "0af7651916cd43dd8448eb211c80319c", "rank=3", "checkpointing", "a-b_c", "  "}
	var es []logentry.Entry
	for range 200 {
		var sb strings.Builder
		for range 1 + r.IntN(8) {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(" =:/,"[r.IntN(5)])
		}
		es = append(es, ent(1, sb.String()))
	}
	ws := filterWords(es, headMinWord)
	b := make([]byte, 0, 8*len(ws))
	for _, w := range ws {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	f := bloom{b: b}
	for _, e := range es {
		for i := 0; i < len(e.Line); i++ {
			for j := i + 1; j <= len(e.Line); j++ {
				if !f.mayContainLong(e.Line[i:j]) {
					t.Fatalf("head filter rules out %q, a substring of %q", e.Line[i:j], e.Line)
				}
			}
		}
	}
	out := 0
	for i := range 1000 {
		if !f.mayContainLong(fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15)) {
			out++
		}
	}
	if out < 990 {
		t.Fatalf("head filter ruled out only %d of 1000 absent IDs", out)
	}
}

func TestDropDuplicates(t *testing.T) {
	var es, want []logentry.Entry
	for i := range 100 { // one timestamp, 50 distinct lines, each twice
		es = append(es, ent(7, fmt.Sprint(i%50)))
		if i < 50 {
			want = append(want, ent(7, fmt.Sprint(i)))
		}
	}
	es = append(es, ent(8, "a"), ent(9, "b"), ent(9, "b"), ent(9, "c"))
	want = append(want, ent(8, "a"), ent(9, "b"), ent(9, "c"))
	got := dropDuplicates(es)
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Timestamp != want[i].Timestamp || got[i].Line != want[i].Line {
			t.Fatalf("entry %d: %v, want %v", i, got[i], want[i])
		}
	}
}

package ingest

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// slowLabels builds pairs the general way (labels.ScratchBuilder via
// labelState), the reference the encoder must agree with.
func slowLabels(pairs []string) (labels.Labels, string, bool) {
	sb := labels.NewScratchBuilder(len(pairs) / 2)
	st := labelState{noName: true}
	for i := 0; i+1 < len(pairs); i += 2 {
		st.add(&sb, pairs[i], pairs[i+1])
	}
	ls, detail := st.finish(&sb)
	return ls, detail, st.noName
}

func fastLabels(pairs []string) (labels.Labels, bool) {
	var e labelEncoder
	var buf []byte
	for i := 0; i+1 < len(pairs); i += 2 {
		buf = e.add(buf, pairs[i], pairs[i+1])
	}
	return e.finish(buf, true, false)
}

// checkEncoder asserts the encoder's contract on pairs: when it answers,
// the labels equal the general path's and that path found no problem;
// when the general path accepts a sorted, named set, the encoder answers.
func checkEncoder(t *testing.T, pairs []string) {
	t.Helper()
	want, detail, noName := slowLabels(pairs)
	got, ok := fastLabels(pairs)
	if ok {
		if detail != "" || noName {
			t.Fatalf("encoder accepted %q; general path says %q (noName %v)", pairs, detail, noName)
		}
		if !labels.Equal(got, want) || got.String() != want.String() || got.Len() != want.Len() {
			t.Fatalf("encoder built %s, general path %s", got, want)
		}
		// The result must behave as a labels.Labels in every accessor.
		var n int
		got.Range(func(l labels.Label) {
			if want.Get(l.Name) != l.Value {
				t.Fatalf("label %s=%q missing from %s", l.Name, l.Value, want)
			}
			n++
		})
		if n != want.Len() || got.Hash() != want.Hash() {
			t.Fatalf("range saw %d labels, hash %x vs %x", n, got.Hash(), want.Hash())
		}
		return
	}
	sorted := true
	prev := ""
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			continue
		}
		if pairs[i] <= prev {
			sorted = false
		}
		prev = pairs[i]
	}
	if detail == "" && !noName && sorted {
		t.Fatalf("encoder refused %q, which the general path accepts as is", pairs)
	}
}

func TestLabelEncoder(t *testing.T) {
	long := strings.Repeat("v", 300)
	mid := strings.Repeat("m", 200)
	for _, tc := range []struct {
		name  string
		pairs []string
	}{
		{"dcgm", []string{"__name__", "DCGM_FI_DEV_GPU_UTIL", "gpu", "0", "UUID", "GPU-1"}[:4]},
		{"typical", []string{"__name__", "up", "instance", "10.0.0.1:9100", "job", "node"}},
		{"empty value dropped", []string{"__name__", "up", "empty", "", "job", "node"}},
		{"value of 200 bytes", []string{"__name__", "up", "x", mid}},
		{"value of 300 bytes", []string{"__name__", "up", "x", long}},
		{"name of 300 bytes", []string{"__name__", "up", long, "y"}},
		{"multi-byte UTF-8", []string{"__name__", "température", "lieu", "Zürich ☃"}},
		{"unsorted", []string{"job", "node", "__name__", "up"}},
		{"duplicate", []string{"__name__", "up", "a", "1", "a", "2"}},
		{"no name", []string{"a", "1", "b", "2"}},
		{"empty name value", []string{"__name__", "", "a", "1"}},
		{"empty label name", []string{"", "x", "__name__", "up"}},
		{"invalid UTF-8 value", []string{"__name__", "up", "a", "\xff\xfe"}},
		{"invalid UTF-8 after a long value", []string{"__name__", "up", "a", mid, "b", "\xc3"}},
		{"truncated sequence before a length byte", []string{"__name__", "up", "a", "x\xe2\x82", "b", "c"}},
		{"invalid UTF-8 name", []string{"__name__", "up", "\xff", "1"}},
		{"all empty", []string{"a", "", "b", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkEncoder(t, tc.pairs) })
	}
}

func TestLabelsFromEncodedMatchesFromStrings(t *testing.T) {
	ls, ok := fastLabels([]string{"__name__", "x", "a", strings.Repeat("z", 70000)})
	if !ok {
		t.Fatal("encoder refused a valid label set")
	}
	want := labels.FromStrings("__name__", "x", "a", strings.Repeat("z", 70000))
	if labels.Compare(ls, want) != 0 || ls.Get("a") != want.Get("a") {
		t.Fatalf("got %d bytes of value, want %d", len(ls.Get("a")), len(want.Get("a")))
	}
}

func FuzzLabelEncoder(f *testing.F) {
	f.Add("__name__\x00up\x00job\x00node")
	f.Add("job\x00node\x00__name__\x00up")
	f.Add("__name__\x00up\x00a\x00\xff")
	f.Add("__name__\x00\x00a\x00b")
	f.Fuzz(func(t *testing.T, s string) {
		parts := strings.Split(s, "\x00")
		if len(parts)%2 == 1 {
			parts = parts[:len(parts)-1]
		}
		checkEncoder(t, parts)
	})
}

// copyingAppender promises CopiesLabels, so the batch hands it labels that
// share one reused buffer; it records copies of what it is given, so the
// recorded calls show the labels as they were during each call.
type copyingAppender struct{ recExAppender }

func (*copyingAppender) CopiesLabels() bool { return true }

func (c *copyingAppender) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	opts.MetricFamilyName = strings.Clone(opts.MetricFamilyName)
	return c.recExAppender.Append(ref, ls.Copy(), st, t, v, h, fh, opts)
}

func (c *copyingAppender) AppendExemplars(ref storage.SeriesRef, ls labels.Labels, exs []exemplar.Exemplar) (storage.SeriesRef, error) {
	return c.recExAppender.AppendExemplars(ref, ls.Copy(), exs)
}

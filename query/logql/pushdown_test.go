package logql

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// pushdownSource wraps memSource with the optional Source extensions, as
// strictly as they allow: metadata hints drop every entry that cannot
// match (finer than a store's chunks), and timestamps come in blocks of
// three with their exact metadata names.
type pushdownSource struct {
	mem *memSource
}

var (
	_ MetadataHintSource = (*pushdownSource)(nil)
	_ TimestampSource    = (*pushdownSource)(nil)
)

func (s *pushdownSource) Select(ctx context.Context, p SelectParams) (EntryIterator, error) {
	return s.mem.Select(ctx, p)
}

func (s *pushdownSource) SelectWithMetadata(ctx context.Context, p SelectParams, md []labels.Label) (EntryIterator, error) {
	it, err := s.mem.Select(ctx, p)
	if err != nil {
		return nil, err
	}
	mi := it.(*memIter)
	kept := mi.items[:0]
	for _, item := range mi.items {
		ok := true
		for _, l := range md {
			if !item.ls.Has(l.Name) && item.e.Metadata.Get(l.Name) != l.Value {
				ok = false
			}
		}
		if ok {
			kept = append(kept, item)
		}
	}
	mi.items = kept
	return mi, nil
}

func (s *pushdownSource) SelectTimestamps(ctx context.Context, p SelectParams, f func(labels.Labels, []string, int64, int64, int, func() ([]int64, error)) error) error {
	it, err := s.mem.Select(ctx, p)
	if err != nil {
		return err
	}
	items := it.(*memIter).items
	for len(items) > 0 {
		n := 1
		for n < len(items) && n < 3 && labels.Equal(items[n].ls, items[0].ls) {
			n++
		}
		var ts []int64
		var names []string
		for _, item := range items[:n] {
			ts = append(ts, item.e.Timestamp)
			item.e.Metadata.Range(func(l labels.Label) {
				if !slices.Contains(names, l.Name) {
					names = append(names, l.Name)
				}
			})
		}
		slices.Sort(names)
		if err := f(items[0].ls, names, ts[0], ts[n-1], n, func() ([]int64, error) { return ts, nil }); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

func TestMetadataHints(t *testing.T) {
	cases := []struct {
		query string
		want  []labels.Label
	}{
		{`{a="b"} | trace_id="x"`, []labels.Label{{Name: "trace_id", Value: "x"}}},
		{`{a="b"} |= "y" | trace_id="x" and span="s"`, []labels.Label{{Name: "trace_id", Value: "x"}, {Name: "span", Value: "s"}}},
		{`{a="b"} | trace_id="x" or span="s"`, nil},
		{`{a="b"} | trace_id=""`, nil},
		{`{a="b"} | trace_id!="x"`, nil},
		{`{a="b"} | json | trace_id="x"`, nil},
		{`{a="b"} | level="warn" | logfmt | trace_id="x"`, []labels.Label{{Name: "level", Value: "warn"}}},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			e, err := ParseExpr(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got := metadataHints(e.(*LogSelectorExpr).Stages)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("hints %v, want %v", got, tc.want)
			}
		})
	}
}

package index

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
)

// TestTenantStreams: a tenant's stream is found by GetOrCreateTenant and
// by its whole label set alike, before and after a reopen; the same labels
// of two tenants are two streams; lookups restricted to a tenant see only
// its streams and never the reserved label.
func TestTenantStreams(t *testing.T) {
	e := newTestEnv(t, DefaultOptions())
	ls := labels.FromStrings("__name__", "up", "job", "x")
	ids := map[string]ID{}
	for _, tid := range []string{"", "a", "b"} {
		id, created, err := e.ix.GetOrCreateTenant(KindMetric, tid, ls, 1, nil)
		if err != nil || !created {
			t.Fatalf("create %q: %v %v", tid, created, err)
		}
		ids[tid] = id
	}
	check := func(ix *Index) {
		t.Helper()
		for tid, want := range ids {
			got, created, err := ix.GetOrCreateTenant(KindMetric, tid, ls, 2, nil)
			if err != nil || created || got != want {
				t.Errorf("tenant %q: %d %v %v, want %d", tid, got, created, err, want)
			}
			full := tenant.Add(ls, tid)
			if got, created, _ := ix.GetOrCreate(KindMetric, full, 2); created || got != want {
				t.Errorf("tenant %q by its whole labels %s: %d %v, want %d", tid, full, got, created, want)
			}
			if got, _ := ix.Labels(want, nil); !labels.Equal(got, full) {
				t.Errorf("labels of %d = %s, want %s", want, got, full)
			}
		}
		ctx := tenant.With(context.Background(), "a")
		bm, err := ix.Postings(ctx, KindMetric, 0, 10, labels.MustNewMatcher(labels.MatchEqual, "job", "x"))
		if err != nil || bm.GetCardinality() != 1 || !bm.Contains(uint64(ids["a"])) {
			t.Errorf("postings of a: %v %v", bm, err)
		}
		anon, _ := ix.Postings(tenant.With(context.Background(), tenant.Anonymous), KindMetric, 0, 10)
		if anon.GetCardinality() != 1 || !anon.Contains(uint64(ids[""])) {
			t.Errorf("postings of anonymous: %v", anon)
		}
		all, _ := ix.Postings(context.Background(), KindMetric, 0, 10)
		if all.GetCardinality() != 3 {
			t.Errorf("unrestricted postings: %v", all)
		}
		names, _ := ix.LabelNames(context.Background(), KindMetric, 0, 10)
		if slices.Contains(names, tenant.LabelName) {
			t.Errorf("label names list the reserved label: %v", names)
		}
		if vs, _ := ix.LabelValues(context.Background(), KindMetric, tenant.LabelName, 0, 10); len(vs) != 0 {
			t.Errorf("values of the reserved label: %v", vs)
		}
		st, err := ix.Stats(ctx, KindMetric, 0, 10, 0)
		if err != nil || st.NumStreams != 1 || st.NumLabelPairs != 2 {
			t.Errorf("stats of a: %+v %v", st, err)
		}
	}
	check(e.ix)
	check(e.reopen())
	if _, _, err := e.ix.GetOrCreateTenant(KindMetric, "a", labels.FromStrings(tenant.LabelName, "b", "job", "y"), 1, nil); !errors.Is(err, ErrReservedLabel) {
		t.Errorf("a stream naming the reserved label: %v", err)
	}
	if _, _, err := e.ix.GetOrCreateTenant(KindMetric, "", labels.FromStrings(tenant.LabelName, "", "job", "y"), 1, nil); err == nil {
		t.Errorf("a single-tenant stream naming the reserved label was created")
	}
}

// TestTenantLabelPlace: a tenant's new stream is stored as its whole label
// set, the tenant's label at its place in label order (first, between or
// last), and is found again by that label set and by (tenant, labels),
// before and after a reopen.
func TestTenantLabelPlace(t *testing.T) {
	e := newTestEnv(t, DefaultOptions())
	sets := []labels.Labels{
		labels.FromStrings("job", "x"),
		labels.FromStrings("__name__", "up", "job", "x"),
		labels.FromStrings("A", "b", "__name__", "up"),
		labels.FromStrings("__a__", "1", "__z__", "2", "b", "3"),
	}
	var checked []string
	ids := map[int]ID{}
	for i, ls := range sets {
		id, created, err := e.ix.GetOrCreateTenant(KindMetric, "team-a", ls, 1, func(got labels.Labels) error {
			checked = append(checked, got.String())
			return nil
		})
		if err != nil || !created {
			t.Fatalf("create %s: %v %v", ls, created, err)
		}
		ids[i] = id
		if checked[len(checked)-1] != ls.String() {
			t.Errorf("check saw %s, want %s", checked[len(checked)-1], ls)
		}
	}
	check := func(ix *Index) {
		t.Helper()
		for i, ls := range sets {
			full := tenant.Add(ls, "team-a")
			if got, _ := ix.Labels(ids[i], nil); !labels.Equal(got, full) {
				t.Errorf("labels of %d = %s, want %s", ids[i], got, full)
			}
			if got, created, err := ix.GetOrCreateTenant(KindMetric, "team-a", ls, 2, nil); err != nil || created || got != ids[i] {
				t.Errorf("%s of team-a again: %d %v %v, want %d", ls, got, created, err, ids[i])
			}
			if got, created, err := ix.GetOrCreate(KindMetric, full, 2); err != nil || created || got != ids[i] {
				t.Errorf("%s: %d %v %v, want %d", full, got, created, err, ids[i])
			}
			bm, err := ix.Postings(context.Background(), KindMetric, 0, 10, labels.MustNewMatcher(labels.MatchEqual, tenant.LabelName, "team-a"))
			if err != nil || !bm.Contains(uint64(ids[i])) {
				t.Errorf("postings of team-a lack %d: %v %v", ids[i], bm, err)
			}
		}
	}
	check(e.ix)
	check(e.reopen())
}

package chargeback_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/ingest/usage"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/query/chargeback"
	"github.com/weftdb/weft/storage"
)

// fixture is a store with known GPU utilization and usage series of two
// tenants, starting at base (a whole hour, so that one-minute steps fall
// on the samples).
type fixture struct {
	db   *storage.DB
	base time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	opts := storage.DefaultOptions()
	opts.Logs.MaintenanceInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sub.Close(); err != nil {
			t.Error(err)
		}
	})
	f := &fixture{db: sub.Metrics(), base: time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)}

	// GPU utilization, one sample a minute: minutes [0, last].
	gpu := func(id, uuid, team, ns, job string, util float64, last int) {
		ap := f.db.AppenderV2(tenant.With(context.Background(), id))
		ls := labels.FromStrings(labels.MetricName, chargeback.GPUUtilMetric, "gpu_uuid", uuid, "job", job, "namespace", ns, "team", team)
		for i := 0; i <= last; i++ {
			if _, err := ap.Append(0, ls, 0, f.base.Add(time.Duration(i)*time.Minute).UnixMilli(), util, nil, nil, promstorage.AOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := ap.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	gpu("acme", "GPU-1", "vision", "ns-vision", "weft-agent", 50, 180)
	gpu("acme", "GPU-1", "vision", "ns-vision", "dcgm-exporter", 50, 180) // the same GPU twice: counts once
	gpu("acme", "GPU-2", "vision", "ns-vision", "weft-agent", 100, 60)    // gone after an hour
	gpu("acme", "GPU-3", "nlp", "ns-nlp", "weft-agent", 25, 180)
	gpu("globex", "GPU-4", "vision", "ns-g", "weft-agent", 80, 180)

	// Ingest, flushed by the accountant at +30m, +90m and +150m.
	clk := f.base
	acct := usage.New(usage.Options{Sink: f.db, Now: func() time.Time { return clk }})
	ingest := func(id, team, ns string, n int) {
		ap := acct.Appendable(f.db).AppenderV2(tenant.With(context.Background(), id))
		ls := labels.FromStrings(labels.MetricName, "loss", "namespace", ns, "team", team)
		for i := range n {
			if _, err := ap.Append(0, ls, 0, clk.UnixMilli()-int64(n-i), 1, nil, nil, promstorage.AOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := ap.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range []time.Duration{30 * time.Minute, 90 * time.Minute, 150 * time.Minute} {
		clk = f.base.Add(at)
		ingest("acme", "vision", "ns-vision", 15)
		ingest("acme", "nlp", "ns-nlp", 5)
		ingest("globex", "vision", "ns-g", 30)
		if err := acct.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) opts() chargeback.Options {
	return chargeback.Options{
		Engine:    query.NewEngine(query.DefaultEngineOptions()),
		Queryable: f.db,
		Disk: func(context.Context) (chargeback.Disk, error) {
			return chargeback.Disk{Metrics: 1000}, nil
		},
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestReportExactHours(t *testing.T) {
	f := newFixture(t)
	start, end := f.base, f.base.Add(2*time.Hour)
	for _, tc := range []struct {
		name   string
		tenant string
		by     chargeback.By
		want   []chargeback.Row
	}{
		{"acme by team", "acme", chargeback.ByTeam, []chargeback.Row{
			// nlp: GPU-3 all 120 steps at 25%.
			{Tenant: "acme", Team: "nlp", GPUHoursAllocated: 2, GPUHoursUsed: 0.5, Samples: 10, BytesStoredApportioned: 100},
			// vision: GPU-1 120 steps at 50%; GPU-2 60 steps with samples
			// and 4 more within the 5m lookback after its last one, at 100%.
			{Tenant: "acme", Team: "vision", GPUHoursAllocated: 2 + 64.0/60, GPUHoursUsed: 1 + 64.0/60, Samples: 30, BytesStoredApportioned: 300},
		}},
		{"acme by namespace", "acme", chargeback.ByNamespace, []chargeback.Row{
			{Tenant: "acme", Namespace: "ns-nlp", GPUHoursAllocated: 2, GPUHoursUsed: 0.5, Samples: 10, BytesStoredApportioned: 100},
			{Tenant: "acme", Namespace: "ns-vision", GPUHoursAllocated: 2 + 64.0/60, GPUHoursUsed: 1 + 64.0/60, Samples: 30, BytesStoredApportioned: 300},
		}},
		{"globex sees only its own", "globex", chargeback.ByTeam, []chargeback.Row{
			{Tenant: "globex", Team: "vision", GPUHoursAllocated: 2, GPUHoursUsed: 1.6, Samples: 60, BytesStoredApportioned: 600},
		}},
		{"federated by tenant", "acme|globex", chargeback.ByTenant, []chargeback.Row{
			{Tenant: "acme", GPUHoursAllocated: 4 + 64.0/60, GPUHoursUsed: 1.5 + 64.0/60, Samples: 40, BytesStoredApportioned: 400},
			{Tenant: "globex", GPUHoursAllocated: 2, GPUHoursUsed: 1.6, Samples: 60, BytesStoredApportioned: 600},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, err := tenant.ParseIDs(tc.tenant)
			if err != nil {
				t.Fatal(err)
			}
			ctx := tenant.WithSet(context.Background(), tenant.NewSet(ids...))
			got, err := chargeback.Report(ctx, f.opts(), start, end, tc.by)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("rows %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Tenant != w.Tenant || g.Team != w.Team || g.Namespace != w.Namespace ||
					!near(g.GPUHoursAllocated, w.GPUHoursAllocated) || !near(g.GPUHoursUsed, w.GPUHoursUsed) ||
					g.Samples != w.Samples || g.LogBytes != w.LogBytes || g.Spans != w.Spans ||
					g.BytesStoredApportioned != w.BytesStoredApportioned {
					t.Errorf("row %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestReportWindowIsLeftOpen(t *testing.T) {
	// (base+30m, base+90m]: the flush at +90m is in, the one at +30m out;
	// GPU steps +31m..+90m.
	f := newFixture(t)
	ctx := tenant.With(context.Background(), "globex")
	got, err := chargeback.Report(ctx, f.opts(), f.base.Add(30*time.Minute), f.base.Add(90*time.Minute), chargeback.ByTenant)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Samples != 30 || !near(got[0].GPUHoursAllocated, 1) || !near(got[0].GPUHoursUsed, 0.8) {
		t.Errorf("rows %+v, want one with 30 samples, 1 GPU-hour allocated, 0.8 used", got)
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	ctx := tenant.With(context.Background(), "acme")
	now := time.Now()
	for _, tc := range []struct {
		name       string
		start, end time.Time
		step       time.Duration
	}{
		{"end before start", now, now.Add(-time.Hour), 0},
		{"empty range", now, now, 0},
		{"step below a second", now.Add(-time.Hour), now, time.Millisecond},
		{"too many steps", now.Add(-200 * 24 * time.Hour), now, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := f.opts()
			o.Step = tc.step
			if _, err := chargeback.Report(ctx, o, tc.start, tc.end, chargeback.ByTeam); !errors.Is(err, chargeback.ErrInvalid) {
				t.Errorf("err %v, want ErrInvalid", err)
			}
		})
	}
	for _, s := range []string{"teams", "TEAM", "gpu"} {
		if _, err := chargeback.ParseBy(s); !errors.Is(err, chargeback.ErrInvalid) {
			t.Errorf("ParseBy(%q): err %v, want ErrInvalid", s, err)
		}
	}
	if by, err := chargeback.ParseBy(""); err != nil || by != chargeback.ByTeam {
		t.Errorf("ParseBy(\"\") = %q, %v; want team", by, err)
	}
}

func TestMonth(t *testing.T) {
	start, end, err := chargeback.Month("2026-11")
	if err != nil {
		t.Fatal(err)
	}
	if !start.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Month(2026-11) = %s, %s", start, end)
	}
	for _, s := range []string{"2026-13", "2026-1", "26-11", "2026-11-01", ""} {
		if _, _, err := chargeback.Month(s); !errors.Is(err, chargeback.ErrInvalid) {
			t.Errorf("Month(%q): err %v, want ErrInvalid", s, err)
		}
	}
	if got := chargeback.MonthStart(time.Date(2026, 2, 28, 23, 59, 0, 0, time.FixedZone("x", -3600))); !got.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("MonthStart: %s, want 2026-03-01 UTC", got)
	}
}

package investigate_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/bench/scenario"
	"github.com/weftdb/weft/investigate"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage"
)

// replayed is a scenario replayed into a weft of its own (a substrate
// behind the real HTTP API, in process) and an Investigator over it.
type replayed struct {
	data *scenario.Data
	sub  *storage.Substrate
	iv   *investigate.Investigator
	base string
	opts scenario.Options
}

// scenarioOptions is the window every scenario test replays: an hour
// ending a few minutes ago, the cause 35 minutes in.
func scenarioOptions() scenario.Options {
	start := time.Now().UTC().Truncate(time.Minute).Add(-70 * time.Minute)
	return scenario.Options{Seed: 3, Start: start, Duration: time.Hour, Onset: 35 * time.Minute}
}

func replay(t testing.TB, name string, o scenario.Options) *replayed {
	t.Helper()
	r := newWeft(t)
	r.data = r.load(t, name, o, nil)
	r.opts = o
	return r
}

// newWeft is an empty weft of its own (a substrate behind the real HTTP
// API, in process) with an Investigator over it.
func newWeft(t testing.TB) *replayed {
	t.Helper()
	sopts := storage.DefaultOptions()
	sopts.Logs.MaintenanceInterval = -1
	sopts.RetentionInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), t.TempDir(), sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	engine := query.NewEngine(query.DefaultEngineOptions())
	iv, err := investigate.New(investigate.Options{
		Index: sub.Index(), Metrics: sub.Metrics(), Engine: engine, Logs: sub.Logs(), Incidents: sub.Logs(),
	})
	if err != nil {
		t.Fatal(err)
	}
	aopts := api.DefaultOptions()
	aopts.Investigate = iv
	aopts.Storage, aopts.Appendable = sub.Metrics(), sub.Metrics()
	aopts.Engine = engine
	aopts.Logs = sub.Logs()
	aopts.Traces = sub.Traces()
	s, err := api.New(aopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.SetReady(true)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &replayed{sub: sub, iv: iv, base: srv.URL}
}

// load generates scenario name, lets edit change it (nil: none) and
// replays it into r.
func (r *replayed) load(t testing.TB, name string, o scenario.Options, edit func(*scenario.Data)) *scenario.Data {
	t.Helper()
	d, err := scenario.Generate(name, o)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(d)
	}
	p, err := d.Encode(scenario.EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if rep, err := scenario.Replay(ctx, p, scenario.Target{URL: r.base}, scenario.ReplayOptions{}); err != nil {
		t.Fatalf("replay %s: %v (report %+v)", name, err, rep)
	}
	return d
}

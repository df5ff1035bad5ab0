package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/investigate"
)

// fakeInvestigator records what the API asked and answers canned values,
// or ErrInvalid for the selector "bad".
type fakeInvestigator struct {
	sel        string
	start, end time.Time
	sym        investigate.Symptom
	spread     investigate.SpreadRequest
	pivot      investigate.PivotRequest
	incidents  investigate.IncidentsRequest
}

func (f *fakeInvestigator) Context(_ context.Context, sel string, start, end time.Time) (*investigate.WorkloadContext, error) {
	if sel == "bad" {
		return nil, fmt.Errorf("%w: bad selector", investigate.ErrInvalid)
	}
	f.sel, f.start, f.end = sel, start, end
	return &investigate.WorkloadContext{Selector: sel, Context: map[string][]string{"node": {"node-6"}}}, nil
}

func (f *fakeInvestigator) Investigate(_ context.Context, s investigate.Symptom) (*investigate.Report, error) {
	if s.Selector == "bad" {
		return nil, fmt.Errorf("%w: bad selector", investigate.ErrInvalid)
	}
	f.sym = s
	return &investigate.Report{Causes: []investigate.Cause{{Rank: 1, Kind: investigate.KindNVLink, Summary: "node-6 NVLink degradation"}}}, nil
}

func (f *fakeInvestigator) Spread(_ context.Context, r investigate.SpreadRequest) (*investigate.Spread, error) {
	if r.Selector == "bad" {
		return nil, fmt.Errorf("%w: bad selector", investigate.ErrInvalid)
	}
	f.spread = r
	return &investigate.Spread{By: r.By, Outliers: []investigate.SpreadMember{{Key: "21", Z: 9}}}, nil
}

func (f *fakeInvestigator) Pivot(_ context.Context, r investigate.PivotRequest) (*investigate.PivotAnswer, error) {
	if r.Series == "bad" {
		return nil, fmt.Errorf("%w: bad selector", investigate.ErrInvalid)
	}
	f.pivot = r
	return &investigate.PivotAnswer{From: r.Resource, Pivots: []investigate.Pivot{{Key: "run_id", Value: "r42"}}}, nil
}

func (f *fakeInvestigator) Incidents(_ context.Context, r investigate.IncidentsRequest) (*investigate.IncidentGroups, error) {
	if r.By == "bad" {
		return nil, fmt.Errorf("%w: bad key", investigate.ErrInvalid)
	}
	f.incidents = r
	return &investigate.IncidentGroups{By: r.By, Groups: []investigate.IncidentGroup{{Key: "gpu_uuid", Value: "GPU-1", Count: 3}}}, nil
}

func TestInvestigateRoutes(t *testing.T) {
	f := &fakeInvestigator{}
	srv, _ := newTestServer(t, func(o *api.Options) { o.Investigate = f })
	get := func(path string, q url.Values) (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(srv.URL + path + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode, body
	}

	code, body := get("/weft/api/v1/context", url.Values{"match": {`{run_id="r42"}`}, "start": {"1700000000"}, "end": {"1700003600"}})
	if code != 200 || f.sel != `{run_id="r42"}` || f.start.Unix() != 1700000000 || f.end.Unix() != 1700003600 {
		t.Fatalf("context: %d %v; asked %q %v %v", code, body, f.sel, f.start, f.end)
	}
	if d := body["data"].(map[string]any); d["context"].(map[string]any)["node"].([]any)[0] != "node-6" {
		t.Errorf("context data %v", d)
	}
	for _, q := range []url.Values{
		{}, {"match": {"bad"}}, {"match": {"{a=\"b\"}"}, "start": {"x"}},
		{"match": {"{a=\"b\"}"}, "start": {"1700003600"}, "end": {"1700000000"}},
	} {
		if code, body := get("/weft/api/v1/context", q); code != 400 || body["errorType"] != "bad_data" {
			t.Errorf("context %v: %d %v, want 400 bad_data", q, code, body)
		}
	}

	code, body = get("/weft/api/v1/investigate", url.Values{"alert": {`{"alertname":"TrainingStalled","run_id":"r42"}`}, "time": {"2026-12-01T02:49:00Z"}})
	if code != 200 || f.sym.Alert["run_id"] != "r42" || !f.sym.Time.Equal(time.Date(2026, 12, 1, 2, 49, 0, 0, time.UTC)) {
		t.Fatalf("investigate: %d %v; asked %+v", code, body, f.sym)
	}
	if !strings.Contains(fmt.Sprint(body["data"]), "node-6 NVLink degradation") {
		t.Errorf("investigate data %v", body["data"])
	}
	for _, q := range []url.Values{{"selector": {"bad"}}, {"alert": {"[1]"}}, {"selector": {"{a=\"b\"}"}, "time": {"soon"}}} {
		if code, body := get("/weft/api/v1/investigate", q); code != 400 || body["errorType"] != "bad_data" {
			t.Errorf("investigate %v: %d %v, want 400 bad_data", q, code, body)
		}
	}

	code, body = get("/weft/api/v1/spread", url.Values{"match": {`{run_id="r42"}`}, "metric": {"training_step_compute_seconds"}, "by": {"rank"}, "window": {"3m"}, "threshold": {"4"}})
	if code != 200 || f.spread.Window != 3*time.Minute || f.spread.Threshold != 4 || f.spread.By != "rank" || f.spread.Metric != "training_step_compute_seconds" {
		t.Fatalf("spread: %d %v; asked %+v", code, body, f.spread)
	}
	for _, q := range []url.Values{{"match": {"bad"}}, {"window": {"-1m"}}, {"threshold": {"NaN"}}, {"time": {"x"}}} {
		if code, body := get("/weft/api/v1/spread", q); code != 400 || body["errorType"] != "bad_data" {
			t.Errorf("spread %v: %d %v, want 400 bad_data", q, code, body)
		}
	}

	code, body = get("/weft/api/v1/pivot", url.Values{"resource": {`{"ai.run.id":"r42"}`}})
	if code != 200 || f.pivot.Resource["ai.run.id"] != "r42" || f.pivot.End.Sub(f.pivot.Start) != time.Hour {
		t.Fatalf("pivot: %d %v; asked %+v", code, body, f.pivot)
	}
	for _, q := range []url.Values{{"series": {"bad"}}, {"alert": {"1"}}, {"resource": {`{"a":1}`}}} {
		if code, body := get("/weft/api/v1/pivot", q); code != 400 || body["errorType"] != "bad_data" {
			t.Errorf("pivot %v: %d %v, want 400 bad_data", q, code, body)
		}
	}

	code, body = get("/weft/api/v1/incidents", url.Values{"by": {"gpu_uuid"}, "match[]": {`{team="pretrain"}`, `{run_id="r1"}`}, "min_count": {"3"}, "limit": {"5"}, "end": {"1700000000"}})
	r := f.incidents
	if code != 200 || r.By != "gpu_uuid" || len(r.Match) != 2 || r.MinCount != 3 || r.Limit != 5 || r.End.Unix() != 1700000000 || r.End.Sub(r.Start) != 7*24*time.Hour {
		t.Fatalf("incidents: %d %v; asked %+v", code, body, r)
	}
	if !strings.Contains(fmt.Sprint(body["data"]), "GPU-1") {
		t.Errorf("incidents data %v", body["data"])
	}
	for _, q := range []url.Values{{"by": {"bad"}}, {"min_count": {"0"}}, {"limit": {"x"}}, {"start": {"x"}}} {
		if code, body := get("/weft/api/v1/incidents", q); code != 400 || body["errorType"] != "bad_data" {
			t.Errorf("incidents %v: %d %v, want 400 bad_data", q, code, body)
		}
	}

	// Without an investigator the routes say so.
	bare, _ := newTestServer(t, nil)
	resp, err := http.Get(bare.URL + "/weft/api/v1/context?match=%7Ba%3D%22b%22%7D")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("no investigator: %d", resp.StatusCode)
	}
}

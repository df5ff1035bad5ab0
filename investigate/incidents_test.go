package investigate_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/bench/scenario"
	"github.com/weftdb/weft/investigate"
	"github.com/weftdb/weft/storage/logentry"
)

// TestIncidentsGroupAlerts: alerts recorded as incidents group by the
// values they share, aliases resolved (UUID is gpu_uuid, Hostname is
// host), a re-sent or flapping alert counted once; match[] narrows,
// min_count and by are honoured, and bad requests are ErrInvalid.
func TestIncidentsGroupAlerts(t *testing.T) {
	r := newWeft(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Minute).Add(-3 * time.Hour)
	alert := func(run, uuid, host string, at time.Time) investigate.AlertIncident {
		return investigate.AlertIncident{
			Labels:   map[string]string{"alertname": "GPUXidError", "UUID": uuid, "Hostname": host, "run_id": run, "severity": "page"},
			ActiveAt: at, FiredAt: at.Add(time.Minute), Query: "increase(weft_gpu_xid_errors_total[5m]) > 0",
		}
	}
	for _, a := range []investigate.AlertIncident{
		alert("r1", "GPU-a", "node-5", t0),
		alert("r1", "GPU-a", "node-5", t0),                     // re-sent: the same incident
		alert("r1", "GPU-a", "node-5", t0.Add(10*time.Minute)), // flapping: active again soon after, the same incident
		alert("r2", "GPU-a", "node-5", t0.Add(time.Hour)),
		alert("r3", "GPU-b", "node-5", t0.Add(90*time.Minute)),
		alert("r4", "GPU-a", "node-5", t0.Add(2*time.Hour)),
	} {
		id, err := r.iv.RecordAlert(ctx, a)
		if err != nil || id == "" {
			t.Fatalf("RecordAlert: %q %v", id, err)
		}
	}
	window := investigate.IncidentsRequest{Start: t0.Add(-time.Minute), End: t0.Add(3 * time.Hour)}

	req := window
	req.By = "gpu_uuid"
	ans, err := r.iv.Incidents(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Incidents != 4 || len(ans.Groups) != 1 {
		t.Fatalf("by gpu_uuid: %d incidents, groups %+v; want 4 incidents and one group (GPU-b is alone)", ans.Incidents, ans.Groups)
	}
	g := ans.Groups[0]
	if g.Key != "gpu_uuid" || g.Value != "GPU-a" || g.Count != 3 || !slices.Equal(g.Runs, []string{"r1", "r2", "r4"}) || len(g.Incidents) != 3 ||
		!g.FirstSeen.Equal(t0.Add(time.Minute)) || !g.LastSeen.Equal(t0.Add(2*time.Hour+time.Minute)) {
		t.Errorf("GPU-a group %+v", g)
	}

	req = window
	req.By = "node" // stands for host
	if ans, err = r.iv.Incidents(ctx, req); err != nil || len(ans.Groups) != 1 || ans.Groups[0].Value != "node-5" || ans.Groups[0].Count != 4 {
		t.Errorf("by node: %+v %v", ans, err)
	}

	// Every key: the host (4 incidents) before the GPU (3); no run is
	// shared.
	if ans, err = r.iv.Incidents(ctx, window); err != nil || len(ans.Groups) != 2 || ans.Groups[0].Key != "host" || ans.Groups[1].Key != "gpu_uuid" {
		t.Errorf("every key: %+v %v", ans, err)
	}

	req = window
	req.By, req.Match, req.MinCount = "gpu_uuid", []string{`{gpu_uuid="GPU-b"}`, `{run_id="r4", severity="page"}`}, 1
	if ans, err = r.iv.Incidents(ctx, req); err != nil || ans.Incidents != 2 || len(ans.Groups) != 2 {
		t.Errorf("match[] GPU-b or r4: %+v %v", ans, err)
	}
	req.Match = []string{`{UUID="GPU-a", alertname="Other"}`}
	if ans, err = r.iv.Incidents(ctx, req); err != nil || ans.Incidents != 0 || len(ans.Groups) != 0 {
		t.Errorf("match[] on another alertname: %+v %v", ans, err)
	}

	for name, bad := range map[string]investigate.IncidentsRequest{
		"unknown key":      {By: "pod", End: t0},
		"bad selector":     {Match: []string{"{"}, End: t0},
		"end before start": {Start: t0, End: t0.Add(-time.Second)},
	} {
		if _, err := r.iv.Incidents(ctx, bad); !errors.Is(err, investigate.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := r.iv.RecordAlert(ctx, investigate.AlertIncident{}); !errors.Is(err, investigate.ErrInvalid) {
		t.Errorf("alert without labels: %v, want ErrInvalid", err)
	}
}

// TestIncidentsAreNotWorkloadLogs: an incident's stream carries the
// workload's labels, but the workload's context does not count it as one
// of its log streams; LogQL on the reserved label finds it.
func TestIncidentsAreNotWorkloadLogs(t *testing.T) {
	r := newWeft(t)
	ctx := context.Background()
	at := time.Now().UTC().Add(-10 * time.Minute)
	if _, err := r.iv.RecordAlert(ctx, investigate.AlertIncident{Labels: map[string]string{"alertname": "Stall", "run_id": "r9", "host": "node-1"}, ActiveAt: at}); err != nil {
		t.Fatal(err)
	}
	wc, err := r.iv.Context(ctx, `{run_id="r9"}`, at.Add(-time.Minute), at.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if wc.Logs.Streams != 0 || wc.Metrics.Series != 0 || len(wc.Context) != 0 {
		t.Errorf("context of the run counts the incident: %+v", wc)
	}
	it, err := r.sub.Logs().Select(ctx, logentry.SelectParams{Start: at.Add(-time.Minute).UnixNano(), End: at.Add(time.Minute).UnixNano(),
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, investigate.KindLabel, investigate.IncidentKind), labels.MustNewMatcher(labels.MatchEqual, "host", "node-1")}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if !it.Next() {
		t.Fatalf("no incident line on {__weft_kind__=\"incident\", host=\"node-1\"} (%v)", it.Err())
	}
	ls, e := it.At()
	var inc investigate.Incident
	if err := json.Unmarshal([]byte(e.Line), &inc); err != nil || inc.Source != investigate.SourceAlert || inc.Alert["alertname"] != "Stall" || ls.Get("alertname") != "Stall" || ls.Get("run_id") != "r9" {
		t.Errorf("incident line %s %q: %+v %v", ls, e.Line, inc, err)
	}
}

// TestIncidentsSameGPUAcrossRuns replays thermal-straggler three times, an
// hour and a quarter apart, each time as another run on the same GPU (the
// run renamed), investigates each through the HTTP API as an alert would,
// and asks /weft/api/v1/incidents which incidents share a GPU: the
// throttling GPU, three times in three runs, is the top group.
func TestIncidentsSameGPUAcrossRuns(t *testing.T) {
	r := newWeft(t)
	last := scenarioOptions()
	runs := []string{"pt-llama70b-0501", "pt-llama70b-0502", "pt-llama70b-0503"}
	var ids []string
	var gpu, host string
	for i, run := range runs {
		o := last
		o.Start = last.Start.Add(-time.Duration(len(runs)-1-i) * 75 * time.Minute)
		d := r.load(t, "thermal-straggler", o, func(d *scenario.Data) { renameRun(d, d.Truth.Affected.RunID, run) })
		truth := d.Truth
		gpu, host = truth.Where.GPUUUIDs[0], truth.Where.Nodes[0]
		at := firstSymptom(truth).Add(2 * time.Minute)
		var rep investigate.Report
		httpJSON(t, http.MethodPost, r.base+"/weft/api/v1/investigate", url.Values{"selector": {`{run_id="` + run + `"}`}, "time": {at.Format(time.RFC3339)}}, &rep)
		if len(rep.Causes) == 0 || rep.Incident == "" {
			t.Fatalf("run %s: no cause or no incident: %+v", run, rep)
		}
		if top := rep.Causes[0]; !slices.Equal(top.Where.GPUUUIDs, []string{gpu}) {
			t.Fatalf("run %s: top cause %q on %v, truth %s", run, top.Summary, top.Where.GPUUUIDs, gpu)
		}
		ids = append(ids, rep.Incident)
		if i == len(runs)-1 {
			// Investigated again a minute later (a page reloaded): the
			// same incident, not a fourth.
			var again investigate.Report
			httpJSON(t, http.MethodPost, r.base+"/weft/api/v1/investigate", url.Values{"selector": {`{run_id="` + run + `"}`}, "time": {at.Add(time.Minute).Format(time.RFC3339)}}, &again)
			if again.Incident == "" {
				t.Fatalf("run %s investigated again: no incident kept", run)
			}
		}
	}
	if len(slices.Compact(slices.Clone(ids))) != 3 {
		t.Fatalf("incident IDs %v are not three", ids)
	}

	q := url.Values{"start": {last.Start.Add(-3 * time.Hour).Format(time.RFC3339)}}
	for _, by := range []string{"gpu_uuid", "host", ""} {
		q.Set("by", by)
		var ans investigate.IncidentGroups
		httpJSON(t, http.MethodGet, r.base+"/weft/api/v1/incidents", q, &ans)
		if ans.Incidents != 3 || len(ans.Groups) == 0 {
			t.Fatalf("by %q: %+v", by, ans)
		}
		top := ans.Groups[0]
		want := investigate.IncidentGroup{Key: "gpu_uuid", Value: gpu}
		if by == "host" {
			want = investigate.IncidentGroup{Key: "host", Value: host}
		}
		if top.Key != want.Key || top.Value != want.Value || top.Count != 3 || !slices.Equal(top.Runs, runs) || !slices.Equal(top.Incidents, ids) {
			t.Errorf("by %q: top group %+v, want %s=%s with incidents %v of runs %v", by, top, want.Key, want.Value, ids, runs)
		}
		if len(top.Causes) != 1 || top.Causes[0].Kind != investigate.KindThermal || top.Causes[0].Count != 3 {
			t.Errorf("by %q: top group's causes %+v", by, top.Causes)
		}
	}
	// A run's service is its job ("trainer"): three runs do not share it.
	q.Set("by", "service")
	var svc investigate.IncidentGroups
	httpJSON(t, http.MethodGet, r.base+"/weft/api/v1/incidents", q, &svc)
	if len(svc.Groups) != 0 {
		t.Errorf("by service: %+v, want no group", svc.Groups)
	}
	// One run alone shares nothing.
	q.Set("by", "gpu_uuid")
	q.Set("match[]", `{run_id="`+runs[1]+`"}`)
	var ans investigate.IncidentGroups
	httpJSON(t, http.MethodGet, r.base+"/weft/api/v1/incidents", q, &ans)
	if ans.Incidents != 1 || len(ans.Groups) != 0 {
		t.Errorf("one run: %+v", ans)
	}
}

// renameRun makes d the data of another run: every label value, resource
// attribute and line that names run old names run to.
func renameRun(d *scenario.Data, old, to string) {
	re := func(ls []scenario.Label) {
		for i := range ls {
			ls[i].Value = strings.ReplaceAll(ls[i].Value, old, to)
		}
	}
	for _, s := range d.Series {
		re(s.Labels)
	}
	for _, s := range d.Streams {
		re(s.Labels)
		re(s.Resource)
		for i := range s.Entries {
			s.Entries[i].Line = strings.ReplaceAll(s.Entries[i].Line, old, to)
			re(s.Entries[i].Meta)
		}
	}
	for _, rs := range d.Resources {
		re(rs)
	}
	for i := range d.Spans {
		re(d.Spans[i].Attrs)
	}
	d.Truth.Affected.RunID = strings.ReplaceAll(d.Truth.Affected.RunID, old, to)
	d.Truth.Where.RunID = strings.ReplaceAll(d.Truth.Where.RunID, old, to)
}

// httpJSON calls the API and decodes its data into v.
func httpJSON(t *testing.T, method, u string, form url.Values, v any) {
	t.Helper()
	var resp *http.Response
	var err error
	if method == http.MethodPost {
		resp, err = http.PostForm(u, form)
	} else {
		resp, err = http.Get(u + "?" + form.Encode())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %v %s", method, u, resp.StatusCode, err, body.Error)
	}
	if err := json.Unmarshal(body.Data, v); err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
}

package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage"
)

type churnOf struct{ ix *index.Index }

func (c churnOf) Churn(ctx context.Context, mint, maxt int64, sets ...[]*labels.Matcher) (index.Churn, error) {
	return c.ix.Churn(ctx, index.KindMetric, mint, maxt, sets...)
}

// TestChurnAPI: /weft/api/v1/cardinality/churn counts the series a
// selector created this hour and the partition's active series; bad
// parameters answer 400 with the reason.
func TestChurnAPI(t *testing.T) {
	srv, _, sub := newSubstrateServer(t, func(o *api.Options) {
		o.Churn = churnOf{ix: o.Storage.(*storage.DB).Index()}
	})
	now := time.Now()
	app := sub.Metrics().Appender(context.Background())
	for i := range 6 {
		job := "train"
		if i >= 4 {
			job = "eval"
		}
		if _, err := app.Append(0, labels.FromStrings("__name__", "gpu_util", "job", job, "gpu", strconv.Itoa(i)), now.UnixMilli(), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	get := func(q url.Values) (int, map[string]any) {
		t.Helper()
		code, body, _ := call(t, srv, http.MethodGet, "/weft/api/v1/cardinality/churn", q)
		var env map[string]any
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatalf("churn %v: %d %s", q, code, body)
		}
		return code, env
	}
	start := strconv.FormatInt(now.Add(-2*time.Hour).Unix(), 10)
	end := strconv.FormatInt(now.Unix()+1, 10)
	for _, c := range []struct {
		match   []string
		created float64
	}{{nil, 6}, {[]string{`{job="train"}`}, 4}, {[]string{`{job="eval"}`, `{gpu="0"}`}, 3}} {
		code, env := get(url.Values{"match[]": c.match, "start": {start}, "end": {end}})
		if code != http.StatusOK {
			t.Fatalf("churn %v: %d %v", c.match, code, env)
		}
		data := env["data"].(map[string]any)
		hours := data["hours"].([]any)
		if len(hours) != 3 {
			t.Fatalf("churn %v: hours %v, want the range's 3 hours", c.match, hours)
		}
		h := hours[2].(map[string]any)
		if h["created"].(float64) != c.created || int64(h["start"].(float64)) != now.Unix()/3600*3600 {
			t.Errorf("churn %v: hour %v, want %v created this hour", c.match, h, c.created)
		}
		parts := data["partitions"].([]any)
		p := parts[len(parts)-1].(map[string]any)
		if p["active"].(float64) != c.created || p["created"].(float64) != c.created || p["ended"] != nil {
			t.Errorf("churn %v: newest partition %v, want %v active and created, ended null", c.match, p, c.created)
		}
	}
	for _, q := range []url.Values{
		{"match[]": {`{job=`}},
		{"start": {end}, "end": {start}},
		{"start": {"0"}, "end": {end}},
		{"end": {"yesterday"}},
	} {
		if code, env := get(q); code != http.StatusBadRequest || env["errorType"] != "bad_data" {
			t.Errorf("churn %v: %d %v, want 400 bad_data", q, code, env)
		}
	}
}

// TestChurnAPIUnavailable: a server without a local index says so.
func TestChurnAPIUnavailable(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	code, body, _ := call(t, srv, http.MethodGet, "/weft/api/v1/cardinality/churn", nil)
	if code != http.StatusInternalServerError || !json.Valid(body) {
		t.Fatalf("churn without a reader: %d %s", code, body)
	}
}

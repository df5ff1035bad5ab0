package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLokiDeleteAPI(t *testing.T) {
	off := newLokiEnv(t)
	if code, body := off.do(t, http.MethodPost, "/loki/api/v1/delete?"+url.Values{"query": {`{app="a"}`}, "start": {"1"}}.Encode(), nil, nil); code != http.StatusForbidden || !strings.Contains(body, "-enable-admin-api") {
		t.Fatalf("disabled: %d %s", code, body)
	}

	e := newLokiEnvWith(t, func(o *LokiOptions) { o.EnableDelete = true })
	base := lokiNow.Add(-10 * time.Minute)
	var vals []string
	for i := range 6 {
		line := "ok"
		if i%2 == 1 {
			line = "secret"
		}
		vals = append(vals, fmt.Sprintf(`["%s","%s %d"]`, ns(base.Add(time.Duration(i)*time.Second)), line, i))
	}
	e.pushJSON(t, `{"streams":[{"stream":{"app":"a"},"values":[`+strings.Join(vals, ",")+`]},{"stream":{"app":"b"},"values":[`+strings.Join(vals, ",")+`]}]}`)
	visible := func(sel string) int {
		t.Helper()
		code, body := e.get(t, "/loki/api/v1/query_range", url.Values{"query": {sel}, "start": {ns(base.Add(-time.Minute))}, "end": {ns(lokiNow)}, "limit": {"1000"}}, nil)
		if code != 200 {
			t.Fatalf("query: %d %s", code, body)
		}
		return strings.Count(body, `"ok `) + strings.Count(body, `"secret `)
	}
	del := func(method string, params url.Values) (int, string) {
		t.Helper()
		return e.do(t, method, "/loki/api/v1/delete?"+params.Encode(), nil, nil)
	}

	start := strconv.FormatInt(base.Unix(), 10)
	end := base.Add(4 * time.Second).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		params url.Values
		want   string
	}{
		{url.Values{"start": {start}}, "query not set"},
		{url.Values{"query": {`{app="a"}`}}, "start time not set"},
		{url.Values{"query": {`{app="a"}`}, "start": {"yesterday"}}, "invalid start time: require unix seconds or RFC3339 format"},
		{url.Values{"query": {`{app="a"}`}, "start": {start}, "end": {ns(lokiNow.Add(time.Hour))[:10]}}, "deletes in the future are not allowed"},
		{url.Values{"query": {`{app="a"}`}, "start": {start}, "end": {strconv.FormatInt(base.Unix()-10, 10)}}, "start time can't be greater than end time"},
		{url.Values{"query": {`{app=`}, "start": {start}}, "invalid query expression"},
		{url.Values{"query": {`{app="a"} | json`}, "start": {start}}, "line filters"},
		{url.Values{"query": {`{app="a"} |= "x"`}, "start": {start}, "end": {start}}, "at least one second"},
		{url.Values{"query": {`{app="a"} |= "x"`}, "start": {start}, "max_interval": {"1d"}}, "invalid max_interval"},
	} {
		if code, body := del(http.MethodPost, c.params); code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%v: %d %q, want 400 %q", c.params, code, body, c.want)
		}
	}

	// Lines of app a saying "secret" in [base, base+4s] (1 and 3) are gone
	// at once; app b is untouched.
	if code, body := del(http.MethodPost, url.Values{"query": {`{app="a"} |= "secret"`}, "start": {start}, "end": {end}}); code != http.StatusNoContent {
		t.Fatalf("create: %d %s", code, body)
	}
	if n := visible(`{app="a"}`); n != 4 {
		t.Fatalf("a: %d lines visible, want 4", n)
	}
	if n := visible(`{app="b"}`); n != 6 {
		t.Fatalf("b: %d lines visible, want 6", n)
	}
	code, body := del(http.MethodGet, nil)
	if code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list) != 1 {
		t.Fatalf("list %s: %v", body, err)
	}
	got := list[0]
	if got["query"] != `{app="a"} |= "secret"` || got["status"] != "received" || got["start_time"] != float64(base.Unix()) ||
		got["end_time"] != float64(base.Unix()+4) || got["created_at"] != float64(lokiNow.Unix()) || got["request_id"] == "" {
		t.Fatalf("listed %v", got)
	}
	for _, k := range []string{"request_id", "start_time", "end_time", "query", "status", "created_at"} {
		if _, ok := got[k]; !ok {
			t.Errorf("field %s missing from %s", k, body)
		}
	}
	id := got["request_id"].(string)

	// Cancel: the lines come back; unknown IDs are 404.
	if code, body := del(http.MethodDelete, url.Values{"request_id": {"nope"}}); code != 404 || !strings.Contains(body, "could not find delete request") {
		t.Errorf("cancel unknown: %d %s", code, body)
	}
	if code, body := del(http.MethodDelete, url.Values{"request_id": {id}}); code != http.StatusNoContent {
		t.Fatalf("cancel: %d %s", code, body)
	}
	if n := visible(`{app="a"}`); n != 6 {
		t.Fatalf("after cancel %d lines", n)
	}
	if _, body := del(http.MethodGet, nil); strings.TrimSpace(body) != "[]" {
		t.Fatalf("list after cancel %q, want []", body)
	}

	// Processed (reclaimed by the store): listed so, not cancellable.
	if code, body := del(http.MethodPut, url.Values{"query": {`{app=~"a|b"} !~ "ok"`}, "start": {start}}); code != http.StatusNoContent {
		t.Fatalf("create: %d %s", code, body)
	}
	if err := e.store.ReclaimDeletes(context.Background(), lokiNow.UnixNano()); err != nil {
		t.Fatal(err)
	}
	if n := visible(`{app=~"a|b"}`); n != 6 {
		t.Fatalf("after reclaim %d lines, want the 6 ok lines", n)
	}
	_, body = del(http.MethodGet, nil)
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list) != 1 || list[0]["status"] != "processed" {
		t.Fatalf("list %s", body)
	}
	if code, body := del(http.MethodDelete, url.Values{"request_id": {list[0]["request_id"].(string)}}); code != 400 || !strings.Contains(body, "already processed") {
		t.Fatalf("cancel processed: %d %s", code, body)
	}
}

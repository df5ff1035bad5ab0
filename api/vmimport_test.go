package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/util/teststorage"

	"github.com/weftdb/weft/api"
)

// importExportServer serves import and export over one Prometheus TSDB.
func importExportServer(tb testing.TB, reg prometheus.Registerer) *httptest.Server {
	tb.Helper()
	db := teststorage.New(tb)
	mux := http.NewServeMux()
	io := api.DefaultVMImportOptions()
	io.Registerer = reg
	io.Ingest.Now = func() time.Time { return time.UnixMilli(1_700_000_100_000) }
	mux.Handle("POST /api/v1/import", api.NewVMImportHandler(db, io))
	mux.Handle("/api/v1/export", api.NewVMExportHandler(db, api.VMExportOptions{Now: func() time.Time { return time.UnixMilli(1_700_000_100_000) }}))
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv
}

func post(tb testing.TB, u, enc string, body []byte) (int, string) {
	tb.Helper()
	code, _, b := request(tb, http.MethodPost, u, "Content-Encoding", enc, body)
	return code, string(b)
}

type exportedLine struct {
	Metric     map[string]string `json:"metric"`
	Values     []any             `json:"values"`
	Timestamps []int64           `json:"timestamps"`
}

func export(tb testing.TB, srv *httptest.Server, params url.Values, gzipped bool) (int, []exportedLine, string) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/export?"+params.Encode(), nil)
	tr := &http.Transport{DisableCompression: true}
	if gzipped {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			tb.Fatal(err)
		}
		r = zr
	} else if gzipped {
		tb.Errorf("asked for gzip, got %q", resp.Header.Get("Content-Encoding"))
	}
	b, _ := io.ReadAll(r)
	if resp.StatusCode != 200 {
		return resp.StatusCode, nil, string(b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/stream+json; charset=utf-8" {
		tb.Errorf("content type %q", ct)
	}
	var out []exportedLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var l exportedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			tb.Fatalf("export line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return 200, out, string(b)
}

func TestVMImportExportRoundTrip(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := importExportServer(t, reg)
	const t0 = 1_700_000_000_000
	body := fmt.Sprintf(`{"metric":{"__name__":"gpu_util","gpu":"0","UUID":"GPU-1"},"values":[1,0.5,null,"Inf","-Inf",1e6],"timestamps":[%d,%d,%d,%d,%d,%d]}
{"metric":{"__name__":"gpu_util","gpu":"1"},"values":[7],"timestamps":[%d]}

`, t0, t0+15000, t0+30000, t0+45000, t0+60000, t0+75000, t0)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(body))
	zw.Close()
	if code, msg := post(t, srv.URL+"/api/v1/import?extra_label=cluster=eu", "gzip", gz.Bytes()); code != http.StatusNoContent {
		t.Fatalf("import: %d %s", code, msg)
	}
	code, lines, raw := export(t, srv, url.Values{"match[]": {`gpu_util`}}, true)
	if code != 200 || len(lines) != 2 {
		t.Fatalf("export %d: %s", code, raw)
	}
	if !strings.HasPrefix(raw, `{"metric":{"__name__":"gpu_util",`) {
		t.Errorf("__name__ not first: %s", raw)
	}
	for _, l := range lines {
		if l.Metric["cluster"] != "eu" {
			t.Errorf("extra_label missing: %v", l.Metric)
		}
		if l.Metric["gpu"] != "0" {
			continue
		}
		want := []any{1.0, 0.5, nil, "Inf", "-Inf", 1e6}
		if fmt.Sprint(l.Values) != fmt.Sprint(want) || len(l.Timestamps) != 6 || l.Timestamps[5] != t0+75000 || l.Metric["UUID"] != "GPU-1" {
			t.Errorf("gpu 0 exported as %+v", l)
		}
	}
	// The export imports back into a second store unchanged.
	srv2 := importExportServer(t, nil)
	if code, msg := post(t, srv2.URL+"/api/v1/import", "", []byte(raw)); code != http.StatusNoContent {
		t.Fatalf("re-import: %d %s", code, msg)
	}
	if _, _, raw2 := export(t, srv2, url.Values{"match[]": {`gpu_util`}}, false); raw2 != raw {
		t.Errorf("round trip changed the export:\n%s\nvs\n%s", raw2, raw)
	}

	// start/end bound it (seconds or RFC3339), max_rows_per_line splits it.
	_, lines, _ = export(t, srv, url.Values{"match[]": {`{gpu="0"}`}, "start": {"1700000015"}, "end": {time.UnixMilli(t0 + 45000).UTC().Format(time.RFC3339)}}, false)
	if len(lines) != 1 || len(lines[0].Timestamps) != 3 || lines[0].Timestamps[0] != t0+15000 {
		t.Errorf("bounded export %+v", lines)
	}
	_, lines, _ = export(t, srv, url.Values{"match[]": {`{gpu="0"}`}, "max_rows_per_line": {"4"}}, false)
	if len(lines) != 2 || len(lines[0].Values) != 4 || len(lines[1].Values) != 2 {
		t.Errorf("split export %+v", lines)
	}
	for _, p := range []url.Values{{}, {"match[]": {`{`}}, {"match[]": {"x"}, "start": {"yesterday"}}, {"match[]": {"x"}, "max_rows_per_line": {"-1"}}} {
		if code, _, msg := export(t, srv, p, false); code != 400 || msg == "" {
			t.Errorf("export %v: %d %q, want 400 with the reason", p, code, msg)
		}
	}
	if got := counterValue(t, reg, "weft_ingest_accepted_total", map[string]string{"path": "vm_import", "type": "float"}); got != 7 {
		t.Errorf("accepted counter %v, want 7", got)
	}
}

func TestVMImportErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := importExportServer(t, reg)
	const t0 = 1_700_000_000_000
	body := strings.Join([]string{
		fmt.Sprintf(`{"metric":{"__name__":"ok"},"values":[1,2],"timestamps":[%d,%d]}`, t0, t0+1000),
		`{"metric":{"__name__":"bad"`,
		fmt.Sprintf(`{"metric":{"__name__":"bad"},"values":[1,2],"timestamps":[%d]}`, t0),
		fmt.Sprintf(`{"metric":{"__name__":"bad"},"values":["seven"],"timestamps":[%d]}`, t0),
		fmt.Sprintf(`{"metric":{},"values":[1],"timestamps":[%d]}`, t0),
		fmt.Sprintf(`{"metric":{"job":"no_name"},"values":[1],"timestamps":[%d]}`, t0),              // no __name__: remote write's rule
		fmt.Sprintf(`{"metric":{"__name__":"future"},"values":[1],"timestamps":[%d]}`, t0+3600_000), // beyond the future skew
	}, "\n")
	code, msg := post(t, srv.URL+"/api/v1/import", "", []byte(body))
	if code != http.StatusBadRequest {
		t.Fatalf("%d %s", code, msg)
	}
	for _, want := range []string{
		"imported 2 samples; 4 invalid lines skipped; 2 samples rejected",
		"line 2: cannot parse json line",
		"line 3: `timestamps` array size must match `values` array size",
		"line 4: cannot parse json line: unsupported value string \"seven\"",
		"line 5: missing tags",
		"invalid labels",
		"too far in the future",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("answer lacks %q:\n%s", want, msg)
		}
	}
	if _, lines, _ := export(t, srv, url.Values{"match[]": {`{__name__=~".+"}`}}, false); len(lines) != 1 || lines[0].Metric["__name__"] != "ok" {
		t.Errorf("stored %+v, want only the valid series", lines)
	}
	if got := counterValue(t, reg, "weft_ingest_rejected_total", map[string]string{"path": "vm_import", "reason": "invalid_line"}); got != 4 {
		t.Errorf("invalid_line counter %v, want 4", got)
	}
	long := `{"metric":{"__name__":"x"},"values":[` + strings.Repeat("1,", 6<<20) + `1],"timestamps":[1]}`
	if code, msg := post(t, srv.URL+"/api/v1/import", "", []byte(long)); code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "longer than") {
		t.Errorf("long line: %d %s", code, msg)
	}
	if code, _ := post(t, srv.URL+"/api/v1/import", "br", []byte(body)); code != http.StatusUnsupportedMediaType {
		t.Errorf("unknown encoding: %d", code)
	}
}

package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
)

// The disk-full test's sizes. The filesystem is a real tmpfs, small enough
// to fill in seconds; the filler leaves diskFullRoom above weft's default
// reserve (8 MiB on a 64 MiB filesystem) for the writes to use up: more
// than a Pebble memtable (4 MiB on this filesystem), so a flush and a WAL
// rotation happen while the disk fills.
const (
	diskFullFSSize    = 64 << 20
	diskFullRoom      = 16 << 20
	diskFullSeries    = 50
	diskFullLineBytes = 8192
	diskFullLines     = 20 // per push
	diskFullStopBound = 20 * time.Second
)

// TestDiskFull runs the real weft on a 64 MiB tmpfs and fills it with
// remote write and Loki push until weft refuses: every write path answers
// 503 with Retry-After and the reason, /-/ready says why, reads keep
// working; once space is freed writes resume by themselves and everything
// acknowledged is there. Then the disk is filled again and weft gets
// SIGTERM: it stops within diskFullStopBound with exit code 0, and a
// restart finds everything acknowledged in both rounds.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t)
	data := filepath.Join(mnt, "data")
	w := startDiskFullWeft(t, data)

	f := &diskFiller{t: t, base: w.base, runID: strconv.FormatInt(time.Now().UnixNano(), 36)}
	filler := filepath.Join(mnt, "filler")
	fillTo(t, mnt, filler, diskFullRoom)
	f.untilRefused()

	// Every write path refuses with the reason.
	code, body, hdr := f.remoteWrite(1)
	expectRefusal(t, "remote write", code, body, hdr)
	code, body, hdr = f.lokiPush(1)
	expectRefusal(t, "loki push", code, body, hdr)
	code, body, hdr = f.otlpLogs()
	expectRefusal(t, "otlp logs", code, body, hdr)
	code, body, _ = dfGet(t, w.base+"/-/ready")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "disk space low") {
		t.Fatalf("/-/ready on a full disk: %d %q, want 503 with the reason", code, body)
	}
	// Reads keep working.
	f.checkAcknowledged("while full")

	// Space returns: writes resume by themselves.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, w.base+"/-/ready", http.StatusOK, 30*time.Second)
	if code, body, _ := f.remoteWrite(1); code != http.StatusNoContent {
		t.Fatalf("remote write after space returned: %d %s", code, body)
	}
	if code, body, _ := f.lokiPush(1); code != http.StatusNoContent {
		t.Fatalf("loki push after space returned: %d %s", code, body)
	}
	f.checkAcknowledged("after space returned")

	// Full again, then SIGTERM: the shutdown is bounded and clean.
	fillTo(t, mnt, filler, diskFullRoom)
	f.untilRefused()
	start := time.Now()
	err := w.stop()
	took := time.Since(start)
	t.Logf("SIGTERM on a full disk: exit after %v (%v)", took.Round(time.Millisecond), err)
	if err != nil {
		t.Fatalf("weft on a full disk: %v after SIGTERM\n%s", err, tail(w.out.String(), 4000))
	}
	if took > diskFullStopBound {
		t.Fatalf("SIGTERM on a full disk took %v, want under %v", took, diskFullStopBound)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	w = startDiskFullWeft(t, data)
	f.base = w.base
	f.checkAcknowledged("after a restart")
	t.Logf("acknowledged: %d samples, %d log lines; refused: %d remote writes, %d pushes",
		len(f.samples), len(f.lines), f.refusedRW, f.refusedLoki)
}

// TestDiskFullWithoutReserve turns the free-space guard off, so writes run
// into ENOSPC itself, in weft's WAL and inside Pebble. Whatever breaks
// first, weft must answer every write with 204 or a retryable 503 (never
// 500, never a hang, never a panic) and, if Pebble cannot go on, exit with
// code 70; once space is freed (and weft restarted if it exited) everything
// acknowledged is there and writes are taken again.
func TestDiskFullWithoutReserve(t *testing.T) {
	mnt := mountTmpfs(t)
	data := filepath.Join(mnt, "data")
	cfg := filepath.Join(t.TempDir(), "weft.yaml")
	if err := os.WriteFile(cfg, []byte("storage:\n  disk_reserve_bytes: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startDiskFullWeft(t, data, "-config", cfg)
	f := &diskFiller{t: t, base: w.base, runID: strconv.FormatInt(time.Now().UnixNano(), 36), tolerateExit: true}
	filler := filepath.Join(mnt, "filler")
	fillTo(t, mnt, filler, 6<<20)
	deadline := time.Now().Add(2 * time.Minute)
	refused := 0
	for refused < 5 && !f.exited && time.Now().Before(deadline) {
		for _, code := range []int{f.writeOnce(), f.pushOnce()} {
			if code == http.StatusServiceUnavailable {
				refused++
			}
		}
	}
	exited := false
	select {
	case <-w.done:
		exited = true
	case <-time.After(20 * time.Second):
		if f.exited {
			t.Fatal("a request failed without an answer but weft did not exit")
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if exited {
		var ee *exec.ExitError
		if !errors.As(w.err, &ee) || ee.ExitCode() != 70 {
			t.Fatalf("weft exited with %v on ENOSPC, want exit code 70\n%s", w.err, tail(w.out.String(), 4000))
		}
		t.Logf("Pebble could not go on: weft exited 70; restarting. Its last words:\n%s", tail(w.out.String(), 1500))
		w = startDiskFullWeft(t, data, "-config", cfg)
		f.base = w.base
	} else {
		t.Logf("weft kept running through ENOSPC (%d refusals)", refused)
		waitStatus(t, w.base+"/-/ready", http.StatusOK, 30*time.Second)
	}
	f.tolerateExit = false
	if code, body, _ := f.remoteWrite(1); code != http.StatusNoContent {
		t.Fatalf("remote write after space returned: %d %s", code, body)
	}
	if code, body, _ := f.lokiPush(1); code != http.StatusNoContent {
		t.Fatalf("loki push after space returned: %d %s", code, body)
	}
	f.checkAcknowledged("after ENOSPC")
	t.Logf("acknowledged: %d samples, %d log lines; refused: %d remote writes, %d pushes",
		len(f.samples), len(f.lines), f.refusedRW, f.refusedLoki)
}

// writeOnce and pushOnce write while the disk fills without a reserve: 204
// or 503 with a reason are the only answers allowed.
func (f *diskFiller) writeOnce() int {
	code, body, hdr := f.remoteWrite(diskFullSeries)
	f.allowed("remote write", code, body, hdr)
	return code
}

func (f *diskFiller) pushOnce() int {
	code, body, hdr := f.lokiPush(diskFullLines)
	f.allowed("loki push", code, body, hdr)
	return code
}

func (f *diskFiller) allowed(path string, code int, body string, hdr http.Header) {
	f.t.Helper()
	switch {
	case code == 0 && f.exited:
	case code == http.StatusNoContent:
	case code == http.StatusServiceUnavailable && hdr.Get("Retry-After") != "" &&
		(strings.Contains(body, "no space left on device") || strings.Contains(body, "disk space low") || strings.Contains(body, "storage failed")):
	default:
		f.t.Fatalf("%s on ENOSPC: %d %q, want 204 or 503 with Retry-After and the reason", path, code, body)
	}
}

// mountTmpfs mounts a diskFullFSSize tmpfs on a new directory, unmounted on
// cleanup; it skips the test where mounting is not allowed.
func mountTmpfs(t *testing.T) string {
	t.Helper()
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size="+strconv.Itoa(diskFullFSSize)); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return mnt
}

// startDiskFullWeft starts weft on dataDir (the tmpfs) and waits until it
// is ready.
func startDiskFullWeft(t *testing.T, dataDir string, extra ...string) *diskWeft {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{
		"-data-dir", dataDir,
		"-http-addr", addr,
		"-otlp-grpc-addr", "",
		"-otlp-http-addr", "",
		"-log-level", "warn",
	}, extra...)
	p := startProcess(t, "weft", buildWeft(t), args...)
	w := &diskWeft{process: p, base: "http://" + addr}
	waitReady(t, p, w.base+"/-/ready")
	return w
}

// diskWeft is a weft process and its base URL.
type diskWeft struct {
	*process
	base string
}

// fillTo writes the filler file so that the filesystem at mnt has about
// room bytes free.
func fillTo(t *testing.T, mnt, filler string, room int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	n := free - room
	if n <= 0 {
		t.Fatalf("only %d bytes free on the tmpfs before filling", free)
	}
	fh, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := syscall.Fallocate(int(fh.Fd()), 0, 0, n); err != nil {
		t.Fatalf("fallocate %d bytes: %v", n, err)
	}
}

// diskFiller writes unique samples and lines and remembers what weft
// acknowledged.
type diskFiller struct {
	t                      *testing.T
	base, runID            string
	batch                  int
	samples                map[string]float64 // "series ts" -> value, acknowledged
	lines                  map[string]bool    // line id, acknowledged
	refusedRW, refusedLoki int
	// tolerateExit: a request without an answer (weft exited) sets
	// exited instead of failing the test.
	tolerateExit, exited bool
}

// untilRefused alternates remote write and Loki push until both are
// refused; it fails the test if that takes more than a minute.
func (f *diskFiller) untilRefused() {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	rwRefused, lokiRefused := false, false
	for !rwRefused || !lokiRefused {
		if time.Now().After(deadline) {
			f.t.Fatalf("weft did not refuse writes within a minute (remote write refused: %v, loki: %v)", rwRefused, lokiRefused)
		}
		code, body, _ := f.remoteWrite(diskFullSeries)
		switch code {
		case http.StatusNoContent:
		case http.StatusServiceUnavailable:
			rwRefused = true
		default:
			f.t.Fatalf("remote write while filling: %d %s", code, body)
		}
		code, body, _ = f.lokiPush(diskFullLines)
		switch code {
		case http.StatusNoContent:
		case http.StatusServiceUnavailable:
			lokiRefused = true
		default:
			f.t.Fatalf("loki push while filling: %d %s", code, body)
		}
	}
}

// remoteWrite sends one sample for each of n series at a new timestamp.
func (f *diskFiller) remoteWrite(n int) (int, string, http.Header) {
	f.t.Helper()
	f.batch++
	ts := time.Now().UnixMilli() + int64(f.batch) // unique per batch
	var wr prompb.WriteRequest
	for i := range n {
		wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{
			Labels: []prompb.Label{
				{Name: "__name__", Value: "disk_fill"},
				{Name: "run", Value: f.runID},
				{Name: "series", Value: strconv.Itoa(i)},
			},
			Samples: []prompb.Sample{{Value: float64(f.batch*1000 + i), Timestamp: ts}},
		})
	}
	raw, err := wr.Marshal()
	if err != nil {
		f.t.Fatal(err)
	}
	code, body, hdr := f.post(f.base+"/api/v1/write", "application/x-protobuf", "snappy", s2.EncodeSnappy(nil, raw))
	if code == http.StatusNoContent {
		if f.samples == nil {
			f.samples = map[string]float64{}
		}
		for i := range n {
			f.samples[fmt.Sprintf("%d %d", i, ts)] = float64(f.batch*1000 + i)
		}
	} else if code == http.StatusServiceUnavailable {
		f.refusedRW++
	}
	return code, body, hdr
}

// lokiPush sends n lines of diskFullLineBytes, incompressible, each with a
// unique id.
func (f *diskFiller) lokiPush(n int) (int, string, http.Header) {
	f.t.Helper()
	f.batch++
	now := time.Now().UnixNano()
	type stream struct {
		Stream map[string]string `json:"stream"`
		Values [][2]string       `json:"values"`
	}
	s := stream{Stream: map[string]string{"job": "diskfill", "run": f.runID}}
	var ids []string
	pad := make([]byte, diskFullLineBytes/2)
	for i := range n {
		_, _ = rand.Read(pad)
		id := fmt.Sprintf("line-%d-%d", f.batch, i)
		ids = append(ids, id)
		s.Values = append(s.Values, [2]string{strconv.FormatInt(now+int64(i), 10), id + " " + hex.EncodeToString(pad)})
	}
	body, _ := json.Marshal(map[string][]stream{"streams": {s}})
	code, resp, hdr := f.post(f.base+"/loki/api/v1/push", "application/json", "", body)
	if code == http.StatusNoContent {
		if f.lines == nil {
			f.lines = map[string]bool{}
		}
		for _, id := range ids {
			f.lines[id] = true
		}
	} else if code == http.StatusServiceUnavailable {
		f.refusedLoki++
	}
	return code, resp, hdr
}

// otlpLogs sends one OTLP/HTTP JSON log record to the main port.
func (f *diskFiller) otlpLogs() (int, string, http.Header) {
	f.t.Helper()
	body := fmt.Sprintf(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"diskfill"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"%d","body":{"stringValue":"otlp line"}}]}]}]}`, time.Now().UnixNano())
	return dfPost(f.t, f.base+"/otlp/v1/logs", "application/json", "", []byte(body))
}

// checkAcknowledged queries every acknowledged sample and line back.
func (f *diskFiller) checkAcknowledged(when string) {
	f.t.Helper()
	q := url.Values{"query": {`disk_fill{run="` + f.runID + `"}[1h]`}, "time": {strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)}}
	code, body, _ := dfGet(f.t, f.base+"/api/v1/query?"+q.Encode())
	if code != http.StatusOK {
		f.t.Fatalf("%s: metric query: %d %s", when, code, body)
	}
	var mr struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &mr); err != nil {
		f.t.Fatalf("%s: decode metric answer: %v", when, err)
	}
	stored := map[string]float64{}
	for _, r := range mr.Data.Result {
		for _, v := range r.Values {
			ts := int64(v[0].(float64) * 1000)
			val, _ := strconv.ParseFloat(v[1].(string), 64)
			stored[fmt.Sprintf("%s %d", r.Metric["series"], ts)] = val
		}
	}
	missing := 0
	for k, v := range f.samples {
		if got, ok := stored[k]; !ok || got != v {
			missing++
		}
	}
	if missing > 0 {
		f.t.Fatalf("%s: %d of %d acknowledged samples missing or wrong (%d stored)", when, missing, len(f.samples), len(stored))
	}

	lq := url.Values{
		"query":     {`{job="diskfill", run="` + f.runID + `"}`},
		"start":     {strconv.FormatInt(time.Now().Add(-time.Hour).UnixNano(), 10)},
		"end":       {strconv.FormatInt(time.Now().Add(time.Minute).UnixNano(), 10)},
		"limit":     {"5000"},
		"direction": {"forward"},
	}
	code, body, _ = dfGet(f.t, f.base+"/loki/api/v1/query_range?"+lq.Encode())
	if code != http.StatusOK {
		f.t.Fatalf("%s: log query: %d %s", when, code, body)
	}
	var lr struct {
		Data struct {
			Result []struct {
				Values [][2]string `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &lr); err != nil {
		f.t.Fatalf("%s: decode log answer: %v", when, err)
	}
	got := map[string]bool{}
	for _, r := range lr.Data.Result {
		for _, v := range r.Values {
			id, _, _ := strings.Cut(v[1], " ")
			got[id] = true
		}
	}
	if len(got) >= 5000 {
		f.t.Fatalf("%s: the log query hit its limit; the test writes too many lines", when)
	}
	missing = 0
	for id := range f.lines {
		if !got[id] {
			missing++
		}
	}
	if missing > 0 {
		f.t.Fatalf("%s: %d of %d acknowledged lines missing (%d stored)", when, missing, len(f.lines), len(got))
	}
}

func expectRefusal(t *testing.T, path string, code int, body string, hdr http.Header) {
	t.Helper()
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(body, "disk space low") {
		t.Fatalf("%s on a full disk: %d, Retry-After %q, %q; want 503 with Retry-After and the reason", path, code, hdr.Get("Retry-After"), body)
	}
}

// post is dfPost, or with tolerateExit a transport error is code 0 and
// sets exited.
func (f *diskFiller) post(u, ct, enc string, body []byte) (int, string, http.Header) {
	f.t.Helper()
	if !f.tolerateExit {
		return dfPost(f.t, u, ct, enc, body)
	}
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		f.exited = true
		return 0, err.Error(), http.Header{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func dfPost(t *testing.T, u, ct, enc string, body []byte) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	return dfDo(t, req)
}

func dfGet(t *testing.T, u string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dfDo(t, req)
}

// do sends req with a timeout: a write path that hangs on a full disk is
// the defect this test is about.
func dfDo(t *testing.T, req *http.Request) (int, string, http.Header) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// waitStatus polls u until it answers want, or fails after d.
func waitStatus(t *testing.T, u string, want int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		code, body, _ := dfGet(t, u)
		if code == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still answers %d %q after %v, want %d", u, code, body, d, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

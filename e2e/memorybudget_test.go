package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
)

// The memory-budget test's sizes: a budget small enough to reach in a few
// seconds of all-new series on a loaded machine.
const (
	memBudget       = 256 << 20
	memBatchSeries  = 5000
	memMaxBatches   = 400 // 2M series: far more than fit the budget
	memReopenFactor = 1.5 // the default budget is 2/3 of the memory limit
)

// TestMemoryBudgetReopen writes all-new series into the real weft with a
// -memory-budget until it answers 429 (with the reason), checks that
// existing series are still accepted, kills it with SIGKILL mid-stream
// (nothing checkpointed: the whole head is in the WAL), restarts it with the
// same budget and checks that the reopen's peak RSS stays within the memory
// limit the budget stands for (budget x 1.5) and that every acknowledged
// series is there. The peaks are logged.
func TestMemoryBudgetReopen(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	budget := strconv.Itoa(memBudget)
	w := startDiskFullWeft(t, data, "-memory-budget", budget)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	acked, refusedAt := 0, -1
	var refusal string
	for b := 0; b < memMaxBatches; b++ {
		code, body, hdr := dfPost(t, w.base+"/api/v1/write", "application/x-protobuf", "snappy", newSeriesBatch(t, run, b))
		if code == http.StatusNoContent {
			acked += memBatchSeries
			continue
		}
		if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
			t.Fatalf("batch %d: %d %q, want 204 or 429 with Retry-After", b, code, body)
		}
		refusedAt, refusal = b, body
		break
	}
	if refusedAt < 0 {
		t.Fatalf("%d new series never met the %d MiB budget", acked, memBudget>>20)
	}
	if !strings.Contains(refusal, "memory budget exceeded") {
		t.Fatalf("429 without the reason: %q", refusal)
	}
	// Existing series keep accepting samples.
	if code, body, _ := dfPost(t, w.base+"/api/v1/write", "application/x-protobuf", "snappy", newSeriesBatch(t, run, 0)); code != http.StatusNoContent {
		t.Fatalf("existing series over budget: %d %s", code, body)
	}
	ingestPeak := peakRSS(t, w.cmd.Process.Pid)
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done

	start := time.Now()
	w = startDiskFullWeft(t, data, "-memory-budget", budget)
	reopen := time.Since(start)
	reopenPeak := peakRSS(t, w.cmd.Process.Pid)
	t.Logf("budget %d MiB: %d series acknowledged; peak RSS while ingesting %d MiB, reopen (WAL replay of all of them) %d MiB in %v",
		memBudget>>20, acked, ingestPeak>>20, reopenPeak>>20, reopen.Round(time.Millisecond))
	if limit := int64(memBudget * memReopenFactor); reopenPeak > limit {
		t.Fatalf("reopen peaked at %d MiB, over the %d MiB limit the budget stands for", reopenPeak>>20, limit>>20)
	}
	q := url.Values{"query": {`count(mb_series{run="` + run + `"})`}}
	code, body, _ := dfGet(t, w.base+"/api/v1/query?"+q.Encode())
	if code != http.StatusOK {
		t.Fatalf("count after reopen: %d %s", code, body)
	}
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Data.Result) != 1 {
		t.Fatalf("count after reopen: %s (%v)", body, err)
	}
	if got, _ := strconv.Atoi(r.Data.Result[0].Value[1].(string)); got != acked {
		t.Fatalf("%d series after reopen, %d acknowledged", got, acked)
	}
}

// newSeriesBatch is a remote-write body of memBatchSeries series that batch
// b alone has, one sample each.
func newSeriesBatch(t *testing.T, run string, b int) []byte {
	t.Helper()
	now := time.Now().UnixMilli()
	wr := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, memBatchSeries)}
	for i := range wr.Timeseries {
		wr.Timeseries[i] = prompb.TimeSeries{
			Labels: []prompb.Label{
				{Name: "__name__", Value: "mb_series"},
				{Name: "gpu_uuid", Value: fmt.Sprintf("GPU-%08x-%04x", b, i)},
				{Name: "pod", Value: "trainer-" + strconv.Itoa(b)},
				{Name: "run", Value: run},
			},
			Samples: []prompb.Sample{{Value: float64(i), Timestamp: now}},
		}
	}
	raw, err := wr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return s2.EncodeSnappy(nil, raw)
}

// peakRSS is VmHWM of pid: the largest resident set it had.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc to read the peak RSS from: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

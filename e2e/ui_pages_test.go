package e2e

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUIPages drives weft's web UI in headless Chromium against the real
// weft binary loaded with a training run (loadTrainingRun): every page
// loads without console errors, a typed PromQL query draws a graph whose
// legend names the series, a typed LogQL query lists the expected line, a
// pivot click on run_id lands on the run's workload page, which marks the
// faulty GPU, and trace links land on the trace page. A screenshot of each
// page is written (see screenshotDir).
func TestUIPages(t *testing.T) {
	chromiumPath(t)
	_, base := startWeft(t, "weft")
	first, last := loadTrainingRun(t, base, time.Now())
	b := newBrowser(t)
	shots := screenshotDir(t)
	t.Logf("screenshots in %s", shots)

	t.Run("metrics query draws a graph", func(t *testing.T) {
		b.do(t, chromedp.Navigate(base+"/#/metrics"))
		query := `DCGM_FI_DEV_GPU_UTIL{run_id="r42"}`
		b.typeQuery(t, "promql-editor-0", query)
		b.do(t, chromedp.Click(`[data-testid=run]`))
		b.waitJS(t, `document.querySelector('[data-testid=graph][data-state=drawn]')`)
		rows := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=series-row]')].map(e => e.innerText)`)
		if len(rows) != 8 {
			t.Fatalf("legend has %d rows, want the 8 GPUs: %q", len(rows), rows)
		}
		for _, r := range rows {
			if !strings.Contains(r, "DCGM_FI_DEV_GPU_UTIL") || !strings.Contains(r, `run_id="r42"`) || !strings.Contains(r, "UUID=") {
				t.Errorf("legend row %q does not name the series", r)
			}
		}
		if ink := canvasInk(t, b, `[data-testid=graph] .plot canvas`); ink < 2000 {
			t.Errorf("graph canvas has %d coloured pixels: nothing drawn", ink)
		}
		hash := eval[string](t, b, `location.hash`)
		if u, err := url.Parse("x:" + strings.TrimPrefix(hash, "#")); err != nil || u.Query().Get("q") != query {
			t.Errorf("URL state %q does not hold the query", hash)
		}
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "metrics.png")
	})

	t.Run("pivot to the workload page, which marks the faulty GPU", func(t *testing.T) {
		b.do(t, chromedp.Click(`[data-testid=series-row] a.pivot[data-pivot=run_id]`))
		b.waitJS(t, `document.querySelector('[data-testid=workload-page]')`)
		if h := eval[string](t, b, `location.hash`); !strings.HasPrefix(h, "#/workload/run_id/r42") {
			t.Fatalf("pivot landed on %q", h)
		}
		b.waitJS(t, `document.querySelector('[data-testid=heatmap] canvas[data-state=drawn]')`)
		marked := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=gpu-row][data-outlier=true]')].map(e => e.dataset.gpu)`)
		rows := eval[int](t, b, `document.querySelectorAll('[data-testid=gpu-row]').length`)
		if rows != 8 || len(marked) != 1 || marked[0] != uiFaultyHost+" gpu "+uiFaultyGPU {
			t.Fatalf("heatmap has %d GPUs and marks %q, want 8 and only %q", rows, marked, uiFaultyHost+" gpu "+uiFaultyGPU)
		}
		if ink := canvasInk(t, b, `[data-testid=heatmap] canvas`); ink < 10000 {
			t.Errorf("heatmap canvas has %d coloured pixels", ink)
		}
		ctx := eval[string](t, b, `document.querySelector('[data-testid=workload-context]').innerText`)
		for _, want := range []string{`model="llama-3-8b"`, `team="vision"`, `Hostname="node-b"`} {
			if !strings.Contains(ctx, want) {
				t.Errorf("context lacks %s: %q", want, ctx)
			}
		}
		// Step time is drawn, and the run's logs are listed.
		b.waitJS(t, `document.querySelector('[data-testid="progress-train_step_seconds"][data-state=drawn]')`)
		b.waitJS(t, `document.querySelectorAll('[data-testid=workload-logs] [data-testid=log-line]').length > 0`)
		// Other signals: the power heatmap marks the same GPU.
		b.do(t, chromedp.Click(`button[data-signal=power]`))
		b.waitJS(t, `location.hash.includes('gpu=power') && document.querySelector('[data-testid=heatmap] canvas[data-state=drawn]')`)
		b.waitJS(t, fmt.Sprintf(`[...document.querySelectorAll('[data-testid=gpu-row][data-outlier=true]')].map(e => e.dataset.gpu).join() === %q`, uiFaultyHost+" gpu "+uiFaultyGPU))
		b.do(t, chromedp.Click(`button[data-signal=util]`))
		b.waitJS(t, `location.hash.includes('gpu=util') && document.querySelector('[data-testid=heatmap] canvas[data-state=drawn]')`)
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "workload.png")
		b.viewShot(t, shots, "workload-top.png", 1200, 800) // docs/ui-workload.png
	})

	t.Run("GPU pivot from the heatmap", func(t *testing.T) {
		b.do(t, chromedp.Click(`[data-testid=gpu-row][data-outlier=true] a.pivot[data-pivot=UUID]`))
		b.waitJS(t, `document.querySelector('[data-testid=workload-page][data-key=UUID]') && document.querySelector('[data-testid=heatmap][data-rows="1"] canvas[data-state=drawn]')`)
		if g := eval[string](t, b, `document.querySelector('[data-testid=gpu-row]').dataset.gpu`); g != uiFaultyHost+" gpu "+uiFaultyGPU {
			t.Errorf("the GPU's page shows %q", g)
		}
		b.noConsoleErrors(t)
	})

	t.Run("logql query lists the lines", func(t *testing.T) {
		b.do(t, chromedp.Navigate(base+"/#/logs"))
		b.typeQuery(t, "logql-editor", `{run_id="r42"} |= "NCCL"`)
		b.do(t, chromedp.Click(`[data-testid=run]`))
		b.waitJS(t, `document.querySelector('[data-testid=log-lines]')`)
		lines := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=log-line] .text')].map(e => e.innerText)`)
		if len(lines) != 1 || !strings.Contains(lines[0], uiErrorLine) {
			t.Fatalf("lines %q, want the one NCCL error", lines)
		}
		if lvl := eval[string](t, b, `document.querySelector('[data-testid=log-line]').dataset.level`); lvl != "error" {
			t.Errorf("level %q", lvl)
		}
		b.waitJS(t, `document.querySelector('[data-testid=volume][data-state=drawn]')`)
		// Open the line: its labels are pivots, its metadata holds the trace.
		b.do(t, chromedp.Click(`[data-testid=log-line] .logline-main`))
		b.waitJS(t, `document.querySelector('[data-testid=log-details] a.pivot[data-pivot=rank]')`)
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "logs.png")
		// This test stores no spans: the trace page says the trace is missing
		// (TestUITracesAndAlerts opens stored ones).
		b.do(t, chromedp.Click(`[data-testid=log-line] a.trace`))
		b.waitJS(t, `document.querySelector('[data-testid=trace-missing]')`)
		if id := eval[string](t, b, `document.querySelector('[data-testid=trace-id]').innerText`); id != uiTraceID {
			t.Errorf("trace page for %q, want %s", id, uiTraceID)
		}
		b.noConsoleErrorsBut(t, "/api/v2/traces/"+uiTraceID, "404")
	})

	t.Run("all lines of a rank", func(t *testing.T) {
		rng := fmt.Sprintf("&from=%d&to=%d", first.Unix()-60, last.Unix()+60)
		b.do(t, chromedp.Navigate(base+"/#/logs?q="+url.QueryEscape(`{run_id="r42", rank="5"}`)+rng))
		b.waitJS(t, `document.querySelector('[data-testid=log-lines]')`)
		n := eval[int](t, b, `document.querySelectorAll('[data-testid=log-line]').length`)
		if n != 62 { // 61 progress lines over the hour, and the error
			t.Errorf("%d lines, want 62", n)
		}
		b.noConsoleErrors(t)
	})

	t.Run("live tail shows a pushed line", func(t *testing.T) {
		b.do(t, chromedp.Navigate(base+"/#/logs?live=1&q="+url.QueryEscape(`{run_id="r42", rank="0"}`)))
		b.waitJS(t, `document.querySelector('.tail-status.live')`)
		line := "tailed line " + strconv.FormatInt(time.Now().UnixNano(), 10)
		lokiPush(t, base, []map[string]any{{
			"stream": map[string]string{"service_name": "trainer", "run_id": uiRun, "rank": "0", "host": "node-a"},
			"values": [][]any{{strconv.FormatInt(time.Now().UnixNano(), 10), line}},
		}})
		b.waitJS(t, fmt.Sprintf(`[...document.querySelectorAll('[data-testid=tail] .text')].some(e => e.innerText === %q)`, line))
		b.noConsoleErrors(t)
	})

	t.Run("exemplars link to traces", func(t *testing.T) {
		b.do(t, chromedp.Navigate(base+"/#/metrics?q="+url.QueryEscape(`train_step_seconds{run_id="r42"}`)))
		b.waitJS(t, `document.querySelector('[data-testid=graph][data-state=drawn]')`)
		b.waitJS(t, `document.querySelectorAll('[data-testid=exemplars] a[data-trace]').length > 0`)
		href := eval[string](t, b, `document.querySelector('[data-testid=exemplars] a[data-trace]').getAttribute('href')`)
		if !strings.HasPrefix(href, "#/traces/") || len(href) != len("#/traces/")+32 {
			t.Errorf("exemplar link %q", href)
		}
		b.do(t, chromedp.Click(`button[data-testid=tab-table]`))
		b.waitJS(t, `document.querySelectorAll('[data-testid=table-row]').length === 8`)
		b.noConsoleErrors(t)
	})

	t.Run("cardinality", func(t *testing.T) {
		b.do(t, chromedp.Navigate(base+"/#/cardinality"))
		b.waitJS(t, `document.querySelector('[data-testid=metric-names] [data-testid=card-row]')`)
		txt := eval[string](t, b, `document.querySelector('[data-testid=metric-names]').innerText`)
		if !strings.Contains(txt, "DCGM_FI_DEV_GPU_UTIL") {
			t.Errorf("top metric names %q", txt)
		}
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "cardinality.png")
		b.do(t, chromedp.Navigate(base+"/#/cardinality?focus=rank&match="+url.QueryEscape(`{run_id="r42"}`)))
		b.waitJS(t, `document.querySelectorAll('[data-testid=focus] [data-testid=card-row]').length === 8`)
		if tot := eval[string](t, b, `document.querySelector('[data-testid=cardinality-totals]').innerText`); !strings.HasPrefix(tot, "40 series") {
			t.Errorf("drill-down totals %q, want the run's 40 series", tot)
		}
		// Churn: this weft created the run's 40 series within the week.
		b.waitJS(t, `document.querySelector('[data-testid=churn-totals]')`)
		if n := eval[int](t, b, `[...document.querySelectorAll('[data-testid=churn-hour]')].reduce((n, e) => n + Number(e.dataset.created), 0)`); n != 40 {
			t.Errorf("churn: %d series created per the hour bars, want the run's 40", n)
		}
		if tot := eval[string](t, b, `document.querySelector('[data-testid=churn-totals]').innerText`); !strings.HasPrefix(tot, "40 series created") {
			t.Errorf("churn totals %q", tot)
		}
		if days := eval[int](t, b, `document.querySelectorAll('[data-testid=churn-day]').length`); days < 1 {
			t.Errorf("churn: no day rows")
		}
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "cardinality-churn.png")
	})

	t.Run("status", func(t *testing.T) {
		b.do(t, chromedp.Navigate(base+"/#/status"))
		b.waitJS(t, `document.querySelector('[data-testid=buildinfo]')`)
		txt := eval[string](t, b, `document.querySelector('[data-testid=status-page]').innerText`)
		for _, want := range []string{"version", "storageRetention", "weft_samples_ingested_total", "data-dir"} {
			if !strings.Contains(txt, want) {
				t.Errorf("status page lacks %q", want)
			}
		}
		// The effective configuration, folded until opened.
		cfg := eval[string](t, b, `(document.querySelector('[data-testid=config] details').open = true, document.querySelector('[data-testid=config]').innerText)`)
		for _, want := range []string{"storage:", "retention: 30d", "http_addr:"} {
			if !strings.Contains(cfg, want) {
				t.Errorf("configuration lacks %q: %.300q", want, cfg)
			}
		}
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "status.png")
	})
}

// TestUIRoutePrefix serves weft under -web.route-prefix: the UI's assets
// and API calls resolve under the prefix, and a graph draws.
func TestUIRoutePrefix(t *testing.T) {
	chromiumPath(t)
	addr := freeAddr(t)
	p := startProcess(t, "weft", buildWeft(t),
		"-data-dir", t.TempDir()+"/data", "-http-addr", addr, "-otlp-grpc-addr", "", "-otlp-http-addr", "",
		"-log-level", "warn", "-web.route-prefix", "/weft")
	base := "http://" + addr + "/weft"
	waitReady(t, p, base+"/-/ready")
	loadTrainingRun(t, base, time.Now())
	b := newBrowser(t)
	b.do(t, chromedp.Navigate("http://"+addr+"/"))
	if loc := eval[string](t, b, `location.pathname`); loc != "/weft/" {
		t.Errorf("/ redirected to %q, want /weft/", loc)
	}
	b.do(t, chromedp.Navigate(base+"/#/metrics?q="+url.QueryEscape(`DCGM_FI_DEV_GPU_UTIL{gpu="0"}`)))
	b.waitJS(t, `document.querySelector('[data-testid=graph][data-state=drawn]')`)
	if n := eval[int](t, b, `document.querySelectorAll('[data-testid=series-row]').length`); n != 2 {
		t.Errorf("%d series, want 2", n)
	}
	b.noConsoleErrors(t)
}

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

// mainThreadSeconds is the renderer's busy time so far (Performance
// domain's TaskDuration): CPU spent on the page, which waiting for the API
// or for a loaded machine's cores does not add to.
func mainThreadSeconds(tb testing.TB, br *uiBrowser) float64 {
	tb.Helper()
	var v float64
	br.do(tb, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, performance.Enable, performance.EnableParams{}); err != nil {
			return err
		}
		res, err := cdp.Call(ctx, t, performance.GetMetrics, cdp.Empty{})
		for _, m := range res.Metrics {
			if m.Name == "TaskDuration" {
				v = m.Value
			}
		}
		return err
	}))
	return v
}

// BenchmarkUI times, in headless Chromium against the real weft binary,
// navigation to a drawn view, the API's time included: a fresh document
// each time (from about:blank; the browser's cache keeps the immutable
// assets, as for a returning user), until the graph or heatmap has drawn.
//
//	go test -run XXX -bench BenchmarkUI -benchtime 10x ./e2e/
//
// Beside the wall time it reports the page's own clock (navigation start
// to first draw), the longest API request, the renderer's busy time, and
// the CPU time Chromium and weft used (from /proc), which a loaded machine
// does not inflate.
//
// graph_100x1h: 100 series over one hour at 15 s (240 points each) on the
// metrics page. heatmap_64x6h: the workload page of a run on 64 GPUs (8
// nodes × 8) over six hours at 15 s: the context lookup, then 720 buckets
// per GPU and the outlier marks (beside the run's alerts and traces).
// trace_1000spans: the trace view of a trace of 1,000 spans over 8
// services, until its waterfall has all its rows.
func BenchmarkUI(b *testing.B) {
	chromiumPath(b)
	weft, base := startWeft(b, "weft")
	loadBenchData(b, base, time.Now())
	traceID := loadBenchTrace(b, base, 1000)
	br := newBrowser(b)
	type bcase struct{ name, url, drawn, at string }
	cases := []bcase{
		{"graph_100x1h", base + "/#/metrics?from=now-1h&to=now&q=bench_requests",
			`document.querySelector('[data-testid=graph][data-state=drawn][data-series="100"]')`,
			`document.querySelector('[data-testid=graph] [data-testid=plot]').dataset.drawnAt`},
		{"heatmap_64x6h", base + "/#/workload/run_id/bench64?from=now-6h&to=now",
			`document.querySelector('[data-testid=heatmap][data-rows="64"] canvas[data-state=drawn]')`,
			`document.querySelector('[data-testid=heatmap] canvas').dataset.drawnAt`},
		{"trace_1000spans", base + "/#/traces/" + traceID,
			`document.querySelector('[data-testid=waterfall][data-rows="1000"][data-drawn-at]')`,
			`document.querySelector('[data-testid=waterfall]').dataset.drawnAt`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) { benchDraw(b, br, weft, c.url, c.drawn, c.at, false) })
	}
	// The same views reached inside the app (a pivot click: the hash
	// changes in a loaded page), from the status page.
	for _, c := range cases {
		b.Run(c.name+"_in_app", func(b *testing.B) { benchDraw(b, br, weft, c.url, c.drawn, c.at, true) })
	}
}

// benchDraw times one view b.N times; see BenchmarkUI. With inApp the
// view is reached by a hash change in the loaded status page, else by a
// fresh navigation from about:blank.
func benchDraw(b *testing.B, br *uiBrowser, weft *process, url, drawn, at string, inApp bool) {
	var (
		total                                     time.Duration
		inPage, api, busy, browserCPU, weftCPU, n float64
	)
	browserPID := chromedp.FromContext(br.ctx).Browser.Process().Pid
	base, hash, _ := strings.Cut(url, "#")
	for b.Loop() {
		if inApp {
			br.do(b, chromedp.Navigate(base+"#/status"))
			br.waitJS(b, `document.querySelector('[data-testid=buildinfo]')`)
		} else {
			br.do(b, chromedp.Navigate("about:blank"))
		}
		busy0 := mainThreadSeconds(b, br)
		bc0, wc0 := treeCPUSeconds(browserPID), treeCPUSeconds(weft.cmd.Process.Pid)
		start := time.Now()
		navStart := 0.0
		if inApp {
			navStart = eval[float64](b, br, `(performance.clearResourceTimings(), location.hash = `+strconv.Quote("#"+hash)+`, performance.now())`)
		} else {
			br.do(b, chromedp.Navigate(url))
		}
		br.waitJS(b, drawn)
		total += time.Since(start)
		busy += mainThreadSeconds(b, br) - busy0
		browserCPU += treeCPUSeconds(browserPID) - bc0
		weftCPU += treeCPUSeconds(weft.cmd.Process.Pid) - wc0
		// The page's own clock: navigation (or hash change) to the first
		// draw, and the longest API request (they overlap).
		inPage += eval[float64](b, br, "Number("+at+")") - navStart
		api += eval[float64](b, br, `Math.max(0, ...performance.getEntriesByType('resource').filter(e => /\/(api|loki|prometheus)\//.test(e.name)).map(e => e.duration))`)
		n++
	}
	b.ReportMetric(float64(total.Milliseconds())/n, "ms/drawn")
	b.ReportMetric(inPage/n, "page-ms/drawn")
	b.ReportMetric(api/n, "max-api-ms")
	b.ReportMetric(1e3*busy/n, "main-thread-ms")
	// CPU time used, which the machine's load does not inflate: all of
	// Chromium's processes, and weft's (the API).
	b.ReportMetric(1e3*browserCPU/n, "browser-cpu-ms")
	b.ReportMetric(1e3*weftCPU/n, "weft-cpu-ms")
	br.noConsoleErrors(b)
}

package e2e

import (
	"context"
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
// graph_100x1h: 100 series over one hour at 15 s (240 points each) on the
// metrics page. heatmap_64x6h: the workload page of a run on 64 GPUs (8
// nodes × 8) over six hours at 15 s: the context lookup, then 720 buckets
// per GPU and the outlier marks.
func BenchmarkUI(b *testing.B) {
	chromiumPath(b)
	_, base := startWeft(b, "weft")
	loadBenchData(b, base, time.Now())
	br := newBrowser(b)
	cases := []struct{ name, url, drawn, at string }{
		{"graph_100x1h", base + "/#/metrics?from=now-1h&to=now&q=bench_requests",
			`document.querySelector('[data-testid=graph][data-state=drawn][data-series="100"]')`,
			`document.querySelector('[data-testid=graph] [data-testid=plot]').dataset.drawnAt`},
		{"heatmap_64x6h", base + "/#/workload/run_id/bench64?from=now-6h&to=now",
			`document.querySelector('[data-testid=heatmap][data-rows="64"] canvas[data-state=drawn]')`,
			`document.querySelector('[data-testid=heatmap] canvas').dataset.drawnAt`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			var inPage, api, busy float64
			n := 0
			for b.Loop() {
				br.do(b, chromedp.Navigate("about:blank"))
				busy0 := mainThreadSeconds(b, br)
				start := time.Now()
				br.do(b, chromedp.Navigate(c.url))
				br.waitJS(b, c.drawn)
				total += time.Since(start)
				busy += mainThreadSeconds(b, br) - busy0
				// The page's own clock: navigation start to the first draw,
				// and the API requests' time (the longest, as they overlap).
				inPage += eval[float64](b, br, "Number("+c.at+")")
				api += eval[float64](b, br, `Math.max(0, ...performance.getEntriesByType('resource').filter(e => /api\/v1\//.test(e.name)).map(e => e.duration))`)
				n++
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms/drawn")
			b.ReportMetric(inPage/float64(n), "page-ms/drawn")
			b.ReportMetric(api/float64(n), "max-api-ms")
			b.ReportMetric(1e3*busy/float64(n), "main-thread-ms")
			br.noConsoleErrors(b)
		})
	}
}

package e2e

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

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
	cases := []struct{ name, url, drawn string }{
		{"graph_100x1h", base + "/#/metrics?ex=0&from=now-1h&to=now&q=bench_requests",
			`document.querySelector('[data-testid=graph][data-state=drawn][data-series="100"]')`},
		{"heatmap_64x6h", base + "/#/workload/run_id/bench64?from=now-6h&to=now",
			`document.querySelector('[data-testid=heatmap][data-rows="64"] canvas[data-state=drawn]')`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			n := 0
			for b.Loop() {
				br.do(b, chromedp.Navigate("about:blank"))
				start := time.Now()
				br.do(b, chromedp.Navigate(c.url))
				br.waitJS(b, c.drawn)
				total += time.Since(start)
				n++
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms/drawn")
			br.noConsoleErrors(b)
		})
	}
}

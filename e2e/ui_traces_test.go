package e2e

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUITracesAndAlerts drives the traces, alerts and workload pages in
// headless Chromium against the real weft binary, loaded with the training
// run (remote write, Loki push), the trace of its failed step (OTLP/HTTP),
// gateway traces from telemetrygen (OTLP/gRPC), an OpenTelemetry SDK
// program's trace and log line, and rule files evaluated by weft's ruler:
//
//   - the alerts page lists the firing and pending alerts with their
//     labels and annotations, the failing group with its error, and links
//     each alert to its query and its workload;
//   - the run's workload page lists its alerts and its trace;
//   - a typed TraceQL query, and one built with the tag picker, list the
//     expected traces;
//   - the trace view draws the waterfall in tree order with the error
//     marked, opens span details with attributes and context pivots, and
//     links to the trace's logs (the run's NCCL error line) and workload;
//   - a log line's trace link opens the trace;
//   - an SDK span links to its own log line and its span metrics.
//
// Screenshots of each page are written (see screenshotDir).
func TestUITracesAndAlerts(t *testing.T) {
	chromiumPath(t)
	w := startTraceWeft(t, "weft", filepath.Join(t.TempDir(), "data"), uiRuleFlags(t)...)
	_, last := loadTrainingRun(t, w.base, time.Now())
	loadTrainingTrace(t, w.httpAddr, last.Add(-10*time.Minute))
	loadGatewayTraces(t, w.grpcAddr)
	otelTrace := runOtelApp(t, w.httpAddr, "completions")
	b := newBrowser(t)
	shots := screenshotDir(t)
	t.Logf("screenshots in %s", shots)
	faulty := uiFaultyHost + " gpu " + uiFaultyGPU

	t.Run("alerts page: alerts, rules, errors", func(t *testing.T) {
		b.do(t, chromedp.Navigate(w.base+"/#/alerts"))
		// The ruler evaluates every second; wait for all three alerts.
		b.waitJS(t, `document.querySelectorAll('[data-testid=alert-row]').length === 3`)
		// Firing before pending; the two critical firing alerts in the
		// order they became active (newest first).
		got := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=alert-row]')].map(e => e.dataset.alert + ':' + e.dataset.state)`)
		firing := []string{got[0], got[1]}
		slices.Sort(firing)
		if firing[0] != "GPUUtilLow:firing" || firing[1] != "NCCLWatchdogTimeout:firing" || got[2] != "GPUHot:pending" {
			t.Fatalf("alerts %q, want GPUUtilLow and NCCLWatchdogTimeout firing, then GPUHot pending", got)
		}
		low := eval[string](t, b, `document.querySelector('[data-testid=alert-row][data-alert=GPUUtilLow]').innerText`)
		for _, s := range []string{"GPU " + uiFaultyGPU + " on " + uiFaultyHost + " at 3", `run_id="r42"`, `Hostname="node-b"`, "critical", "active since", "runbook_url"} {
			if !strings.Contains(low, s) {
				t.Errorf("GPUUtilLow row lacks %q: %q", s, low)
			}
		}
		// The groups: the failing one shows its error, the LogQL one its language.
		b.waitJS(t, `document.querySelector('[data-testid=rule-group][data-group=limited][data-health=err] [data-testid=rule-error]')`)
		if e := eval[string](t, b, `document.querySelector('[data-testid=rule-error]').innerText`); !strings.Contains(e, "exceeded limit of 1") {
			t.Errorf("rule error %q", e)
		}
		groups := eval[string](t, b, `document.querySelector('[data-testid=rule-groups]').innerText`)
		for _, s := range []string{"training-logs", "LogQL", "run:gpu_util:avg", "evaluated", "limit 1"} {
			if !strings.Contains(groups, s) {
				t.Errorf("rule groups lack %q", s)
			}
		}
		if n := eval[int](t, b, `document.querySelectorAll('[data-testid=rule-row]').length`); n != 5 {
			t.Errorf("%d rules listed, want 5", n)
		}
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "alerts.png")

		// Filters: by state, by label matchers (in the URL).
		b.do(t, chromedp.Click(`button[data-state=pending]`))
		b.waitJS(t, `location.hash.includes('state=pending') && document.querySelectorAll('[data-testid=alert-row]').length === 1`)
		b.do(t, chromedp.Navigate(w.base+"/#/alerts?match="+url.QueryEscape(`{alertname=~"GPU.*", severity="critical"}`)))
		b.waitJS(t, `[...document.querySelectorAll('[data-testid=alert-row]')].map(e => e.dataset.alert).join() === 'GPUUtilLow'`)

		// The query behind the alert draws its graph on the metrics page.
		b.do(t, chromedp.Click(`[data-testid=alert-row] a[data-link=query]`))
		b.waitJS(t, `location.hash.startsWith('#/metrics') && document.querySelector('[data-testid=graph][data-state=drawn][data-series="1"]')`)
		b.noConsoleErrors(t)

		// The LogQL alert's query opens the logs page's graph; its workload
		// link the run's page.
		b.do(t, chromedp.Navigate(w.base+"/#/alerts?state=firing&match="+url.QueryEscape(`{alertname="NCCLWatchdogTimeout"}`)))
		b.waitJS(t, `document.querySelectorAll('[data-testid=alert-row]').length === 1`)
		if h := eval[string](t, b, `document.querySelector('[data-testid=alert-row] a[data-link=query]').getAttribute('href')`); !strings.HasPrefix(h, "#/logs?q=") {
			t.Errorf("LogQL alert's query link %q", h)
		}
		b.do(t, chromedp.Click(`[data-testid=alert-row] a[data-link=query]`))
		b.waitJS(t, `location.hash.startsWith('#/logs') && document.querySelector('[data-testid=graph][data-state=drawn]')`)
		b.do(t, chromedp.NavigateBack())
		b.waitJS(t, `document.querySelector('[data-testid=alert-row] a[data-link=workload]')`)
		b.do(t, chromedp.Click(`[data-testid=alert-row] a[data-link=workload]`))
		b.waitJS(t, `document.querySelector('[data-testid=workload-page][data-key=run_id][data-value=r42]')`)
		b.noConsoleErrors(t)
	})

	t.Run("workload page: its alerts and traces", func(t *testing.T) {
		b.do(t, chromedp.Navigate(w.base+"/#/workload/run_id/r42"))
		b.waitJS(t, `document.querySelector('[data-testid=workload-alerts][data-firing="2"][data-count="3"]')`)
		b.waitJS(t, `document.querySelector('[data-testid=workload-trace-list] [data-testid=trace-row]')`)
		rows := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=workload-trace-list] [data-testid=trace-row]')].map(e => e.dataset.trace)`)
		if len(rows) != 1 || rows[0] != uiTraceID {
			t.Fatalf("workload traces %q, want only %s", rows, uiTraceID)
		}
		b.waitJS(t, `document.querySelector('[data-testid=heatmap] canvas[data-state=drawn]')`)
		if m := eval[string](t, b, `[...document.querySelectorAll('[data-testid=gpu-row][data-outlier=true]')].map(e => e.dataset.gpu).join()`); m != faulty {
			t.Errorf("heatmap marks %q", m)
		}
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "workload-alerts-traces.png")
		// The SDK program's run has its trace, no alerts.
		b.do(t, chromedp.Navigate(w.base+"/#/workload/run_id/r-otel"))
		b.waitJS(t, fmt.Sprintf(`document.querySelector('[data-testid=workload-trace-list] [data-trace=%q]')`, otelTrace))
		b.waitJS(t, `document.querySelector('[data-testid=workload-alerts][data-count="0"]')`)
		b.noConsoleErrors(t)
	})

	t.Run("trace search: typed TraceQL and the tag picker", func(t *testing.T) {
		b.do(t, chromedp.Navigate(w.base+"/#/traces"))
		b.typeQuery(t, "traceql-editor", `{ resource.service.name = "`+uiGatewaySvc+`" }`)
		b.do(t, chromedp.Click(`[data-testid=run]`))
		b.waitJS(t, `document.querySelector('[data-testid=trace-list]')`)
		n := eval[int](t, b, `document.querySelectorAll('[data-testid=trace-row]').length`)
		if n != uiGatewayTraces {
			t.Fatalf("%d traces listed, want %d", n, uiGatewayTraces)
		}
		txt := eval[string](t, b, `document.querySelector('[data-testid=trace-list]').innerText`)
		if c := strings.Count(txt, uiGatewaySvc+": lets-go"); c != uiGatewayTraces {
			t.Errorf("%d rows name the root %s: lets-go", c, uiGatewaySvc)
		}
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "traces-search.png")
		// A gateway trace: a root and its children.
		b.do(t, chromedp.Click(`[data-testid=trace-row] a[data-trace]`))
		b.waitJS(t, fmt.Sprintf(`document.querySelectorAll('[data-testid=span-row]').length === %d`, 1+uiGatewayKids))
		if d := eval[string](t, b, `[...document.querySelectorAll('[data-testid=span-row]')].map(e => e.dataset.depth).join()`); d != "0,1,1" {
			t.Errorf("gateway trace depths %q", d)
		}

		// The tag picker: status = error finds the failed step alone.
		b.do(t, chromedp.Navigate(w.base+"/#/traces"))
		b.do(t, chromedp.Click(`[data-testid=tag-picker]`))
		b.waitJS(t, `[...document.querySelectorAll('[data-testid=tag-picker-open] option')].some(o => o.value === 'intrinsic:status')`)
		eval[bool](t, b, `(() => { const s = document.querySelector('select[aria-label=tag]'); s.value = 'intrinsic:status'; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)
		b.waitJS(t, `[...document.querySelectorAll('[data-testid=tag-value] option')].some(o => o.textContent === 'error')`)
		eval[bool](t, b, `(() => { const s = document.querySelector('[data-testid=tag-value]'); s.value = [...s.options].find(o => o.textContent === 'error').value; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)
		b.waitJS(t, `document.querySelector('[data-testid=traceql-editor]').innerText.includes('status = error')`)
		b.do(t, chromedp.Click(`[data-testid=run]`))
		b.waitJS(t, `location.hash.includes('status') && document.querySelector('[data-testid=trace-list]')`)
		got := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=trace-row]')].map(e => e.dataset.trace)`)
		if len(got) != 1 || got[0] != uiTraceID {
			t.Errorf("{ status = error } lists %q, want only %s", got, uiTraceID)
		}
		b.noConsoleErrors(t)
	})

	t.Run("trace view: waterfall, span details, links", func(t *testing.T) {
		b.do(t, chromedp.Navigate(w.base+"/#/traces/"+uiTraceID))
		b.waitJS(t, fmt.Sprintf(`document.querySelectorAll('[data-testid=span-row]').length === %d`, len(uiTraceSpans)))
		rows := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=span-row]')].map(e => e.dataset.service + '/' + e.querySelector('.wf-op').innerText + '/' + e.dataset.depth)`)
		for i, s := range uiTraceSpans {
			if want := fmt.Sprintf("%s/%s/%d", s.service, s.name, s.depth); rows[i] != want {
				t.Errorf("row %d is %q, want %q (all: %q)", i, rows[i], want, rows)
			}
		}
		if e := eval[string](t, b, `[...document.querySelectorAll('[data-testid=span-row][data-status=error] .wf-op')].map(e => e.innerText).join()`); e != uiAllreduceSpan {
			t.Errorf("error spans %q, want %s", e, uiAllreduceSpan)
		}
		facts := eval[string](t, b, `document.querySelector('[data-testid=trace-facts]').innerText`)
		for _, s := range []string{"2.6s", "6", "1 error"} {
			if !strings.Contains(facts, s) {
				t.Errorf("trace facts %q lack %q", facts, s)
			}
		}
		// The allreduce's bar spans the last 800 of 2600 ms.
		left := eval[float64](t, b, `parseFloat(document.querySelectorAll('[data-testid=span-row]')[5].querySelector('.wf-bar').style.left)`)
		if left < 69 || left > 70 {
			t.Errorf("allreduce bar starts at %.1f%%, want 69.2%%", left)
		}
		// Fold the data loading: its child disappears.
		eval[bool](t, b, `([...document.querySelectorAll('[data-testid=span-row]')][1].querySelector('[data-testid=span-toggle]').click(), true)`)
		b.waitJS(t, fmt.Sprintf(`document.querySelectorAll('[data-testid=span-row]').length === %d`, len(uiTraceSpans)-1))
		eval[bool](t, b, `([...document.querySelectorAll('[data-testid=span-row]')][1].querySelector('[data-testid=span-toggle]').click(), true)`)
		b.waitJS(t, fmt.Sprintf(`document.querySelectorAll('[data-testid=span-row]').length === %d`, len(uiTraceSpans)))

		// Select the failed allreduce: status, attributes, events, context.
		eval[bool](t, b, `([...document.querySelectorAll('[data-testid=span-row]')].find(e => e.querySelector('.wf-op').innerText === 'allreduce').click(), true)`)
		b.waitJS(t, `document.querySelector('[data-testid=span-details]')`)
		if h := eval[string](t, b, `location.hash`); !strings.Contains(h, "span=000000000000a005") {
			t.Errorf("URL %q does not hold the selected span", h)
		}
		det := eval[string](t, b, `document.querySelector('[data-testid=span-details]').innerText`)
		for _, s := range []string{"error: " + uiAllreduceMsg, "nccl.bytes", "268435456", "nccl.op", "watchdog timeout", "800ms", "client"} {
			if !strings.Contains(det, s) {
				t.Errorf("span details lack %q: %q", s, det)
			}
		}
		ctx := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=span-context] a.pivot')].map(e => e.innerText)`)
		if strings.Join(ctx, " ") != `run_id="r42" host="node-b" rank="5"` {
			t.Errorf("span context pivots %q", ctx)
		}
		spanLogs := eval[string](t, b, `document.querySelector('[data-testid=span-details] a[data-link=span-logs]').getAttribute('href')`)
		if !strings.Contains(spanLogs, "span_id") || !strings.Contains(spanLogs, uiTraceID) {
			t.Errorf("span logs link %q", spanLogs)
		}
		b.noConsoleErrors(t)
		b.screenshot(t, shots, "trace.png")
		b.viewShot(t, shots, "trace-top.png", 1200, 640) // docs/ui-trace.png

		// The trace's logs: the run's NCCL error line, pushed to Loki with
		// this trace_id.
		b.do(t, chromedp.Click(`[data-testid=span-details] a[data-link=trace-logs]`))
		b.waitJS(t, `location.hash.startsWith('#/logs') && document.querySelector('[data-testid=log-lines]')`)
		lines := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=log-line] .text')].map(e => e.innerText)`)
		if len(lines) != 1 || !strings.Contains(lines[0], uiErrorLine) {
			t.Errorf("logs of the trace: %q, want the NCCL error", lines)
		}
		// And back along the line's own link.
		b.do(t, chromedp.Click(`[data-testid=log-line] a.trace`))
		b.waitJS(t, fmt.Sprintf(`document.querySelector('[data-testid=trace-view][data-trace=%q][data-spans="%d"]')`, uiTraceID, len(uiTraceSpans)))
		// The span's workload: the run's page.
		eval[bool](t, b, `([...document.querySelectorAll('[data-testid=span-row]')][0].click(), true)`)
		b.waitJS(t, `document.querySelector('[data-testid=span-details] a[data-link=workload]')`)
		b.do(t, chromedp.Click(`[data-testid=span-details] a[data-link=workload]`))
		b.waitJS(t, `document.querySelector('[data-testid=workload-page][data-key=run_id][data-value=r42]')`)
		b.noConsoleErrors(t)
	})

	t.Run("SDK span: its log line and span metrics", func(t *testing.T) {
		b.do(t, chromedp.Navigate(w.base+"/#/traces/"+otelTrace))
		// The view of this trace (not the one the page showed before)
		// with its span named forward rendered; then click that span.
		forward := `[...document.querySelectorAll('[data-testid=span-row]')].find(e => e.querySelector('.wf-op')?.innerText.trim() === 'forward')`
		b.waitJS(t, fmt.Sprintf(`document.querySelector('[data-testid=trace-view][data-trace=%q][data-spans="2"]') && %s`, otelTrace, forward))
		eval[bool](t, b, `(`+forward+`.click(), true)`)
		b.waitJS(t, `document.querySelector('[data-testid=span-details] a[data-link=span-logs]')`)
		b.do(t, chromedp.Click(`[data-testid=span-details] a[data-link=span-logs]`))
		b.waitJS(t, `location.hash.startsWith('#/logs') && document.querySelector('[data-testid=log-lines]')`)
		lines := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=log-line] .text')].map(e => e.innerText)`)
		if len(lines) != 1 || lines[0] != "kv cache nearly full" {
			t.Errorf("logs of the span: %q", lines)
		}
		b.do(t, chromedp.NavigateBack())
		b.waitJS(t, `document.querySelector('[data-testid=span-details] a[data-link=span-metrics]')`)
		b.do(t, chromedp.Click(`[data-testid=span-details] a[data-link=span-metrics]`))
		// Span metrics are written every 15 s: the rate graph has its
		// series once they are.
		deadline := time.Now().Add(45 * time.Second)
		for eval[int](t, b, `document.querySelectorAll('[data-testid=graph][data-state=drawn]').length`) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no span-metrics graph: %s", b.pageText(t))
			}
			time.Sleep(2 * time.Second)
			b.do(t, chromedp.Reload())
			b.waitJS(t, `document.querySelector('[data-testid=graph], .graph.empty, .error')`)
		}
		if n := eval[int](t, b, `document.querySelectorAll('[data-testid=series-row]').length`); n < 1 {
			t.Errorf("span-metrics graph has %d series", n)
		}
		b.noConsoleErrors(t)
	})
}

// noConsoleErrorsBut is noConsoleErrors, except for the one error the
// browser itself logs for an answer the page expects: Chromium logs every
// 4xx fetch (the Tempo API's 404 for a trace weft does not hold, on which
// Grafana relies; the 401 of a multi-tenant weft before a tenant is set).
// Only a status code for a URL containing path is allowed.
func (b *uiBrowser) noConsoleErrorsBut(tb testing.TB, path, code string) {
	tb.Helper()
	b.mu.Lock()
	kept := b.msgs[:0]
	for _, m := range b.msgs {
		if m.Type == chromedp.ConsoleError && strings.Contains(m.URL, path) && strings.Contains(m.String(), code) {
			continue
		}
		kept = append(kept, m)
	}
	b.msgs = kept
	b.mu.Unlock()
	b.noConsoleErrors(tb)
}

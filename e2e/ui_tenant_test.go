package e2e

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUITenant: with -multi-tenant the UI names its tenant on every request.
// Two tenants push a line each under the same labels; the logs page first
// answers that a tenant is needed and shows the tenant picker, and once
// team-a is set it lists team-a's line and never team-b's, in the query
// and in the live tail (whose WebSocket names the tenant in its URL).
func TestUITenant(t *testing.T) {
	chromiumPath(t)
	addr := freeAddr(t)
	p := startProcess(t, "weft-tenants", buildWeft(t),
		"-data-dir", filepath.Join(t.TempDir(), "data"),
		"-http-addr", addr,
		"-otlp-grpc-addr", freeAddr(t),
		"-otlp-http-addr", freeAddr(t),
		"-log-level", "warn",
		"-multi-tenant",
	)
	base := "http://" + addr
	waitReady(t, p, base+"/-/ready")
	now := time.Now()
	for _, tenant := range []string{"team-a", "team-b"} {
		body, err := json.Marshal(map[string]any{"streams": []map[string]any{{
			"stream": map[string]string{"app": "trainer"},
			"values": [][]string{{strconv.FormatInt(now.UnixNano(), 10), "secret of " + tenant}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		post(t, base+"/loki/api/v1/push", "application/json", body, map[string]string{"X-Scope-OrgID": tenant})
	}
	b := newBrowser(t)
	q := url.Values{"q": {`{app="trainer"}`}, "from": {"now-10m"}, "to": {"now"}}
	b.do(t, chromedp.Navigate(base+"/#/logs?"+q.Encode()))
	b.waitJS(t, `document.querySelector('[data-testid=tenant-picker]') && document.querySelector('.error')`)
	if msg := eval[string](t, b, `document.querySelector('.error').innerText`); !strings.Contains(msg, "X-Scope-OrgID") || !strings.Contains(msg, "top bar") {
		t.Errorf("without a tenant the page says %q", msg)
	}
	// Typed as a person would: the input event is what the picker reads.
	eval[bool](t, b, `(() => { const i = document.querySelector('[data-testid=tenant-input]'); i.value = 'team-a'; i.dispatchEvent(new Event('input', {bubbles: true})); return true; })()`)
	b.do(t, chromedp.Click(`[data-testid=tenant-picker] button[type=submit]`))
	b.waitJS(t, `document.querySelectorAll('[data-testid=log-line]').length > 0`)
	lines := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=log-line] .text')].map(e => e.innerText)`)
	if len(lines) != 1 || lines[0] != "secret of team-a" {
		t.Fatalf("team-a sees %q, want only its own line", lines)
	}
	if v := eval[string](t, b, `document.querySelector('[data-testid=tenant-input]').value`); v != "team-a" {
		t.Errorf("the picker shows %q after the reload", v)
	}
	// The live tail too: a WebSocket cannot carry the header, so the UI
	// names the tenant in the tail URL, and team-a sees only its lines.
	b.do(t, chromedp.Navigate(base+"/#/logs?live=1&q="+url.QueryEscape(`{app="trainer"}`)))
	b.waitJS(t, `document.querySelector('.tail-status.live')`)
	for _, tenant := range []string{"team-b", "team-a"} {
		body, err := json.Marshal(map[string]any{"streams": []map[string]any{{
			"stream": map[string]string{"app": "trainer"},
			"values": [][]string{{strconv.FormatInt(time.Now().UnixNano(), 10), "tailed for " + tenant}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		post(t, base+"/loki/api/v1/push", "application/json", body, map[string]string{"X-Scope-OrgID": tenant})
	}
	b.waitJS(t, `[...document.querySelectorAll('[data-testid=tail] .text')].some(e => e.innerText === 'tailed for team-a')`)
	tailed := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=tail] .text')].map(e => e.innerText)`)
	for _, l := range tailed {
		if strings.Contains(l, "team-b") {
			t.Fatalf("team-a's live tail shows %q (all: %q)", l, tailed)
		}
	}
	b.noConsoleErrorsBut(t, "/loki/api/v1/", "401")
}

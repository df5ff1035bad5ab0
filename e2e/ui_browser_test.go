package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// Bounds of the browser tests' waits: generous for a loaded 2-core
// machine; none of them is an assertion about speed.
const (
	uiWait = 30 * time.Second
)

// chromiumPath finds the browser the UI tests drive: $WEFT_CHROMIUM, else
// Debian's. `make test` installs it (web/scripts/install-chromium.sh); a
// local `go test` without it skips, but CI (CI set) fails instead.
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	for _, p := range []string{os.Getenv("WEFT_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	msg := "no Chromium for the UI tests: run web/scripts/install-chromium.sh (make test does) or set WEFT_CHROMIUM"
	if os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

// uiBrowser is one headless Chromium with one tab, whose console messages
// are collected so each step can assert there were no errors.
type uiBrowser struct {
	ctx  context.Context
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func newBrowser(tb testing.TB) *uiBrowser {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(tb)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &uiBrowser{ctx: ctx}
	// The first Run starts the browser; its context must have no timeout.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		tb.Fatalf("start chromium: %v", err)
	}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.msgs = append(b.msgs, m)
			b.mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		cancel()
		cancelAlloc()
		<-done
	})
	return b
}

// do runs steps within uiWait.
func (b *uiBrowser) do(tb testing.TB, steps ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, uiWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.Fatalf("browser: %v\nconsole: %v\npage: %s", err, b.console(), b.pageText(tb))
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](tb testing.TB, b *uiBrowser, js string) T {
	tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, uiWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		tb.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitJS waits until a JavaScript expression is truthy. A poll that loses
// its page to a navigation (the old document's context is gone) is retried.
func (b *uiBrowser) waitJS(tb testing.TB, js string) {
	tb.Helper()
	deadline := time.Now().Add(uiWait)
	for {
		left := time.Until(deadline)
		ctx, cancel := context.WithTimeout(b.ctx, left+time.Second)
		_, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+js+")", chromedp.WithPollingTimeout(left)))
		cancel()
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "Cannot find context") && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		tb.Fatalf("waiting for %s: %v\nconsole: %v\npage: %s", js, err, b.console(), b.pageText(tb))
	}
}

func (b *uiBrowser) pageText(tb testing.TB) string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ""`))
	if err != nil {
		return err.Error()
	}
	return s
}

func (b *uiBrowser) console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.msgs))
	for _, m := range b.msgs {
		out = append(out, m.String())
	}
	return out
}

// noConsoleErrors fails on any error or exception the page logged since the
// last call, then forgets the messages.
func (b *uiBrowser) noConsoleErrors(tb testing.TB) {
	tb.Helper()
	b.mu.Lock()
	msgs := b.msgs
	b.msgs = nil
	b.mu.Unlock()
	for _, m := range msgs {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			tb.Errorf("console %s at %s:%d", m, m.URL, m.Line)
		}
	}
}

// screenshot writes a full-page PNG under the screenshot folder:
// $WEFT_UI_SCREENSHOTS, else the test's artifact directory (kept with
// `go test -artifacts`).
func (b *uiBrowser) screenshot(tb testing.TB, dir, name string) {
	tb.Helper()
	b.shoot(tb, dir, name, chromedp.FullScreenshot(100))
}

// viewShot writes a PNG of the top of the page in a w × h window (small
// enough for the docs), then restores the window.
func (b *uiBrowser) viewShot(tb testing.TB, dir, name string, w, h int64) {
	tb.Helper()
	b.do(tb, chromedp.EmulateViewport(w, h))
	time.Sleep(300 * time.Millisecond) // the graphs redraw at the new width
	b.shoot(tb, dir, name, chromedp.CaptureScreenshot())
	b.do(tb, chromedp.EmulateReset())
}

func (b *uiBrowser) shoot(tb testing.TB, dir, name string, shot chromedp.Action[[]byte]) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, uiWait)
	defer cancel()
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		tb.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("screenshot %s (%d bytes)", p, len(png))
}

func screenshotDir(t *testing.T) string {
	if d := os.Getenv("WEFT_UI_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.ArtifactDir()
}

// typeQuery types text into a page's CodeMirror editor with real key
// events, and checks the editor holds exactly it (auto-closed brackets and
// quotes are typed over). The editor is focused from JavaScript: chromedp's
// node queries wait on a DOM that CodeMirror keeps changing.
func (b *uiBrowser) typeQuery(tb testing.TB, editor, text string) {
	tb.Helper()
	sel := fmt.Sprintf(`[data-testid=%q] .cm-content`, editor)
	b.waitJS(tb, fmt.Sprintf(`document.querySelector(%q)`, sel))
	eval[bool](tb, b, fmt.Sprintf(`(document.querySelector(%q).focus(), true)`, sel))
	b.waitJS(tb, fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, sel))
	time.Sleep(100 * time.Millisecond) // the editor reads its focus on the next frame
	b.do(tb, chromedp.KeyEvent(text))
	got := eval[string](tb, b, fmt.Sprintf(`document.querySelector(%q).innerText`, sel))
	if strings.TrimSpace(got) != text {
		tb.Fatalf("editor holds %q, want %q", got, text)
	}
	// Close the completion popup, so that it covers nothing.
	b.do(tb, chromedp.KeyEvent(kb.Escape))
}

// canvasInk counts the coloured (not grey or white) pixels of the first
// canvas under sel: a graph with drawn series has many.
func canvasInk(tb testing.TB, b *uiBrowser, sel string) int {
	tb.Helper()
	return eval[int](tb, b, fmt.Sprintf(`(() => {
		const c = document.querySelector(%q);
		if (!c) return -1;
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4) {
			const r = d[i], g = d[i+1], b = d[i+2], a = d[i+3];
			if (a > 0 && Math.max(r, g, b) - Math.min(r, g, b) > 40) n++;
		}
		return n;
	})()`, sel))
}

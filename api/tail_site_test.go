package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/weftdb/weft/api"
)

// dialTailAs opens a tail WebSocket on srv with the headers a browser (or
// another client) would send; it returns the connection, or the refusal's
// status and body.
func dialTailAs(t *testing.T, srv string, params url.Values, hdr http.Header) (*websocket.Conn, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(srv, "http") + "/loki/api/v1/tail?" + params.Encode()
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr})
	if err == nil {
		t.Cleanup(func() { c.CloseNow() })
		return c, http.StatusSwitchingProtocols, ""
	}
	if resp == nil {
		t.Fatalf("dial tail: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return nil, resp.StatusCode, string(b)
}

// TestTailRefusesCrossSite: a WebSocket is not subject to CORS, so a page on
// another site could otherwise tail an operator's logs through the
// browser. A cross-site handshake is refused with the reason; same-site
// pages, non-browser clients (logcli, Grafana's backend) and configured
// trusted origins connect.
func TestTailRefusesCrossSite(t *testing.T) {
	srv, _, _ := newSubstrateServer(t, func(o *api.Options) { o.TrustedOrigins = []string{"https://grafana.example"} })
	q := url.Values{"query": {`{app="a"}`}}
	for _, c := range []struct {
		name   string
		hdr    http.Header
		wantOK bool
	}{
		{"cross-site browser", http.Header{"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, false},
		{"older browser, other origin", http.Header{"Origin": {"https://evil.example"}}, false},
		{"same-origin browser", http.Header{"Origin": {srv.URL}, "Sec-Fetch-Site": {"same-origin"}}, true},
		{"older browser, same origin", http.Header{"Origin": {srv.URL}}, true},
		{"non-browser client", nil, true},
		{"trusted origin", http.Header{"Origin": {"https://grafana.example"}, "Sec-Fetch-Site": {"cross-site"}}, true},
	} {
		_, code, body := dialTailAs(t, srv.URL, q, c.hdr)
		switch {
		case c.wantOK && code != http.StatusSwitchingProtocols:
			t.Errorf("%s: %d %s, want the WebSocket", c.name, code, body)
		case !c.wantOK && (code != http.StatusForbidden || !strings.Contains(body, "cross-site request refused") || !strings.Contains(body, "WebSocket")):
			t.Errorf("%s: %d %q, want 403 with the reason", c.name, code, body)
		}
	}
}

// TestTailTenantParameter: a browser cannot put X-Scope-OrgID on a
// WebSocket, so the tail handshake may name the tenant in a query parameter
// of the same name (the UI does); it sees only that tenant's lines. Without
// either, multi-tenancy answers 401; a plain query may not use the
// parameter.
func TestTailTenantParameter(t *testing.T) {
	srv, _ := newTenantServer(t, api.TenancyOptions{Enabled: true})
	now := time.Now()
	for _, org := range []string{"team-a", "team-b"} {
		body := `{"streams":[{"stream":{"app":"a"},"values":[["` + itoa(now.UnixNano()) + `","line of ` + org + `"]]}]}`
		if code, b := tenantDo(t, srv, http.MethodPost, "/loki/api/v1/push", org, "application/json", []byte(body)); code != http.StatusNoContent {
			t.Fatalf("push as %s: %d %s", org, code, b)
		}
	}
	q := url.Values{"query": {`{app="a"}`}, "start": {itoa(now.Add(-time.Minute).UnixNano())}}
	if _, code, body := dialTailAs(t, srv.URL, q, nil); code != http.StatusUnauthorized || !strings.Contains(body, "X-Scope-OrgID") {
		t.Fatalf("tail without a tenant: %d %q, want 401", code, body)
	}
	q.Set(api.TenantHeader, "team-a")
	c, code, body := dialTailAs(t, srv.URL, q, nil)
	if c == nil {
		t.Fatalf("tail as team-a by parameter: %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read tail: %v", err)
	}
	var m struct {
		Streams []struct {
			Values [][2]string `json:"values"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("tail message %s: %v", b, err)
	}
	var lines []string
	for _, s := range m.Streams {
		for _, v := range s.Values {
			lines = append(lines, v[1])
		}
	}
	if !slices.Equal(lines, []string{"line of team-a"}) {
		t.Fatalf("team-a's tail: %q, want only its own line", lines)
	}
	// The parameter is the tail's only: a query still needs the header.
	p := url.Values{"query": {`{app="a"}`}, api.TenantHeader: {"team-a"}}
	if code, b := tenantDo(t, srv, http.MethodGet, "/loki/api/v1/query_range?"+p.Encode(), "", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("query_range with the tenant as a parameter: %d %s, want 401", code, b)
	}
}

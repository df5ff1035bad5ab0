package api

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// hijackRecorder is a ResponseRecorder that can be hijacked: the
// connection it hands out has its peer closed already, so a tail that
// completes the handshake ends at its first read or write.
type hijackRecorder struct {
	*httptest.ResponseRecorder
	hijacked bool
}

func (r *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if r.hijacked {
		return nil, nil, errors.New("hijacked twice")
	}
	r.hijacked = true
	server, client := net.Pipe()
	client.Close()
	return server, bufio.NewReadWriter(bufio.NewReader(server), bufio.NewWriter(server)), nil
}

// FuzzLokiTail fuzzes the tail handshake: the query parameters and the
// WebSocket upgrade headers. Whatever they are, the handler answers a 4xx
// with a reason or switches protocols (101), never 5xx, never panics, and
// returns once the client is gone.
func FuzzLokiTail(f *testing.F) {
	h := newLokiFuzzEnv(f)
	for _, s := range [][7]string{
		{`{app="api"}`, "10", "0", "1796038800000000000", "websocket", "Upgrade", "dGhlIHNhbXBsZSBub25jZQ=="},
		{`{app=~".+"} | logfmt | level="error" | line_format "{{.msg}}"`, "", "5", "", "WebSocket", "keep-alive, Upgrade", "AQIDBAUGBwgJCgsMDQ4PEC=="},
		{`count_over_time({app="api"}[1m])`, "-1", "6", "2026-11-30T11:00:00Z", "h2c", "close", ""},
		{`{app="api"`, "abc", "x", "-1e300", "", "", "short"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6], "13")
	}
	f.Fuzz(func(t *testing.T, query, limit, delay, start, upgrade, connection, key, version string) {
		if len(query) > 4096 {
			return
		}
		p := url.Values{"query": {query}, "limit": {limit}, "delay_for": {delay}, "start": {start}}
		req := httptest.NewRequest(http.MethodGet, "/loki/api/v1/tail?"+p.Encode(), nil)
		for k, v := range map[string]string{"Upgrade": upgrade, "Connection": connection, "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": version} {
			if v != "" && !strings.ContainsAny(v, "\r\n\x00") {
				req.Header.Set(k, v)
			}
		}
		rec := &hijackRecorder{ResponseRecorder: httptest.NewRecorder()}
		h.ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusSwitchingProtocols:
			if !rec.hijacked {
				t.Fatal("101 without taking the connection")
			}
		case rec.Code >= 400 && rec.Code < 500:
			if rec.Body.Len() == 0 {
				t.Fatalf("%d without a reason", rec.Code)
			}
		default:
			t.Fatalf("status %d: %.300s", rec.Code, rec.Body)
		}
	})
}

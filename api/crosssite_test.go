package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCrossSiteGuard: what a browser page of another site can make a
// browser send is refused where it would change data; real clients (no
// Sec-Fetch-Site, no Origin, a non-form Content-Type) and read-only form
// POSTs pass.
func TestCrossSiteGuard(t *testing.T) {
	reached := false
	g, err := newCrossSiteGuard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached = true
		w.WriteHeader(http.StatusNoContent)
	}), []string{"https://grafana.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, ct string
		hdr                    map[string]string
		want                   int
	}{
		// What Prometheus, promtail/alloy and telemetrygen send.
		{name: "prometheus remote write", method: "POST", path: "/api/v1/write", ct: "application/x-protobuf", want: 204},
		{name: "remote write 2.0", method: "POST", path: "/api/v1/write", ct: "application/x-protobuf;proto=io.prometheus.write.v2.Request", want: 204},
		{name: "promtail push", method: "POST", path: "/loki/api/v1/push", ct: "application/x-protobuf", want: 204},
		{name: "loki json push", method: "POST", path: "/loki/api/v1/push", ct: "application/json", want: 204},
		{name: "otlp protobuf", method: "POST", path: "/v1/traces", ct: "application/x-protobuf", want: 204},
		{name: "otlp json main port", method: "POST", path: "/otlp/v1/logs", ct: "application/json", want: 204},
		{name: "vm import", method: "POST", path: "/api/v1/import", ct: "application/json", want: 204},
		{name: "vm import by curl --data-binary", method: "POST", path: "/api/v1/import", ct: "application/x-www-form-urlencoded", want: 204},
		{name: "vm import cross-site", method: "POST", path: "/api/v1/import", ct: "text/plain",
			hdr: map[string]string{"Origin": "https://evil.example"}, want: 403},
		// A browser sends these to another site without a preflight.
		{name: "remote write without content type", method: "POST", path: "/api/v1/write", want: 415},
		{name: "loki push text/plain", method: "POST", path: "/loki/api/v1/push", ct: "text/plain", want: 415},
		{name: "loki push form", method: "POST", path: "/loki/api/v1/push", ct: "application/x-www-form-urlencoded", want: 415},
		{name: "otlp multipart", method: "POST", path: "/v1/metrics", ct: "multipart/form-data; boundary=x", want: 415},
		{name: "push text/plain charset", method: "POST", path: "/loki/api/v1/push", ct: "Text/Plain; charset=utf-8", want: 415},
		{name: "cross-site push with a good type", method: "POST", path: "/loki/api/v1/push", ct: "application/json",
			hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 403},
		// Admin and rule endpoints: forms stay (curl --data-urlencode),
		// other sites do not.
		{name: "admin delete by curl form", method: "POST", path: "/api/v1/admin/tsdb/delete_series", ct: "application/x-www-form-urlencoded", want: 204},
		{name: "admin delete no body", method: "PUT", path: "/api/v1/admin/tsdb/delete_series", want: 204},
		{name: "admin delete cross-site form", method: "POST", path: "/api/v1/admin/tsdb/delete_series", ct: "application/x-www-form-urlencoded",
			hdr: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, want: 403},
		{name: "admin delete old browser origin only", method: "POST", path: "/api/v1/admin/tsdb/delete_series",
			hdr: map[string]string{"Origin": "https://evil.example"}, want: 403},
		{name: "admin delete same-site is another origin", method: "POST", path: "/api/v1/admin/tsdb/clean_tombstones",
			hdr: map[string]string{"Sec-Fetch-Site": "same-site"}, want: 403},
		{name: "admin delete same origin", method: "POST", path: "/api/v1/admin/tsdb/delete_series",
			hdr: map[string]string{"Sec-Fetch-Site": "same-origin"}, want: 204},
		{name: "trusted origin", method: "POST", path: "/api/v1/admin/tsdb/delete_series",
			hdr: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://grafana.example.com"}, want: 204},
		{name: "reload cross-site", method: "POST", path: "/-/reload", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 403},
		{name: "loki delete cross-site", method: "DELETE", path: "/loki/api/v1/delete", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 403},
		{name: "unknown endpoint is protected", method: "PATCH", path: "/weft/api/v1/something-new", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 403},
		// Read-only form POSTs keep working from anywhere.
		{name: "cross-site query form", method: "POST", path: "/api/v1/query", ct: "application/x-www-form-urlencoded",
			hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 204},
		{name: "loki query_range form", method: "POST", path: "/loki/api/v1/query_range", ct: "application/x-www-form-urlencoded", want: 204},
		{name: "GET cross-site", method: "GET", path: "/api/v1/labels", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: 204},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached = false
			r := httptest.NewRequest(tc.method, "http://weft.example:9338"+tc.path, strings.NewReader("x"))
			if tc.ct != "" {
				r.Header.Set("Content-Type", tc.ct)
			}
			for k, v := range tc.hdr {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if reached != (tc.want == 204) {
				t.Fatalf("handler reached: %v with status %d", reached, w.Code)
			}
			if tc.want == 415 && !strings.Contains(w.Body.String(), "content type") {
				t.Errorf("415 without the reason: %s", w.Body)
			}
			if tc.want == 403 && !strings.Contains(w.Body.String(), "cross-site") {
				t.Errorf("403 without the reason: %s", w.Body)
			}
		})
	}
}

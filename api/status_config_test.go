package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/weftdb/weft/api"
)

// TestStatusConfigEffective: status/config answers weft's effective
// configuration in Prometheus' envelope, {"yaml": ...}.
func TestStatusConfigEffective(t *testing.T) {
	const doc = "server:\n    http_addr: :9338\n"
	srv, _ := newTestServer(t, func(o *api.Options) { o.ConfigYAML = doc })
	code, body, _ := call(t, srv, http.MethodGet, "/api/v1/status/config", nil)
	var r struct {
		Status string
		Data   struct{ YAML string }
	}
	if err := json.Unmarshal(body, &r); err != nil || code != http.StatusOK || r.Status != "success" || r.Data.YAML != doc {
		t.Fatalf("status/config: %d %s (%v)", code, body, err)
	}
}

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/weftdb/weft/internal/testca"
)

// TestTLSAuthRealClients starts the real weft with a web configuration file
// (TLS, client certificates required, basic auth users) and bearer tokens
// bound to a tenant, then has the real Prometheus remote-write to it over
// mTLS with a token and the pinned telemetrygen export OTLP over gRPC with
// mTLS and an authorization header; what they sent is queryable by an
// admin, and telemetrygen with a wrong token stores nothing.
func TestTLSAuthRealClients(t *testing.T) {
	promBin := peerBinary(t, "prometheus")
	tgBin := peerBinary(t, "telemetrygen")
	dir := t.TempDir()
	ca := testca.New(t, "e2e CA")
	caFile := ca.WriteCA(t, dir, "ca.crt")
	srvCert, srvKey := ca.Issue(t, dir, "weft", true)
	cliCert, cliKey := ca.Issue(t, dir, "client", false)
	hash, err := bcrypt.GenerateFromPassword([]byte("ops-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	webCfg := write("web.yml", fmt.Sprintf(`tls_server_config:
  cert_file: %s
  key_file: %s
  client_ca_file: %s
  client_auth_type: RequireAndVerifyClientCert
basic_auth_users:
  ops: %s
`, srvCert, srvKey, caFile, hash))
	tokenA := write("team-a.token", "team-a-token-0123456789abcdef")
	cfg := write("weft.yml", fmt.Sprintf(`security:
  users:
    ops: {admin: true}
  bearer_tokens:
    - name: team-a
      token_file: %s
      tenant: team-a
`, tokenA))

	addr, grpcAddr := freeAddr(t), freeAddr(t)
	weft := startProcess(t, "weft-tls", buildWeft(t),
		"-data-dir", filepath.Join(dir, "data"), "-http-addr", addr,
		"-otlp-grpc-addr", grpcAddr, "-otlp-http-addr", freeAddr(t),
		"-web.config.file", webCfg, "-config", cfg, "-log-level", "warn")
	kp, err := tls.LoadX509KeyPair(cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}}}
	base := "https://" + addr
	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.SetBasicAuth("ops", "ops-pw")
		resp, err := client.Do(req)
		if err != nil {
			return -1, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(startTimeout)
	for {
		if code, _ := get("/-/ready"); code == 200 {
			break
		}
		select {
		case <-weft.done:
			t.Fatalf("weft exited: %v", weft.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("weft not ready over TLS")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Plain HTTP is not served.
	if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatalf("plain HTTP answered 200: %s", b)
		}
	}

	// Prometheus remote-writes its own metrics over mTLS with the token.
	promAddr := freeAddr(t)
	promCfg := write("prometheus.yml", fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: prom-tls
    static_configs: [{targets: [%q]}]
remote_write:
  - url: %s/api/v1/write
    tls_config: {ca_file: %s, cert_file: %s, key_file: %s}
    authorization: {credentials_file: %s}
    headers: {X-Scope-OrgID: team-a}
    queue_config: {batch_send_deadline: 200ms, min_backoff: 50ms, max_backoff: 1s}
`, promAddr, base, caFile, cliCert, cliKey, tokenA))
	startProcess(t, "prometheus", promBin, "--config.file="+promCfg,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr, "--log.level=warn")

	// telemetrygen over gRPC: the team's token, then a wrong one.
	tg := func(service, token string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, tgBin, "metrics", "--otlp-endpoint", grpcAddr,
			"--ca-cert", caFile, "--mtls", "--client-cert", cliCert, "--client-key", cliKey,
			"--otlp-header", `authorization="Bearer `+token+`"`,
			"--metrics", "5", "--rate", "50", "--service", service, "--workers", "1").CombinedOutput()
		return string(out), err
	}
	if out, err := tg("tg-good", "team-a-token-0123456789abcdef"); err != nil {
		t.Fatalf("telemetrygen with the team's token: %v\n%s", err, tail(out, 2000))
	}
	if out, err := tg("tg-bad", "not-a-token-0123456789"); err == nil || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("telemetrygen with a wrong token: %v, want an Unauthenticated failure\n%s", err, tail(out, 2000))
	}

	count := func(q string) string {
		code, body := get("/api/v1/query?" + url.Values{"query": {q}}.Encode())
		if code != 200 {
			t.Fatalf("query %s: %d %s", q, code, body)
		}
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Data.Result) == 0 {
			return "0"
		}
		return fmt.Sprint(r.Data.Result[0].Value[1])
	}
	deadline = time.Now().Add(30 * time.Second)
	for count(`count(up{job="prom-tls"})`) == "0" {
		if time.Now().After(deadline) {
			t.Fatal("nothing of Prometheus' remote write arrived over mTLS with the token")
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n := count(`count({job="tg-good"})`); n == "0" {
		t.Error("telemetrygen with the team's token stored nothing")
	}
	if n := count(`count({job="tg-bad"})`); n != "0" {
		t.Errorf("telemetrygen with a wrong token stored %s series", n)
	}
}

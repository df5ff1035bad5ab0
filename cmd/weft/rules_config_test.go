package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/discovery"
)

func TestParseFlagsRules(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "weft.yml")
	if err := os.WriteFile(cfg, []byte(`
rule_files: [rules/*.yml]
logql_rule_files: [/abs/logs/*.yml]
external_labels:
  cluster: dgx-a
rules:
  evaluation_interval: 15s
  query_offset: 30s
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["am-1:9093", "am-2:9093"]
      timeout: 3s
      path_prefix: /am
      basic_auth:
        username: weft
        password: secret
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	opts, err := parseFlags([]string{"-config", cfg, "-http-addr", "127.0.0.1:9999",
		"-rules.file", "extra.yml", "-rules.logql-file", "nccl.yml",
		"-alertmanager.url", "https://u:p@am-3:9443/prefix/", "-alertmanager.timeout", "2s",
		"-rules.alert.resend-delay", "30s", "-rules.query-offset", "1m",
		"-rules.alert.investigate-timeout", "3s", "-rules.alert.max-investigations-per-eval", "2"}, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	c := opts.Rules.Config
	if got, want := strings.Join(c.RuleFiles, ","), filepath.Join(dir, "rules/*.yml")+",extra.yml"; got != want {
		t.Errorf("RuleFiles = %s, want %s", got, want)
	}
	if got := strings.Join(c.LogQLRuleFiles, ","); got != "/abs/logs/*.yml,nccl.yml" {
		t.Errorf("LogQLRuleFiles = %s", got)
	}
	if c.EvaluationInterval != 15*time.Second || c.QueryOffset != time.Minute || c.ExternalLabels.Get("cluster") != "dgx-a" {
		t.Errorf("config %+v", c)
	}
	ams := c.Alerting.AlertmanagerConfigs
	if len(ams) != 2 {
		t.Fatalf("%d alertmanager configs, want 2", len(ams))
	}
	if am := ams[0]; am.Timeout.String() != "3s" || am.PathPrefix != "/am" || am.Scheme != "http" || am.APIVersion != "v2" ||
		am.HTTPClientConfig.BasicAuth == nil || am.HTTPClientConfig.BasicAuth.Username != "weft" || string(am.HTTPClientConfig.BasicAuth.Password) != "secret" {
		t.Errorf("alertmanager from the file: %+v", am)
	}
	if sc, ok := ams[0].ServiceDiscoveryConfigs[0].(discovery.StaticConfig); !ok || len(sc[0].Targets) != 2 {
		t.Errorf("static targets: %+v", ams[0].ServiceDiscoveryConfigs)
	}
	if am := ams[1]; am.Scheme != "https" || am.PathPrefix != "/prefix" || am.Timeout.String() != "2s" ||
		am.HTTPClientConfig.BasicAuth == nil || am.HTTPClientConfig.BasicAuth.Username != "u" || string(am.HTTPClientConfig.BasicAuth.Password) != "p" {
		t.Errorf("alertmanager from -alertmanager.url: %+v", am)
	}
	if ro := opts.Rules.Ruler; ro.ResendDelay != 30*time.Second || ro.ExternalURL.Port() != "9999" || ro.InvestigateTimeout != 3*time.Second || ro.MaxInvestigationsPerEval != 2 {
		t.Errorf("ruler options %+v", opts.Rules.Ruler)
	}

	// A reload re-reads the file.
	if err := os.WriteFile(cfg, []byte("rule_files: [other.yml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, err := opts.Rules.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rc.RuleFiles, ","); got != filepath.Join(dir, "other.yml")+",extra.yml" || len(rc.Alerting.AlertmanagerConfigs) != 1 {
		t.Errorf("reloaded %+v", rc)
	}

	for _, bad := range []struct{ file, want string }{
		{"alerting:\n  alertmanagers:\n    - static_configs: [{targets: [a:1]}]\n      timeot: 3s\n", "timeot"},
		{"alerting:\n  alertmanagers:\n    - api_version: v1\n", "api version"},
		{"external_labels: {\"\": x}\n", "external_labels"},
	} {
		if err := os.WriteFile(cfg, []byte(bad.file), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := parseFlags([]string{"-config", cfg}, &stderr); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("config %q: err %v, want one mentioning %q", bad.file, err, bad.want)
		}
	}
	if _, err := parseFlags([]string{"-alertmanager.url", "am:9093"}, &stderr); err == nil || !strings.Contains(err.Error(), "-alertmanager.url") {
		t.Errorf("-alertmanager.url without scheme: %v", err)
	}
}

func TestCheckRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yml", "groups:\n  - name: g\n    rules:\n      - record: a:b\n        expr: sum(up)\n      - alert: Down\n        expr: up == 0\n")
	bad := write("bad.yml", "groups:\n  - name: g\n    rules:\n      - alert: Down\n        expr: up ==\n        annotations:\n          x: '{{ .Bad'\n")
	logs := write("logs.yml", "groups:\n  - name: l\n    rules:\n      - alert: OOM\n        expr: sum(count_over_time({app=\"x\"} |= \"out of memory\" [5m])) > 0\n")

	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string
	}{
		{"valid", []string{good}, 0, []string{"Checking " + good, "SUCCESS: 2 rules found"}, nil},
		{"invalid", []string{good, bad}, 1, []string{"SUCCESS: 2 rules found", "Checking " + bad, "FAILED"}, []string{bad + ": 5:15: group \"g\", rule 1, \"Down\": could not parse expression", "annotation \"x\""}},
		{"logql", []string{"-logql", logs}, 0, []string{"SUCCESS: 1 rules found"}, nil},
		{"logql as promql", []string{logs}, 1, []string{"FAILED"}, []string{logs + ": 5:15:"}},
		{"missing file", []string{filepath.Join(dir, "nope.yml")}, 1, []string{"FAILED"}, []string{"no such file"}},
		{"no files", nil, 2, nil, []string{"Usage: weft check-rules"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := runCheckRules(tc.args, &out, &errOut); code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errOut.String())
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout %q lacks %q", out.String(), w)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr %q lacks %q", errOut.String(), w)
				}
			}
		})
	}
}

// TestParseFlagsTenantRuleFiles: tenant_rule_files names each tenant's rule
// files, relative to the config file's directory like rule_files.
func TestParseFlagsTenantRuleFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "weft.yml")
	if err := os.WriteFile(cfg, []byte(`
rule_files: [anon.yml]
tenant_rule_files:
  team-a:
    rule_files: [rules/team-a/*.yml]
    logql_rule_files: [/abs/team-a-logs.yml]
  team-b:
    rule_files: [rules/team-b/*.yml]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	opts, err := parseFlags([]string{"-config", cfg, "-multi-tenant", "-alertmanager.tenant-header"}, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	if !opts.Rules.Ruler.AlertmanagerTenantHeader {
		t.Error("-alertmanager.tenant-header not applied")
	}
	if _, err := parseFlags([]string{"-alertmanager.tenant-header"}, &stderr); err == nil || !strings.Contains(err.Error(), "needs -multi-tenant") {
		t.Errorf("-alertmanager.tenant-header without -multi-tenant: %v", err)
	}
	c := opts.Rules.Config
	if got := strings.Join(c.RuleFiles, ","); got != filepath.Join(dir, "anon.yml") {
		t.Errorf("RuleFiles (anonymous) = %s", got)
	}
	a, b := c.Tenants["team-a"], c.Tenants["team-b"]
	if len(c.Tenants) != 2 || strings.Join(a.RuleFiles, ",") != filepath.Join(dir, "rules/team-a/*.yml") ||
		strings.Join(a.LogQLRuleFiles, ",") != "/abs/team-a-logs.yml" || strings.Join(b.RuleFiles, ",") != filepath.Join(dir, "rules/team-b/*.yml") || len(b.LogQLRuleFiles) != 0 {
		t.Errorf("Tenants = %+v", c.Tenants)
	}
}

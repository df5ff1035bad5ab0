package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	"go.yaml.in/yaml/v3"

	"github.com/weftdb/weft/cmd/weft/internal/app"
	"github.com/weftdb/weft/ruler"
)

// rulesFileConfig is the part of the -config file about rules and alerts,
// inlined at its top level. The keys are Prometheus' where Prometheus has
// them (rule_files, alerting, external_labels), so that a Prometheus
// configuration's rule and alerting blocks can be copied as they are.
type rulesFileConfig struct {
	// RuleFiles are globs of Prometheus rule files, relative to the config
	// file's directory.
	RuleFiles []string `yaml:"rule_files"`
	// LogQLRuleFiles are globs of rule files whose expressions are LogQL
	// (Loki ruler files).
	LogQLRuleFiles []string `yaml:"logql_rule_files"`
	// TenantRuleFiles are the rule files of tenants other than the
	// anonymous one (whose are RuleFiles and LogQLRuleFiles), by tenant ID;
	// they need -multi-tenant (docs/tenancy.md, "Rules and alerts").
	TenantRuleFiles map[string]tenantRuleFiles `yaml:"tenant_rule_files"`
	// ExternalLabels are added to every alert sent to Alertmanager.
	ExternalLabels map[string]string `yaml:"external_labels"`
	// Alerting is Prometheus' alerting block: alertmanagers and
	// alert_relabel_configs, decoded by Prometheus' own config types.
	Alerting yaml.Node `yaml:"alerting"`
	Rules    struct {
		EvaluationInterval *duration `yaml:"evaluation_interval"`
		QueryOffset        *duration `yaml:"query_offset"`
	} `yaml:"rules"`
}

// tenantRuleFiles are one tenant's rule files in tenant_rule_files.
type tenantRuleFiles struct {
	RuleFiles      []string `yaml:"rule_files"`
	LogQLRuleFiles []string `yaml:"logql_rule_files"`
}

// ruleFlags are the -rules.* and -alertmanager.* flags.
type ruleFlags struct {
	files, logqlFiles, alertmanagers stringList
	evalInterval, queryOffset        durationFlag
	outageTolerance, gracePeriod     durationFlag
	resendDelay, amTimeout           durationFlag
	externalURL                      *string
	queueCapacity                    *int
	investigateTimeout               durationFlag
	investigationsPerEval            *int
	tenantHeader                     *bool
}

func registerRuleFlags(fs *flag.FlagSet) *ruleFlags {
	d := ruler.DefaultOptions()
	rf := &ruleFlags{
		evalInterval:    durationFlag(ruler.DefaultEvaluationInterval),
		outageTolerance: durationFlag(d.OutageTolerance),
		gracePeriod:     durationFlag(d.ForGracePeriod),
		resendDelay:     durationFlag(d.ResendDelay),
		amTimeout:       durationFlag(config.DefaultAlertmanagerConfig.Timeout),

		investigateTimeout: durationFlag(d.InvestigateTimeout),
	}
	fs.Var(&rf.files, "rules.file", "Prometheus rule file or glob to evaluate (repeatable; adds to rule_files in -config)")
	fs.Var(&rf.logqlFiles, "rules.logql-file", "rule file or glob whose expressions are LogQL metric queries (repeatable; adds to logql_rule_files)")
	fs.Var(&rf.evalInterval, "rules.evaluation-interval", "interval of rule groups that set none (rules.evaluation_interval in -config)")
	fs.Var(&rf.queryOffset, "rules.query-offset", "query_offset of rule groups that set none: evaluate this far in the past so late data counts")
	fs.Var(&rf.outageTolerance, "rules.alert.for-outage-tolerance", "how long weft may have been down for an alert's `for` state to be restored")
	fs.Var(&rf.gracePeriod, "rules.alert.for-grace-period", "least time a restored alert still waits before it fires")
	fs.Var(&rf.resendDelay, "rules.alert.resend-delay", "least time between two notifications of a firing alert")
	rf.externalURL = fs.String("rules.external-url", "", "URL under which users reach weft: the base of alerts' generatorURL (default http://<hostname>:<http port>/)")
	fs.Var(&rf.alertmanagers, "alertmanager.url", "Alertmanager to send alerts to, as http[s]://[user:password@]host:port[/path] (repeatable; adds to alerting.alertmanagers)")
	fs.Var(&rf.amTimeout, "alertmanager.timeout", "timeout of each request to an -alertmanager.url")
	rf.queueCapacity = fs.Int("alertmanager.notification-queue-capacity", d.NotificationQueueCapacity, "alerts queued for Alertmanager before the oldest are dropped")
	fs.Var(&rf.investigateTimeout, "rules.alert.investigate-timeout", "bound of one investigation of an alert that opts in with weft_investigate: \"true\"")
	rf.tenantHeader = fs.Bool("alertmanager.tenant-header", false, "with -multi-tenant, send each tenant's alerts with X-Scope-OrgID: <tenant>, for a multi-tenant Alertmanager such as Mimir's (docs/tenancy.md)")
	rf.investigationsPerEval = fs.Int("rules.alert.max-investigations-per-eval", d.MaxInvestigationsPerEval, "investigations one rule's evaluation waits for; other alerts are investigated at their next resends")
	return rf
}

// rulesConfig builds the ruler's configuration from the config file's
// rules part (nil: no file) and the flags. dir resolves relative paths.
func (rf *ruleFlags) rulesConfig(fc *rulesFileConfig, dir string, set map[string]bool) (ruler.Config, error) {
	cfg := ruler.Config{EvaluationInterval: time.Duration(rf.evalInterval), QueryOffset: time.Duration(rf.queryOffset)}
	if fc != nil {
		rel := func(globs []string) []string {
			out := make([]string, 0, len(globs))
			for _, g := range globs {
				if !filepath.IsAbs(g) {
					g = filepath.Join(dir, g)
				}
				out = append(out, g)
			}
			return out
		}
		cfg.RuleFiles = rel(fc.RuleFiles)
		cfg.LogQLRuleFiles = rel(fc.LogQLRuleFiles)
		for id, tr := range fc.TenantRuleFiles {
			if cfg.Tenants == nil {
				cfg.Tenants = map[string]ruler.TenantRules{}
			}
			cfg.Tenants[id] = ruler.TenantRules{RuleFiles: rel(tr.RuleFiles), LogQLRuleFiles: rel(tr.LogQLRuleFiles)}
		}
		if !set["rules.evaluation-interval"] && fc.Rules.EvaluationInterval != nil {
			cfg.EvaluationInterval = time.Duration(*fc.Rules.EvaluationInterval)
		}
		if !set["rules.query-offset"] && fc.Rules.QueryOffset != nil {
			cfg.QueryOffset = time.Duration(*fc.Rules.QueryOffset)
		}
		if len(fc.ExternalLabels) > 0 {
			cfg.ExternalLabels = labels.FromMap(fc.ExternalLabels)
			if err := cfg.ExternalLabels.Validate(func(l labels.Label) error {
				if !model.UTF8Validation.IsValidLabelName(l.Name) || l.Value == "" {
					return fmt.Errorf("external_labels: invalid label %s=%q", l.Name, l.Value)
				}
				return nil
			}); err != nil {
				return cfg, err
			}
		}
		ac, err := decodeAlerting(&fc.Alerting, dir)
		if err != nil {
			return cfg, err
		}
		cfg.Alerting = ac
	}
	cfg.RuleFiles = append(cfg.RuleFiles, rf.files...)
	cfg.LogQLRuleFiles = append(cfg.LogQLRuleFiles, rf.logqlFiles...)
	for _, raw := range rf.alertmanagers {
		am, err := alertmanagerFromURL(raw, time.Duration(rf.amTimeout))
		if err != nil {
			return cfg, err
		}
		cfg.Alerting.AlertmanagerConfigs = append(cfg.Alerting.AlertmanagerConfigs, am)
	}
	return cfg, nil
}

// decodeAlerting decodes the alerting block with Prometheus' own types
// (their defaults and validation), strictly: an unknown key is an error.
func decodeAlerting(n *yaml.Node, dir string) (config.AlertingConfig, error) {
	var ac config.AlertingConfig
	if n.IsZero() {
		return ac, nil
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return ac, fmt.Errorf("alerting: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&ac); err != nil {
		return ac, fmt.Errorf("alerting (line %d of the config file): %w", n.Line, err)
	}
	for _, am := range ac.AlertmanagerConfigs {
		am.SetDirectory(dir)
		if err := am.Validate(model.UTF8Validation); err != nil {
			return ac, fmt.Errorf("alerting.alertmanagers: %w", err)
		}
	}
	return ac, nil
}

// alertmanagerFromURL turns -alertmanager.url into a static Alertmanager:
// scheme, host, path prefix and basic auth from the URL.
func alertmanagerFromURL(raw string, timeout time.Duration) (*config.AlertmanagerConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("-alertmanager.url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("-alertmanager.url %q: want http[s]://host:port[/path]", raw)
	}
	am := config.DefaultAlertmanagerConfig
	am.Scheme = u.Scheme
	am.PathPrefix = strings.TrimSuffix(u.Path, "/")
	am.Timeout = model.Duration(timeout)
	am.ServiceDiscoveryConfigs = discovery.Configs{discovery.StaticConfig{
		&targetgroup.Group{Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(u.Host)}}, Source: raw},
	}}
	if u.User != nil {
		pw, _ := u.User.Password()
		am.HTTPClientConfig.BasicAuth = &commoncfg.BasicAuth{Username: u.User.Username(), Password: commoncfg.Secret(pw)}
	}
	if err := am.HTTPClientConfig.Validate(); err != nil {
		return nil, fmt.Errorf("-alertmanager.url %q: %w", raw, err)
	}
	return &am, nil
}

// defaultExternalURL is http://<hostname>:<port of addr>/, as Prometheus
// defaults --web.external-url.
func defaultExternalURL(addr string) *url.URL {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		port = "9338"
	}
	return &url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/"}
}

// applyRules fills opts.Rules from the flags and the config file's rules
// part, and arranges for reloads to re-read the config file.
func (rf *ruleFlags) applyRules(opts *app.Options, configFile string, fc *rulesFileConfig, set map[string]bool) error {
	dir := "."
	if configFile != "" {
		dir = filepath.Dir(configFile)
	}
	cfg, err := rf.rulesConfig(fc, dir, set)
	if err != nil {
		return err
	}
	ro := &opts.Rules
	ro.Config = cfg
	ro.Ruler.OutageTolerance = time.Duration(rf.outageTolerance)
	ro.Ruler.ForGracePeriod = time.Duration(rf.gracePeriod)
	ro.Ruler.ResendDelay = time.Duration(rf.resendDelay)
	ro.Ruler.NotificationQueueCapacity = *rf.queueCapacity
	if rf.investigateTimeout <= 0 || *rf.investigationsPerEval <= 0 {
		return fmt.Errorf("-rules.alert.investigate-timeout and -rules.alert.max-investigations-per-eval must be positive")
	}
	ro.Ruler.InvestigateTimeout = time.Duration(rf.investigateTimeout)
	ro.Ruler.MaxInvestigationsPerEval = *rf.investigationsPerEval
	if *rf.tenantHeader && !opts.Tenancy.Enabled {
		return fmt.Errorf("-alertmanager.tenant-header needs -multi-tenant")
	}
	ro.Ruler.AlertmanagerTenantHeader = *rf.tenantHeader
	if *rf.externalURL != "" {
		u, err := url.Parse(*rf.externalURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("invalid -rules.external-url %q: want an absolute URL", *rf.externalURL)
		}
		ro.Ruler.ExternalURL = u
	} else {
		ro.Ruler.ExternalURL = defaultExternalURL(opts.HTTPAddr)
	}
	ro.Reload = func() (ruler.Config, error) {
		if configFile == "" {
			return rf.rulesConfig(nil, dir, set)
		}
		c, err := loadConfigFile(configFile)
		if err != nil {
			return ruler.Config{}, err
		}
		return rf.rulesConfig(&c.rulesFileConfig, dir, set)
	}
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

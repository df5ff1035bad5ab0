package ruler

import (
	"log/slog"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
)

// Defaults are Prometheus' (cmd/prometheus flags of the same meaning), so
// that a rule file behaves on weft as it does on Prometheus.
const (
	// DefaultEvaluationInterval is a group's interval when it names none
	// (Prometheus' global evaluation_interval).
	DefaultEvaluationInterval = time.Minute
	// DefaultOutageTolerance bounds how old an ALERTS_FOR_STATE sample may
	// be to restore an alert's `for` state after a restart
	// (--rules.alert.for-outage-tolerance).
	DefaultOutageTolerance = time.Hour
	// DefaultForGracePeriod is the least time a restored alert still waits
	// before it fires (--rules.alert.for-grace-period).
	DefaultForGracePeriod = 10 * time.Minute
	// DefaultResendDelay is the least time between two notifications of a
	// firing alert to Alertmanager (--rules.alert.resend-delay).
	DefaultResendDelay = time.Minute
	// DefaultNotificationQueueCapacity is how many alerts wait for
	// Alertmanager before the oldest are dropped
	// (--alertmanager.notification-queue-capacity).
	DefaultNotificationQueueCapacity = 10000
	// DefaultDiscoveryUpdate is how long the notifier's target discovery
	// waits to pass on a change of Alertmanagers. Prometheus waits 5s;
	// weft's targets are static, so there is nothing to batch and a shorter
	// wait only makes a reload take effect sooner.
	DefaultDiscoveryUpdate = time.Second
	// DefaultInvestigateTimeout bounds one alert's investigation: an
	// investigation answers in about a second (docs/investigation.md), and
	// a rule's evaluation waits for it before the notification goes out.
	DefaultInvestigateTimeout = 10 * time.Second
	// DefaultMaxInvestigationsPerEval bounds the investigations one rule's
	// evaluation waits for, so that a rule firing for a whole fleet at once
	// delays its group by a few timeouts at most; the other alerts go out
	// without a cause and are investigated at their next resends.
	DefaultMaxInvestigationsPerEval = 4
)

// Options configure a Ruler. Appendable, Queryable and Engine are required;
// the other fields take the defaults when zero.
type Options struct {
	// Appendable receives recording-rule results and the ALERTS and
	// ALERTS_FOR_STATE series (weft's metric store).
	Appendable storage.AppendableV2
	// Queryable is what PromQL rules read, and where alert state is
	// restored from after a restart.
	Queryable storage.Queryable
	// Engine evaluates PromQL rules (the server's engine, with weft's
	// optimizations).
	Engine promql.QueryEngine
	// Logs evaluates LogQL rules; nil rejects LogQL rule files.
	Logs LogQuerier
	// MultiTenant runs each tenant's rules acting as that tenant
	// (-multi-tenant; tenants.go): they read and write only its data and
	// its alerts carry AlertTenantLabel. Default false: one anonymous
	// tenant whose rules see everything, and Config.Tenants is refused.
	MultiTenant bool
	// AlertmanagerTenantHeader sends each tenant's alerts with
	// X-Scope-OrgID: <tenant>, for a multi-tenant Alertmanager (Mimir's,
	// at its path_prefix, /alertmanager); each tenant then has a notifier
	// (queue, batches) of its own. Needs MultiTenant. Default false: every
	// tenant's alerts go out together, told apart by AlertTenantLabel.
	AlertmanagerTenantHeader bool

	// ExternalURL is weft's address as users reach it: the base of every
	// alert's generatorURL and the templates' $externalURL. Default
	// http://localhost:9338/.
	ExternalURL *url.URL
	// OutageTolerance, ForGracePeriod and ResendDelay: see the defaults.
	OutageTolerance, ForGracePeriod, ResendDelay time.Duration
	// NotificationQueueCapacity: see DefaultNotificationQueueCapacity.
	NotificationQueueCapacity int
	// DiscoveryUpdate: see DefaultDiscoveryUpdate.
	DiscoveryUpdate time.Duration

	// Investigator receives every alert when it starts firing (it keeps
	// them as incidents) and investigates the alerts whose rule opts in
	// with the annotation or label weft_investigate: "true", whose
	// notifications then carry the top-ranked cause in the probable_cause
	// annotation and a link to the investigation in investigation_url
	// (investigate.go, docs/investigation.md). Each firing alert is handed
	// over once; its answer is re-used on every resend. nil: alerts are
	// sent as evaluated.
	Investigator Investigator
	// InvestigateTimeout and MaxInvestigationsPerEval: see the defaults.
	InvestigateTimeout       time.Duration
	MaxInvestigationsPerEval int

	// Shard, when set, picks the rule groups this ruler evaluates by their
	// file and name: the files are still read and checked whole, the other
	// groups are left to other rulers (a scale-out querier's share of the
	// cluster's groups). Call Reshard when its answers change. nil
	// evaluates every group.
	Shard func(file, group string) bool
	// Logger receives the manager's and the notifier's messages; nil
	// discards them.
	Logger *slog.Logger
	// Registerer receives prometheus_rule_*, prometheus_notifications_*
	// and the notifier's discovery metrics; nil registers none.
	Registerer prometheus.Registerer
}

// DefaultOptions returns the defaults; the sources still have to be set.
func DefaultOptions() Options {
	return Options{
		ExternalURL:               &url.URL{Scheme: "http", Host: "localhost:9338", Path: "/"},
		OutageTolerance:           DefaultOutageTolerance,
		ForGracePeriod:            DefaultForGracePeriod,
		ResendDelay:               DefaultResendDelay,
		NotificationQueueCapacity: DefaultNotificationQueueCapacity,
		DiscoveryUpdate:           DefaultDiscoveryUpdate,
		InvestigateTimeout:        DefaultInvestigateTimeout,
		MaxInvestigationsPerEval:  DefaultMaxInvestigationsPerEval,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.ExternalURL == nil {
		o.ExternalURL = d.ExternalURL
	}
	if o.OutageTolerance <= 0 {
		o.OutageTolerance = d.OutageTolerance
	}
	if o.ForGracePeriod <= 0 {
		o.ForGracePeriod = d.ForGracePeriod
	}
	if o.ResendDelay <= 0 {
		o.ResendDelay = d.ResendDelay
	}
	if o.NotificationQueueCapacity <= 0 {
		o.NotificationQueueCapacity = d.NotificationQueueCapacity
	}
	if o.DiscoveryUpdate <= 0 {
		o.DiscoveryUpdate = d.DiscoveryUpdate
	}
	if o.InvestigateTimeout <= 0 {
		o.InvestigateTimeout = d.InvestigateTimeout
	}
	if o.MaxInvestigationsPerEval <= 0 {
		o.MaxInvestigationsPerEval = d.MaxInvestigationsPerEval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Config is what a reload changes: the rule files, their evaluation
// settings and where alerts go. The zero Config evaluates no rules and
// sends nowhere.
type Config struct {
	// RuleFiles are globs of Prometheus rule files (PromQL expressions).
	RuleFiles []string
	// LogQLRuleFiles are globs of rule files in the same format whose
	// expressions are LogQL metric queries (Loki ruler files). A file may
	// not match both lists.
	LogQLRuleFiles []string
	// EvaluationInterval is the interval of groups that set none; default
	// DefaultEvaluationInterval.
	EvaluationInterval time.Duration
	// QueryOffset is the query_offset of groups that set none: each
	// evaluation looks this far back, so that late samples and log lines
	// still count. Default 0.
	QueryOffset time.Duration
	// Tenants are the rule files of tenants other than the anonymous one,
	// by tenant ID (config key tenant_rule_files); RuleFiles and
	// LogQLRuleFiles are the anonymous tenant's. A file belongs to one
	// tenant. Needs Options.MultiTenant.
	Tenants map[string]TenantRules
	// ExternalLabels are added to every alert sent (and are the templates'
	// $externalLabels); recording-rule results are stored without them,
	// as in Prometheus.
	ExternalLabels labels.Labels
	// Alerting is Prometheus' alerting block: alertmanagers (static
	// targets, scheme, path_prefix, timeout, api_version, basic_auth, TLS)
	// and alert_relabel_configs.
	Alerting config.AlertingConfig
}

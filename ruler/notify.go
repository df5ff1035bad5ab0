package ruler

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	promnotifier "github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/rules"
)

// notifier sends alerts to Alertmanager through Prometheus' notifier
// (API v2, queueing, batching, relabelling, drain on shutdown), fed with
// targets by Prometheus' discovery manager (static_configs). It is owned
// by the Ruler: start and stop are called once each.
type notifier struct {
	mgr *promnotifier.Manager
	sd  *discovery.Manager

	logger *slog.Logger

	ctx    context.Context // the discovery manager's: cancelled by stop
	cancel context.CancelFunc

	// configured says the applied config names Alertmanagers; synced is
	// closed once the manager has applied discovery's first target update
	// (forward).
	configured atomic.Bool
	synced     chan struct{}
}

// syncWait bounds how long Start waits for the notifiers' first target
// update (waitSynced); discovery passes static targets on at its first
// DiscoveryUpdate tick.
const syncWait = 10 * time.Second

func newNotifier(opts Options) (*notifier, error) {
	reg := opts.Registerer
	if reg == nil {
		// The discovery manager cannot run without a registry; keep its
		// metrics private.
		reg = prometheus.NewRegistry()
	}
	logger := opts.Logger.With("component", "notifier")
	sdMetrics, err := discovery.CreateAndRegisterSDMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register alertmanager discovery metrics: %w", err)
	}
	// Not derived from the manager's context: Stop cancels that first, and
	// discovery must keep its targets until the queue is drained.
	ctx, cancel := context.WithCancel(context.Background())
	sd := discovery.NewManager(ctx, logger, reg, sdMetrics, discovery.Name("notify"), discovery.Updatert(opts.DiscoveryUpdate))
	if sd == nil {
		cancel()
		return nil, fmt.Errorf("build alertmanager discovery: metrics already registered")
	}
	mgr := promnotifier.NewManager(&promnotifier.Options{
		QueueCapacity:   opts.NotificationQueueCapacity,
		DrainOnShutdown: true,
		Registerer:      opts.Registerer,
	}, model.UTF8Validation, logger)
	return &notifier{mgr: mgr, sd: sd, ctx: ctx, cancel: cancel, logger: logger, synced: make(chan struct{})}, nil
}

// applyConfig points the notifier at cfg's Alertmanagers and external
// labels; with orgID, every request to them carries X-Scope-OrgID: orgID.
// The notifier validates and builds every client before it replaces the
// old ones, so an error leaves them as they were.
func (n *notifier) applyConfig(cfg Config, orgID string) error {
	pc := &config.Config{
		GlobalConfig: config.GlobalConfig{
			ExternalLabels:             cfg.ExternalLabels,
			MetricNameValidationScheme: model.UTF8Validation,
		},
		AlertingConfig: withOrgID(cfg.Alerting, orgID),
	}
	if err := n.mgr.ApplyConfig(pc); err != nil {
		return err
	}
	n.configured.Store(len(cfg.Alerting.AlertmanagerConfigs) > 0)
	sdc := map[string]discovery.Configs{}
	for k, am := range cfg.Alerting.AlertmanagerConfigs.ToMap() {
		sdc[k] = am.ServiceDiscoveryConfigs
	}
	return n.sd.ApplyConfig(sdc)
}

// OrgIDHeader is the tenant header of Mimir, Loki and Tempo, which a
// multi-tenant Alertmanager (Mimir's, Cortex's) reads.
const OrgIDHeader = "X-Scope-OrgID"

// withOrgID returns ac with X-Scope-OrgID: id added to the HTTP headers of
// every Alertmanager; ac itself for no id. ac is not changed.
func withOrgID(ac config.AlertingConfig, id string) config.AlertingConfig {
	if id == "" {
		return ac
	}
	ams := make(config.AlertmanagerConfigs, len(ac.AlertmanagerConfigs))
	for i, am := range ac.AlertmanagerConfigs {
		c := *am
		hs := map[string]commoncfg.Header{}
		if c.HTTPClientConfig.HTTPHeaders != nil {
			maps.Copy(hs, c.HTTPClientConfig.HTTPHeaders.Headers)
		}
		hs[OrgIDHeader] = commoncfg.Header{Values: []string{id}}
		c.HTTPClientConfig.HTTPHeaders = &commoncfg.Headers{Headers: hs}
		ams[i] = &c
	}
	ac.AlertmanagerConfigs = ams
	return ac
}

func (n *notifier) start(wg *sync.WaitGroup) {
	updates := make(chan map[string][]*targetgroup.Group)
	wg.Go(func() { _ = n.sd.Run() })
	wg.Go(func() { n.forward(updates) })
	wg.Go(func() { n.mgr.Run(updates) })
}

// forward passes discovery's target updates on to the manager. The
// manager sends an alert only to the Alertmanagers it knows when the alert
// is queued, and drops it when it knows none; the alert then waits for its
// resend, a ResendDelay later. So the first update is passed twice: the
// manager applies an update before it takes the next one, and once it has
// taken the second the first is applied and synced is closed.
func (n *notifier) forward(out chan<- map[string][]*targetgroup.Group) {
	pass := func(ts map[string][]*targetgroup.Group) bool {
		select {
		case out <- ts:
			return true
		case <-n.ctx.Done():
			return false
		}
	}
	first := true
	for {
		select {
		case <-n.ctx.Done():
			return
		case ts, ok := <-n.sd.SyncCh():
			if !ok {
				close(out)
				return
			}
			if !pass(ts) || first && !pass(ts) {
				return
			}
			if first {
				close(n.synced)
				first = false
			}
		}
	}
}

// waitSynced waits until the manager knows the Alertmanagers of the
// applied config (none: it returns at once), so that rules evaluated from
// then on have their first notifications delivered, or until ctx ends.
func (n *notifier) waitSynced(ctx context.Context) {
	if !n.configured.Load() {
		return
	}
	select {
	case <-n.synced:
	case <-ctx.Done():
		n.logger.Warn("Alertmanagers not discovered in time; alerts that fire before they are wait for their resend", "waited", syncWait)
	}
}

// stop drains the notifier's queue and stops discovery. The caller waits
// for the goroutines start started.
func (n *notifier) stop() {
	n.mgr.Stop()
	n.cancel()
}

// notifyFunc is the manager's NotifyFunc: rules.SendAlerts with weft's
// generatorURL, which opens the rule's expression in weft's query API
// (/api/v1/query for PromQL, /loki/api/v1/query for LogQL), and, with an
// explainer, the alerts handed to the Investigator and the opted-in ones'
// probable cause in their annotations (investigate.go). With
// multi-tenancy on, each alert carries its rule's tenant (the context's) in
// AlertTenantLabel (tenants.go).
func notifyFunc(external *url.URL, ex *explainer, send func(tenant string, alerts ...*promnotifier.Alert)) rules.NotifyFunc {
	base := strings.TrimSuffix(external.String(), "/")
	return func(ctx context.Context, expr string, alerts ...*rules.Alert) {
		if len(alerts) == 0 {
			return
		}
		lang, id := contextLanguage(ctx), contextTenant(ctx)
		gen := generatorURL(base, lang, expr)
		anns := make([]labels.Labels, len(alerts))
		for i, a := range alerts {
			anns[i] = a.Annotations
		}
		if ex != nil {
			anns = ex.annotate(ctx, lang, expr, alerts)
		}
		out := make([]*promnotifier.Alert, 0, len(alerts))
		for i, a := range alerts {
			na := &promnotifier.Alert{
				StartsAt:     a.FiredAt,
				Labels:       withAlertTenant(a.Labels, id),
				Annotations:  anns[i],
				GeneratorURL: gen,
			}
			if !a.ResolvedAt.IsZero() {
				na.EndsAt = a.ResolvedAt
			} else {
				na.EndsAt = a.ValidUntil
			}
			out = append(out, na)
		}
		send(id, out...)
	}
}

// generatorURL is the link an alert carries back to weft.
func generatorURL(base string, lang Language, expr string) string {
	path := "/api/v1/query"
	if lang == LogQL {
		path = "/loki/api/v1/query"
	}
	return base + path + "?query=" + url.QueryEscape(expr)
}

package ruler

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	promnotifier "github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/rules"

	"github.com/weftdb/weft/index/tenant"
)

// Rules per tenant (docs/tenancy.md, "Rules and alerts"), as the Mimir and
// Loki rulers keep them: every rule group belongs to one tenant, and each
// tenant's groups run in a Prometheus rules manager of their own whose
// context acts as that tenant (package index/tenant). Everything the
// manager does with that context is the tenant's: the rules' queries read
// only its data, recording rules and the ALERTS and ALERTS_FOR_STATE series
// are written into it, the `for` state is restored from it, and the firing
// alerts handed to the Investigator are kept as its incidents. Alerts sent
// to Alertmanager carry the tenant in AlertTenantLabel.
//
// The rule files of Config.RuleFiles and Config.LogQLRuleFiles belong to
// tenant.Anonymous; Config.Tenants names the files of other tenants. With
// multi-tenancy off (Options.MultiTenant false) only the anonymous tenant's
// manager exists and its context is not restricted: rules read and write
// everything, as before.

// AlertTenantLabel is the label that names an alert's tenant in the alerts
// sent to Alertmanager with multi-tenancy on (Mimir's name for a series'
// tenant in a federated answer, tenant.FederatedLabelName): Alertmanager
// routes on it. It overrides a label of that name set by the rule, so a
// tenant's rule cannot page as another tenant.
const AlertTenantLabel = tenant.FederatedLabelName

// TenantRules are the rule files of one tenant (Config.Tenants).
type TenantRules struct {
	// RuleFiles and LogQLRuleFiles are globs, as Config's.
	RuleFiles, LogQLRuleFiles []string
}

// tenantFiles is the expansion of a Config's globs: the files of each
// tenant with rules and the language of every file.
type tenantFiles struct {
	files map[string][]string // tenant → files, sorted
	lang  map[string]Language // file → language
}

// expandTenants resolves cfg's globs into the files of each tenant. A file
// belongs to one tenant only; tenant rule files need multi-tenancy on.
func expandTenants(cfg Config, multiTenant, haveLogs bool) (tenantFiles, error) {
	tf := tenantFiles{files: map[string][]string{}, lang: map[string]Language{}}
	owner := map[string]string{} // file → tenant
	add := func(id string, tr TenantRules) error {
		files, lang, err := expandFiles(tr, haveLogs)
		if err != nil {
			return err
		}
		for _, f := range files {
			if other, ok := owner[f]; ok && other != id {
				return fmt.Errorf("%w: %s is a rule file of tenants %q and %q; a rule file belongs to one tenant", ErrInvalidRules, f, other, id)
			}
			if l, ok := tf.lang[f]; ok && l != lang[f] {
				return fmt.Errorf("%w: %s matches both a PromQL and a LogQL rule file pattern", ErrInvalidRules, f)
			}
			owner[f], tf.lang[f] = id, lang[f]
		}
		tf.files[id] = slices.Compact(slices.Sorted(slices.Values(append(tf.files[id], files...))))
		return nil
	}
	if err := add(tenant.Anonymous, TenantRules{RuleFiles: cfg.RuleFiles, LogQLRuleFiles: cfg.LogQLRuleFiles}); err != nil {
		return tf, err
	}
	for _, id := range slices.Sorted(maps.Keys(cfg.Tenants)) {
		if err := tenant.ValidateID(id); err != nil {
			return tf, fmt.Errorf("%w: tenant rule files: %w", ErrInvalidRules, err)
		}
		if !multiTenant && id != tenant.Anonymous {
			return tf, fmt.Errorf("%w: rule files of tenant %q need multi-tenancy (-multi-tenant); without it every rule is the anonymous tenant's", ErrInvalidRules, id)
		}
		if err := add(id, cfg.Tenants[id]); err != nil {
			return tf, err
		}
	}
	return tf, nil
}

// newManager returns the rules manager of tenant id, not yet running.
func (r *Ruler) newManager(id string) *rules.Manager {
	ctx := r.ctx
	if r.opts.MultiTenant {
		ctx = tenant.With(ctx, id)
	}
	logger := r.opts.Logger.With("component", "rule manager")
	if r.opts.MultiTenant {
		logger = logger.With("tenant", id)
	}
	return rules.NewManager(&rules.ManagerOptions{
		NameValidationScheme:     r.managerOpts.NameValidationScheme,
		ExternalURL:              r.opts.ExternalURL,
		QueryFunc:                r.query,
		NotifyFunc:               r.managerOpts.NotifyFunc,
		Context:                  ctx,
		AppendableV2:             r.opts.Appendable,
		Queryable:                r.opts.Queryable,
		Logger:                   logger,
		Metrics:                  r.managerOpts.Metrics,
		OutageTolerance:          r.opts.OutageTolerance,
		ForGracePeriod:           r.opts.ForGracePeriod,
		ResendDelay:              r.opts.ResendDelay,
		GroupLoader:              r.loader,
		DefaultRuleQueryOffset:   r.managerOpts.DefaultRuleQueryOffset,
		RuleDependencyController: noDependencies{},
		Parser:                   r.managerOpts.Parser,
	})
}

// tenantManager is one tenant's manager.
type tenantManager struct {
	id string
	m  *rules.Manager
}

// visibleManagers returns the managers of the tenants a reader acting with
// ctx may see (every one when ctx is not restricted), by tenant.
func (r *Ruler) visibleManagers(ctx context.Context) []tenantManager {
	ms := *r.managers.Load()
	out := make([]tenantManager, 0, len(ms))
	for id, m := range ms {
		if tenant.Visible(ctx, id) {
			out = append(out, tenantManager{id, m})
		}
	}
	slices.SortFunc(out, func(a, b tenantManager) int { return strings.Compare(a.id, b.id) })
	return out
}

// VisibleRuleGroups returns the groups, PromQL and LogQL, of the tenants a
// reader acting with ctx may see: the request's tenant's, several for a
// federated request, every group when ctx is not restricted
// (multi-tenancy off). Ordered by file, then name, as rules.Manager orders
// them.
func (r *Ruler) VisibleRuleGroups(ctx context.Context) []*rules.Group {
	var out []*rules.Group
	for _, tm := range r.visibleManagers(ctx) {
		out = append(out, tm.m.RuleGroups()...)
	}
	slices.SortStableFunc(out, func(a, b *rules.Group) int {
		return cmp.Or(strings.Compare(a.File(), b.File()), strings.Compare(a.Name(), b.Name()))
	})
	return out
}

// VisibleLogQLRuleGroups returns the LogQL groups among VisibleRuleGroups.
func (r *Ruler) VisibleLogQLRuleGroups(ctx context.Context) []*rules.Group {
	var out []*rules.Group
	for _, g := range r.VisibleRuleGroups(ctx) {
		if groupLanguage(g) == LogQL {
			out = append(out, g)
		}
	}
	return out
}

// AlertingRulesOf returns the alerting rules of groups, in their order
// (never nil).
func AlertingRulesOf(groups []*rules.Group) []*rules.AlertingRule {
	out := []*rules.AlertingRule{}
	for _, g := range groups {
		for _, rule := range g.Rules() {
			if ar, ok := rule.(*rules.AlertingRule); ok {
				out = append(out, ar)
			}
		}
	}
	return out
}

// contextTenant is the tenant a rule evaluating with ctx belongs to; ""
// when ctx is not restricted (multi-tenancy off).
func contextTenant(ctx context.Context) string {
	s, ok := tenant.FromContext(ctx)
	if !ok {
		return ""
	}
	id, _ := s.Single() // a manager's context names one tenant
	return id
}

// withAlertTenant returns ls with AlertTenantLabel set to id; ls itself
// for no tenant.
func withAlertTenant(ls labels.Labels, id string) labels.Labels {
	if id == "" {
		return ls
	}
	return labels.NewBuilder(ls).Set(AlertTenantLabel, id).Labels()
}

// anonymousManager is the anonymous tenant's manager (there always is one).
func (r *Ruler) anonymousManager() *rules.Manager { return (*r.managers.Load())[tenant.Anonymous] }

// applyAlerting points the notifiers at cfg's Alertmanagers: the
// anonymous tenant's, and with Options.AlertmanagerTenantHeader one per
// tenant with rules, each sending its tenant in X-Scope-OrgID. Called by
// ApplyConfig under mu.
func (r *Ruler) applyAlerting(cfg Config, tf tenantFiles) error {
	if !r.opts.AlertmanagerTenantHeader {
		return r.notifier.applyConfig(cfg, "")
	}
	if err := r.notifier.applyConfig(cfg, tenant.Anonymous); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(tf.files)) {
		if id == tenant.Anonymous {
			continue
		}
		r.nmu.RLock()
		n := r.tenantNotifiers[id]
		r.nmu.RUnlock()
		if n == nil {
			o := r.opts
			o.Registerer = nil // the anonymous tenant's notifier has the metrics
			o.Logger = r.opts.Logger.With("tenant", id)
			var err error
			if n, err = newNotifier(o); err != nil {
				return err
			}
			if err := n.applyConfig(cfg, id); err != nil {
				n.cancel()
				return err
			}
			if r.state.Load() == 1 {
				n.start(&r.wg)
				ctx, cancel := context.WithTimeout(r.ctx, syncWait)
				n.waitSynced(ctx) // before the tenant's manager runs (ApplyConfig)
				cancel()
			}
			r.nmu.Lock()
			if r.tenantNotifiers == nil {
				r.tenantNotifiers = map[string]*notifier{}
			}
			r.tenantNotifiers[id] = n
			r.nmu.Unlock()
			continue
		}
		if err := n.applyConfig(cfg, id); err != nil {
			return err
		}
	}
	return nil
}

// send queues alerts of tenant id ("" with multi-tenancy off) for
// Alertmanager: on the tenant's own notifier where it has one.
func (r *Ruler) send(id string, alerts ...*promnotifier.Alert) {
	r.nmu.RLock()
	n := r.tenantNotifiers[id]
	r.nmu.RUnlock()
	if n == nil {
		n = r.notifier
	}
	n.mgr.Send(alerts...)
}

package ruler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/query"
)

// Sentinel errors.
var (
	// ErrInvalidRules: a rule file does not load; the previous rules keep
	// running. The error names each file, line and reason.
	ErrInvalidRules = errors.New("invalid rule files")
	// errNoLogs: a LogQL rule runs on a Ruler without a log querier.
	errNoLogs = errors.New("no log store to evaluate LogQL rules")
)

// Ruler evaluates recording and alerting rules with Prometheus' rules
// manager over weft's storage and sends alerts to Alertmanager with
// Prometheus' notifier. PromQL groups run through weft's PromQL engine,
// LogQL groups through its LogQL engine, in the same manager: both show in
// RuleGroups and write their results and their ALERTS series to the metric
// store.
//
// New builds it, ApplyConfig loads (and later reloads) the rule files and
// the Alertmanagers, Start starts evaluating, Stop stops and waits for
// every goroutine it started. Methods are safe for concurrent use;
// ApplyConfig calls are serialized.
type Ruler struct {
	opts     Options
	loader   *loader
	notifier *notifier

	promQuery rules.QueryFunc
	logQuery  rules.QueryFunc

	// managerOpts holds what every tenant's manager shares: the notify
	// function, the group metrics (registered once), the parser and the
	// default query offset (tenants.go).
	managerOpts rules.ManagerOptions
	// managers are the rules managers by tenant (tenants.go): the
	// anonymous tenant's always, another tenant's from the first
	// ApplyConfig that gives it rules on. The map is replaced, never
	// changed, under mu, and read without it.
	managers atomic.Pointer[map[string]*rules.Manager]
	// tenantNotifiers are the notifiers of tenants other than the
	// anonymous one with Options.AlertmanagerTenantHeader (tenants.go);
	// added under mu and nmu, read under nmu.
	nmu             sync.RWMutex
	tenantNotifiers map[string]*notifier

	// cfg is the applied Config; queryOffset is its QueryOffset, read by
	// the managers on every evaluation.
	mu          sync.Mutex
	cfg         Config
	queryOffset atomic.Int64

	ctx    context.Context // the managers': cancelled by Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	state  atomic.Int32 // 0 new, 1 started, 2 stopped
}

// New returns a Ruler over opts' sources with no rules; ApplyConfig loads
// them.
func New(opts Options) (*Ruler, error) {
	if opts.Appendable == nil || opts.Queryable == nil || opts.Engine == nil {
		return nil, errors.New("ruler: Options.Appendable, Queryable and Engine are required")
	}
	if opts.AlertmanagerTenantHeader && !opts.MultiTenant {
		return nil, errors.New("ruler: Options.AlertmanagerTenantHeader needs MultiTenant")
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Ruler{
		opts:      opts,
		loader:    &loader{promql: query.NewParser(), logger: opts.Logger, lang: map[string]Language{}, shard: opts.Shard},
		promQuery: rules.EngineQueryFunc(opts.Engine, opts.Queryable),
		logQuery:  logqlQueryFunc(opts.Logs),
		ctx:       ctx,
		cancel:    cancel,
	}
	n, err := newNotifier(opts)
	if err != nil {
		cancel()
		return nil, err
	}
	r.notifier = n
	r.managerOpts = rules.ManagerOptions{
		NameValidationScheme:   model.UTF8Validation,
		NotifyFunc:             notifyFunc(opts.ExternalURL, newExplainer(opts), r.send),
		Metrics:                rules.NewGroupMetrics(opts.Registerer),
		DefaultRuleQueryOffset: func() time.Duration { return time.Duration(r.queryOffset.Load()) },
		Parser:                 query.NewParser(),
	}
	r.managers.Store(&map[string]*rules.Manager{tenant.Anonymous: r.newManager(tenant.Anonymous)})
	return r, nil
}

// query is the managers' QueryFunc: the group's language picks the engine.
func (r *Ruler) query(ctx context.Context, q string, t time.Time) (promql.Vector, error) {
	if contextLanguage(ctx) == LogQL {
		return r.logQuery(ctx, q, t)
	}
	return r.promQuery(ctx, q, t)
}

// ApplyConfig loads cfg's rule files and Alertmanagers. When a rule file is
// invalid it returns an error wrapping ErrInvalidRules that names every
// problem (file, line, reason), and the rules and Alertmanagers applied
// before keep running unchanged.
func (r *Ruler) ApplyConfig(cfg Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applyLocked(cfg)
}

// Reshard applies the configuration in force again, so that the groups
// Options.Shard picks now are the ones evaluated: a group gained starts
// (restoring its alerts' for state from ALERTS_FOR_STATE), a group lost
// stops.
func (r *Ruler) Reshard() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applyLocked(r.cfg)
}

func (r *Ruler) applyLocked(cfg Config) error {
	if r.state.Load() == 2 {
		return errors.New("ruler stopped")
	}
	if cfg.EvaluationInterval <= 0 {
		cfg.EvaluationInterval = DefaultEvaluationInterval
	}
	tf, err := expandTenants(cfg, r.opts.MultiTenant, r.opts.Logs != nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range slices.Sorted(maps.Keys(tf.lang)) {
		_, ferrs := checkFile(f, tf.lang[f], r.opts.Logger)
		errs = append(errs, ferrs...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w (previous rules keep running):\n%w", ErrInvalidRules, errors.Join(errs...))
	}
	if err := r.applyAlerting(cfg, tf); err != nil {
		return fmt.Errorf("apply alerting config: %w", err)
	}
	r.loader.lang = tf.lang
	r.queryOffset.Store(int64(cfg.QueryOffset))
	ms := maps.Clone(*r.managers.Load())
	for id := range tf.files {
		if ms[id] == nil {
			m := r.newManager(id)
			ms[id] = m
			if r.state.Load() == 1 {
				r.wg.Go(m.Run)
			}
		}
	}
	r.managers.Store(&ms)
	// A tenant without files any more keeps its manager, with no groups:
	// its series are marked stale as a removed group's are.
	for _, id := range slices.Sorted(maps.Keys(ms)) {
		if err := ms[id].Update(cfg.EvaluationInterval, tf.files[id], cfg.ExternalLabels, r.opts.ExternalURL.String(), evalIteration); err != nil {
			// The files were valid a moment ago; one changed since.
			return fmt.Errorf("%w: %w", ErrInvalidRules, err)
		}
	}
	r.cfg = cfg
	return nil
}

// expandFiles resolves one tenant's globs into files (sorted, each once)
// and the language of each.
func expandFiles(tr TenantRules, haveLogs bool) ([]string, map[string]Language, error) {
	lang := map[string]Language{}
	var files []string
	for _, list := range []struct {
		globs []string
		lang  Language
	}{{tr.RuleFiles, PromQL}, {tr.LogQLRuleFiles, LogQL}} {
		for _, pat := range list.globs {
			matches, err := filepath.Glob(pat)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: rule file pattern %q: %w", ErrInvalidRules, pat, err)
			}
			for _, f := range matches {
				if l, ok := lang[f]; ok {
					if l != list.lang {
						return nil, nil, fmt.Errorf("%w: %s matches both a PromQL and a LogQL rule file pattern", ErrInvalidRules, f)
					}
					continue
				}
				if list.lang == LogQL && !haveLogs {
					return nil, nil, fmt.Errorf("%w: %s: %w", ErrInvalidRules, f, errNoLogs)
				}
				lang[f] = list.lang
				files = append(files, f)
			}
		}
	}
	slices.Sort(files)
	return files, lang, nil
}

// Config returns the Config last applied successfully.
func (r *Ruler) Config() Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg
}

// Start starts evaluating the rules (those applied so far and those applied
// later) and sending alerts. Call it once the storage is ready.
func (r *Ruler) Start() {
	// Under mu: ApplyConfig runs the managers it adds once started, and
	// each manager must run once.
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.state.CompareAndSwap(0, 1) {
		return
	}
	r.notifier.start(&r.wg)
	r.nmu.RLock()
	ns := slices.Collect(maps.Values(r.tenantNotifiers))
	r.nmu.RUnlock()
	for _, n := range ns {
		n.start(&r.wg)
	}
	// An alert that fires before its notifier knows the Alertmanagers
	// would not be sent until its resend.
	ctx, cancel := context.WithTimeout(r.ctx, syncWait)
	defer cancel()
	for _, n := range append(ns, r.notifier) {
		n.waitSynced(ctx)
	}
	for _, m := range *r.managers.Load() {
		r.wg.Go(m.Run)
	}
}

// Stop stops evaluating, sends what the notifier still queues (bounded by
// each Alertmanager's timeout) and waits for every goroutine the Ruler
// started. Idempotent.
func (r *Ruler) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.state.Swap(2)
	if prev == 2 {
		return
	}
	// In-flight queries end now rather than at their timeout.
	r.cancel()
	ms := *r.managers.Load()
	if prev == 0 {
		// Never started: the groups an ApplyConfig loaded wait for their
		// manager's Run; run it so that Stop ends them.
		for _, m := range ms {
			r.wg.Go(m.Run)
		}
	}
	for _, m := range ms {
		m.Stop()
	}
	r.notifier.stop()
	r.nmu.RLock()
	for _, n := range r.tenantNotifiers {
		n.stop()
	}
	r.nmu.RUnlock()
	r.wg.Wait()
}

// RuleGroups returns every loaded group of every tenant, PromQL and LogQL,
// by file and name (rules.Manager's order). Part of Prometheus'
// v1.RulesRetriever; the API reads VisibleRuleGroups (tenants.go).
func (r *Ruler) RuleGroups() []*rules.Group { return r.VisibleRuleGroups(context.Background()) }

// AlertingRules returns every alerting rule of every tenant. Part of
// v1.RulesRetriever.
func (r *Ruler) AlertingRules() []*rules.AlertingRule { return AlertingRulesOf(r.RuleGroups()) }

// LogQLRuleGroups returns the groups whose expressions are LogQL, in
// RuleGroups' order (the Loki ruler API lists only those).
func (r *Ruler) LogQLRuleGroups() []*rules.Group {
	return r.VisibleLogQLRuleGroups(context.Background())
}

// Alertmanagers returns the alert endpoints currently sent to. Part of
// Prometheus' v1.AlertmanagerRetriever.
func (r *Ruler) Alertmanagers() []*url.URL { return r.notifier.mgr.Alertmanagers() }

// DroppedAlertmanagers returns the endpoints relabelling dropped.
func (r *Ruler) DroppedAlertmanagers() []*url.URL { return r.notifier.mgr.DroppedAlertmanagers() }

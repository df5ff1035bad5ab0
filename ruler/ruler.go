package ruler

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"

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
	manager  *rules.Manager
	loader   *loader
	notifier *notifier

	promQuery rules.QueryFunc
	logQuery  rules.QueryFunc

	// cfg is the applied Config; queryOffset is its QueryOffset, read by
	// the manager on every evaluation.
	mu          sync.Mutex
	cfg         Config
	queryOffset atomic.Int64

	ctx    context.Context // the manager's: cancelled by Stop
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
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Ruler{
		opts:      opts,
		loader:    &loader{promql: query.NewParser(), logger: opts.Logger, lang: map[string]Language{}},
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
	r.manager = rules.NewManager(&rules.ManagerOptions{
		NameValidationScheme:     model.UTF8Validation,
		ExternalURL:              opts.ExternalURL,
		QueryFunc:                r.query,
		NotifyFunc:               n.notifyFunc(opts.ExternalURL, newExplainer(opts)),
		Context:                  ctx,
		AppendableV2:             opts.Appendable,
		Queryable:                opts.Queryable,
		Logger:                   opts.Logger.With("component", "rule manager"),
		Registerer:               opts.Registerer,
		OutageTolerance:          opts.OutageTolerance,
		ForGracePeriod:           opts.ForGracePeriod,
		ResendDelay:              opts.ResendDelay,
		GroupLoader:              r.loader,
		DefaultRuleQueryOffset:   func() time.Duration { return time.Duration(r.queryOffset.Load()) },
		RuleDependencyController: noDependencies{},
		Parser:                   query.NewParser(),
	})
	return r, nil
}

// query is the manager's QueryFunc: the group's language picks the engine.
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
	if r.state.Load() == 2 {
		return errors.New("ruler stopped")
	}
	if cfg.EvaluationInterval <= 0 {
		cfg.EvaluationInterval = DefaultEvaluationInterval
	}
	files, lang, err := expandFiles(cfg, r.opts.Logs != nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		_, ferrs := checkFile(f, lang[f], r.opts.Logger)
		errs = append(errs, ferrs...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w (previous rules keep running):\n%w", ErrInvalidRules, errors.Join(errs...))
	}
	if err := r.notifier.applyConfig(cfg); err != nil {
		return fmt.Errorf("apply alerting config: %w", err)
	}
	r.loader.lang = lang
	r.queryOffset.Store(int64(cfg.QueryOffset))
	if err := r.manager.Update(cfg.EvaluationInterval, files, cfg.ExternalLabels, r.opts.ExternalURL.String(), evalIteration); err != nil {
		// The files were valid a moment ago; one changed since.
		return fmt.Errorf("%w: %w", ErrInvalidRules, err)
	}
	r.cfg = cfg
	return nil
}

// expandFiles resolves cfg's globs into files (sorted, each once) and the
// language of each.
func expandFiles(cfg Config, haveLogs bool) ([]string, map[string]Language, error) {
	lang := map[string]Language{}
	var files []string
	for _, list := range []struct {
		globs []string
		lang  Language
	}{{cfg.RuleFiles, PromQL}, {cfg.LogQLRuleFiles, LogQL}} {
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
	if !r.state.CompareAndSwap(0, 1) {
		return
	}
	r.notifier.start(&r.wg)
	r.wg.Go(r.manager.Run)
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
	if prev == 1 {
		r.manager.Stop()
	}
	r.notifier.stop()
	r.wg.Wait()
}

// RuleGroups returns every loaded group, PromQL and LogQL, by file and name
// (rules.Manager's order). Part of Prometheus' v1.RulesRetriever.
func (r *Ruler) RuleGroups() []*rules.Group { return r.manager.RuleGroups() }

// AlertingRules returns every alerting rule. Part of v1.RulesRetriever.
func (r *Ruler) AlertingRules() []*rules.AlertingRule { return r.manager.AlertingRules() }

// LogQLRuleGroups returns the groups whose expressions are LogQL, in
// RuleGroups' order (the Loki ruler API lists only those).
func (r *Ruler) LogQLRuleGroups() []*rules.Group {
	var out []*rules.Group
	for _, g := range r.manager.RuleGroups() {
		if groupLanguage(g) == LogQL {
			out = append(out, g)
		}
	}
	return out
}

// Alertmanagers returns the alert endpoints currently sent to. Part of
// Prometheus' v1.AlertmanagerRetriever.
func (r *Ruler) Alertmanagers() []*url.URL { return r.notifier.mgr.Alertmanagers() }

// DroppedAlertmanagers returns the endpoints relabelling dropped.
func (r *Ruler) DroppedAlertmanagers() []*url.URL { return r.notifier.mgr.DroppedAlertmanagers() }

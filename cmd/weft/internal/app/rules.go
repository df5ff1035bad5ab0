package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/ruler"
)

// RulesOptions configure rule evaluation and alerting (package ruler).
type RulesOptions struct {
	// Config is the rule files and Alertmanagers to start with. No rule
	// files means no rules are evaluated (the rules API answers empty).
	Config ruler.Config
	// Ruler holds the settings a reload does not change: the external URL
	// of generatorURL, `for` restore tolerances, resend delay, queue
	// capacity. Its storage and engine fields are set by the App.
	Ruler ruler.Options
	// Reload returns the configuration to apply on POST /-/reload and on
	// each value of ReloadSignal (the command line re-reads its config
	// file); nil re-applies Config, which re-reads the rule files. Its
	// errors are reported as the operator's: previous rules keep running.
	Reload func() (ruler.Config, error)
	// ReloadSignal reloads on every value received (cmd/weft sends SIGHUP
	// here); nil never.
	ReloadSignal <-chan os.Signal
}

// DefaultRulesOptions returns the ruler's defaults and no rules.
func DefaultRulesOptions() RulesOptions {
	return RulesOptions{Ruler: ruler.DefaultOptions()}
}

// rulesState is the App's part for rules: the ruler and the goroutine that
// reloads it on a signal. Built by newRules, started by start, stopped by
// stop (once).
type rulesState struct {
	opts   RulesOptions
	ruler  *ruler.Ruler
	logger *slog.Logger
	done   chan struct{}
	wg     chan struct{} // closed when the signal goroutine returned
	// reloadLimits, when set, reloads the per-tenant limits with the
	// rules (one reload re-reads the whole file's reloadable part).
	reloadLimits func() error
}

// limitsReloader applies load's limits to lim; nil without load.
func limitsReloader(lim *api.Limiter, load func() (api.LimitsConfig, error)) func() error {
	if load == nil {
		return nil
	}
	return func() error {
		cfg, err := load()
		if err == nil {
			err = lim.Apply(cfg)
		}
		if err != nil {
			return fmt.Errorf("%w: tenant limits: %w", api.ErrInvalidConfig, err)
		}
		return nil
	}
}

// newRules builds the ruler over the App's stores and engines and applies
// the initial configuration: an invalid rule file fails start-up.
// ruleStore is what rules read and write: a node's store, or a querier's
// fan-out and the ingest log (cluster.go).
type ruleStore struct {
	app promstorage.AppendableV2
	q   promstorage.Queryable
}

func newRules(opts RulesOptions, st ruleStore, engine promql.QueryEngine, logs ruler.LogQuerier, reg prometheus.Registerer, logger *slog.Logger) (*rulesState, error) {
	ro := opts.Ruler
	ro.Appendable, ro.Queryable, ro.Engine, ro.Logs = st.app, st.q, engine, logs
	ro.Registerer = reg
	ro.Logger = logger.With("component", "ruler")
	r, err := ruler.New(ro)
	if err != nil {
		return nil, err
	}
	if err := r.ApplyConfig(opts.Config); err != nil {
		r.Stop()
		return nil, fmt.Errorf("load rules: %w", err)
	}
	return &rulesState{opts: opts, ruler: r, logger: logger, done: make(chan struct{}), wg: make(chan struct{})}, nil
}

// reload re-reads the configuration and applies it; what the operator got
// wrong wraps api.ErrInvalidConfig.
func (rs *rulesState) reload(context.Context) error {
	if rs.reloadLimits != nil {
		if err := rs.reloadLimits(); err != nil {
			rs.logger.Error("reload failed, previous limits and rules keep running", "err", err)
			return err
		}
	}
	cfg := rs.opts.Config
	if rs.opts.Reload != nil {
		c, err := rs.opts.Reload()
		if err != nil {
			return fmt.Errorf("%w: %w", api.ErrInvalidConfig, err)
		}
		cfg = c
	}
	if err := rs.ruler.ApplyConfig(cfg); err != nil {
		if errors.Is(err, ruler.ErrInvalidRules) {
			err = fmt.Errorf("%w: %w", api.ErrInvalidConfig, err)
		}
		rs.logger.Error("reload failed, previous rules keep running", "err", err)
		return err
	}
	rs.logger.Info("rules reloaded", "rule_files", len(cfg.RuleFiles), "logql_rule_files", len(cfg.LogQLRuleFiles), "tenants_with_rule_files", len(cfg.Tenants))
	return nil
}

// start starts evaluating and, with a ReloadSignal, reloading on it.
func (rs *rulesState) start() {
	if rs == nil { // a target without a store runs no rules (cluster.go)
		return
	}
	rs.ruler.Start()
	sig := rs.opts.ReloadSignal
	go func() {
		defer close(rs.wg)
		for {
			select {
			case <-rs.done:
				return
			case _, ok := <-sig:
				if !ok {
					return
				}
				_ = rs.reload(context.Background())
			}
		}
	}()
}

// stop stops the reload goroutine (if started) and the ruler, which drains
// its notification queue.
func (rs *rulesState) stop(started bool) {
	if rs == nil {
		return
	}
	close(rs.done)
	if started {
		<-rs.wg
	}
	rs.ruler.Stop()
}

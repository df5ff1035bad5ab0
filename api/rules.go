package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/prometheus/rules"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/weftdb/weft/ruler"
)

// RuleReader is what the rules and alerts endpoints read: the loaded rule
// groups, PromQL and LogQL, of the tenants a request acts as, and the
// Alertmanagers alerts go to. ruler.Ruler implements it. Safe for
// concurrent use.
type RuleReader interface {
	// VisibleRuleGroups returns the groups (by file, then name) of the
	// tenants ctx acts as (package index/tenant): the request's tenant's,
	// several for a federated request, every group when ctx is not
	// restricted (multi-tenancy off).
	VisibleRuleGroups(ctx context.Context) []*rules.Group
	// VisibleLogQLRuleGroups are those of them whose expressions are
	// LogQL, which the Loki ruler endpoints list.
	VisibleLogQLRuleGroups(ctx context.Context) []*rules.Group
	// Alertmanagers and DroppedAlertmanagers are Prometheus'
	// v1.AlertmanagerRetriever.
	Alertmanagers() []*url.URL
	DroppedAlertmanagers() []*url.URL
}

// ReloadFunc re-reads the configuration and applies it (POST /-/reload).
// An error wrapping ErrInvalidConfig is answered 400 with its text: the
// previous configuration keeps running.
type ReloadFunc func(ctx context.Context) error

// ErrInvalidConfig marks a reload that failed on what the operator wrote
// (a rule file, the config file); the ReloadFunc wraps it.
var ErrInvalidConfig = errors.New("invalid configuration")

// rulesRetriever is what Prometheus' API reads for /api/v1/rules and
// /api/v1/alerts: the rules of the request's tenants, or no rules.
func rulesRetriever(rr RuleReader) func(context.Context) v1.RulesRetriever {
	if rr == nil {
		return func(context.Context) v1.RulesRetriever { return noRules{} }
	}
	return func(ctx context.Context) v1.RulesRetriever { return visibleRules{rr: rr, ctx: ctx} }
}

// visibleRules is a v1.RulesRetriever over the groups of the tenants ctx
// acts as.
type visibleRules struct {
	rr  RuleReader
	ctx context.Context
}

func (v visibleRules) RuleGroups() []*rules.Group { return v.rr.VisibleRuleGroups(v.ctx) }

func (v visibleRules) AlertingRules() []*rules.AlertingRule {
	return ruler.AlertingRulesOf(v.RuleGroups())
}

// alertmanagerRetriever is what /api/v1/alertmanagers reads.
func alertmanagerRetriever(rr RuleReader) func(context.Context) v1.AlertmanagerRetriever {
	if rr == nil {
		return func(context.Context) v1.AlertmanagerRetriever { return noAlertmanagers{} }
	}
	return func(context.Context) v1.AlertmanagerRetriever { return rr }
}

// withRuleGroupAlias lets /api/v1/rules take group_name[] as well as
// Prometheus' rule_group[] (Grafana and the Loki/Mimir rulers name the
// group filter that way); h is Prometheus' handler for /api/v1/.
func withRuleGroupAlias(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/rules" {
			if q := r.URL.Query(); q.Has("group_name[]") {
				q["rule_group[]"] = append(q["rule_group[]"], q["group_name[]"]...)
				q.Del("group_name[]")
				r = r.Clone(r.Context())
				r.URL.RawQuery = q.Encode()
			}
		}
		h.ServeHTTP(w, r)
	})
}

// rulesRoutes are the Loki ruler's read endpoints for the LogQL rules and
// POST /-/reload. Without a RuleReader the Loki ruler endpoints answer as a
// ruler with no rules.
func (s *Server) rulesRoutes(opts Options) []route {
	lr := &lokiRules{rules: opts.Rules, logger: s.logger}
	add := func(rs []route, pattern string, h http.HandlerFunc) []route {
		// The handler label is the pattern's path: one per endpoint.
		name := pattern[strings.IndexByte(pattern, ' ')+1:]
		return append(rs, route{pattern: pattern, name: name, h: h, ready: true})
	}
	var rs []route
	rs = add(rs, "GET /prometheus/api/v1/rules", lr.promRules)
	rs = add(rs, "GET /prometheus/api/v1/alerts", lr.promAlerts)
	for _, prefix := range []string{"/loki/api/v1/rules", "/api/prom/rules"} {
		rs = add(rs, "GET "+prefix, lr.listRules)
		rs = add(rs, "GET "+prefix+"/{namespace}", lr.namespaceRules)
		rs = add(rs, "GET "+prefix+"/{namespace}/{group}", lr.groupRules)
		rs = add(rs, "POST "+prefix+"/{namespace}", lr.readOnly)
		rs = add(rs, "DELETE "+prefix+"/{namespace}", lr.readOnly)
		rs = add(rs, "DELETE "+prefix+"/{namespace}/{group}", lr.readOnly)
	}
	if opts.Reload != nil {
		reload := reloadHandler(opts.Reload)
		rs = add(rs, "POST /-/reload", reload.ServeHTTP)
		rs = add(rs, "PUT /-/reload", reload.ServeHTTP)
	}
	return rs
}

// reloadHandler answers POST /-/reload as Prometheus does (200 and an
// empty body), except that a configuration the operator got wrong is a
// 400 with the reason, not a 500: retrying does not help, fixing the file
// does.
func reloadHandler(reload ReloadFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := reload(r.Context())
		if err == nil {
			w.WriteHeader(http.StatusOK)
			return
		}
		code := http.StatusInternalServerError
		if errors.Is(err, ErrInvalidConfig) {
			code = http.StatusBadRequest
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "failed to reload config: "+err.Error()+"\n")
	})
}

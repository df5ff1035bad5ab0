package api

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/rules"
	"go.yaml.in/yaml/v3"
)

// The Loki ruler's endpoints over weft's LogQL rule groups:
//
//   - GET /prometheus/api/v1/rules and /prometheus/api/v1/alerts, which
//     Grafana's Loki datasource reads, in the Loki ruler's shape: Prometheus'
//     fields in Loki's order, the envelope's empty errorType and error, and
//     lastError always present;
//   - GET /loki/api/v1/rules[/{namespace}] (and the legacy /api/prom/rules),
//     the rule groups as YAML by namespace (the rule file).
//
// weft's rules come from files, like the Loki ruler's local store, so the
// endpoints that edit them, and reading one group, answer 400 with the
// local store's messages: Grafana reads "GetRuleGroup unsupported in rule
// local store" as "this ruler is read-only".

const (
	errLocalStoreGetGroup = "GetRuleGroup unsupported in rule local store"
	errLocalStoreEdit     = "unsupported in rule local store: weft reads rules from files; edit the file and POST /-/reload"
	errNoRuleGroups       = "no rule groups found"
)

type lokiRules struct {
	rules  RuleReader // nil: no rules
	logger *slog.Logger
}

// groups returns the LogQL groups of the tenants r acts as.
func (lr *lokiRules) groups(r *http.Request) []*rules.Group {
	if lr.rules == nil {
		return nil
	}
	return lr.rules.VisibleLogQLRuleGroups(r.Context())
}

// lokiEnvelope is the Loki ruler's response envelope.
type lokiEnvelope struct {
	Status    string `json:"status"`
	Data      any    `json:"data"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
}

type lokiRuleDiscovery struct {
	Groups []lokiRuleGroup `json:"groups"`
}

type lokiRuleGroup struct {
	Name           string    `json:"name"`
	File           string    `json:"file"`
	Rules          []any     `json:"rules"`
	Interval       float64   `json:"interval"`
	Limit          int       `json:"limit"`
	LastEvaluation time.Time `json:"lastEvaluation"`
	EvaluationTime float64   `json:"evaluationTime"`
}

type lokiAlertingRule struct {
	State          string           `json:"state"`
	Name           string           `json:"name"`
	Query          string           `json:"query"`
	Duration       float64          `json:"duration"`
	Labels         labels.Labels    `json:"labels"`
	Annotations    labels.Labels    `json:"annotations"`
	Alerts         []lokiAlert      `json:"alerts"`
	Health         rules.RuleHealth `json:"health"`
	LastError      string           `json:"lastError"`
	Type           string           `json:"type"`
	LastEvaluation time.Time        `json:"lastEvaluation"`
	EvaluationTime float64          `json:"evaluationTime"`
}

type lokiRecordingRule struct {
	Name           string           `json:"name"`
	Query          string           `json:"query"`
	Labels         labels.Labels    `json:"labels"`
	Health         rules.RuleHealth `json:"health"`
	LastError      string           `json:"lastError"`
	Type           string           `json:"type"`
	LastEvaluation time.Time        `json:"lastEvaluation"`
	EvaluationTime float64          `json:"evaluationTime"`
}

type lokiAlert struct {
	Labels      labels.Labels `json:"labels"`
	Annotations labels.Labels `json:"annotations"`
	State       string        `json:"state"`
	ActiveAt    *time.Time    `json:"activeAt"`
	Value       string        `json:"value"`
}

func (lr *lokiRules) respond(w http.ResponseWriter, code int, env lokiEnvelope) {
	b, err := json.Marshal(env)
	if err != nil {
		lr.logger.Error("encode response", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func (lr *lokiRules) badData(w http.ResponseWriter, err error) {
	lr.respond(w, http.StatusBadRequest, lokiEnvelope{Status: "error", ErrorType: "bad_data", Error: err.Error()})
}

// ruleFilter is the filters of the rules endpoints (Prometheus' names,
// and group_name[] as the Loki and Mimir rulers spell it).
type ruleFilter struct {
	alerts, recording bool
	names, groups     map[string]bool
	files             map[string]bool
}

func parseRuleFilter(r *http.Request) (ruleFilter, error) {
	if err := r.ParseForm(); err != nil {
		return ruleFilter{}, fmt.Errorf("error parsing form values: %w", err)
	}
	set := func(keys ...string) map[string]bool {
		m := map[string]bool{}
		for _, k := range keys {
			for _, v := range r.Form[k] {
				m[v] = true
			}
		}
		return m
	}
	f := ruleFilter{
		names:  set("rule_name[]"),
		groups: set("rule_group[]", "group_name[]"),
		files:  set("file[]"),
	}
	switch typ := strings.ToLower(r.Form.Get("type")); typ {
	case "":
		f.alerts, f.recording = true, true
	case "alert":
		f.alerts = true
	case "record":
		f.recording = true
	default:
		return f, fmt.Errorf("invalid parameter %q: not supported value %q", "type", typ)
	}
	return f, nil
}

func (lr *lokiRules) promRules(w http.ResponseWriter, r *http.Request) {
	f, err := parseRuleFilter(r)
	if err != nil {
		lr.badData(w, err)
		return
	}
	out := lokiRuleDiscovery{Groups: []lokiRuleGroup{}}
	for _, g := range lr.groups(r) {
		if len(f.groups) > 0 && !f.groups[g.Name()] || len(f.files) > 0 && !f.files[g.File()] {
			continue
		}
		lg := lokiRuleGroup{
			Name:           g.Name(),
			File:           g.File(),
			Rules:          []any{},
			Interval:       g.Interval().Seconds(),
			Limit:          g.Limit(),
			LastEvaluation: g.GetLastEvaluation(),
			EvaluationTime: g.GetEvaluationTime().Seconds(),
		}
		for _, rule := range g.Rules() {
			if len(f.names) > 0 && !f.names[rule.Name()] {
				continue
			}
			lastErr := ""
			if err := rule.LastError(); err != nil {
				lastErr = err.Error()
			}
			switch rule := rule.(type) {
			case *rules.AlertingRule:
				if !f.alerts {
					continue
				}
				lg.Rules = append(lg.Rules, lokiAlertingRule{
					State:          rule.State().String(),
					Name:           rule.Name(),
					Query:          rule.Query().String(),
					Duration:       rule.HoldDuration().Seconds(),
					Labels:         rule.Labels(),
					Annotations:    rule.Annotations(),
					Alerts:         lokiAlerts(rule.ActiveAlerts()),
					Health:         rule.Health(),
					LastError:      lastErr,
					Type:           "alerting",
					LastEvaluation: rule.GetEvaluationTimestamp(),
					EvaluationTime: rule.GetEvaluationDuration().Seconds(),
				})
			case *rules.RecordingRule:
				if !f.recording {
					continue
				}
				lg.Rules = append(lg.Rules, lokiRecordingRule{
					Name:           rule.Name(),
					Query:          rule.Query().String(),
					Labels:         rule.Labels(),
					Health:         rule.Health(),
					LastError:      lastErr,
					Type:           "recording",
					LastEvaluation: rule.GetEvaluationTimestamp(),
					EvaluationTime: rule.GetEvaluationDuration().Seconds(),
				})
			}
		}
		if len(lg.Rules) > 0 {
			out.Groups = append(out.Groups, lg)
		}
	}
	lr.respond(w, http.StatusOK, lokiEnvelope{Status: "success", Data: out})
}

func lokiAlerts(as []*rules.Alert) []lokiAlert {
	out := make([]lokiAlert, 0, len(as))
	for _, a := range as {
		out = append(out, lokiAlert{
			Labels:      a.Labels,
			Annotations: a.Annotations,
			State:       a.State.String(),
			ActiveAt:    &a.ActiveAt,
			Value:       strconv.FormatFloat(a.Value, 'e', -1, 64),
		})
	}
	return out
}

func (lr *lokiRules) promAlerts(w http.ResponseWriter, r *http.Request) {
	alerts := []lokiAlert{}
	for _, g := range lr.groups(r) {
		for _, rule := range g.Rules() {
			if ar, ok := rule.(*rules.AlertingRule); ok {
				alerts = append(alerts, lokiAlerts(ar.ActiveAlerts())...)
			}
		}
	}
	lr.respond(w, http.StatusOK, lokiEnvelope{Status: "success", Data: struct {
		Alerts []lokiAlert `json:"alerts"`
	}{alerts}})
}

// ruleGroupYAML is one group as a rule file holds it.
func ruleGroupYAML(g *rules.Group) rulefmt.RuleGroup {
	rg := rulefmt.RuleGroup{Name: g.Name(), Interval: model.Duration(g.Interval()), Limit: g.Limit()}
	if off := g.QueryOffset(); off != 0 {
		d := model.Duration(off)
		rg.QueryOffset = &d
	}
	for _, rule := range g.Rules() {
		r := rulefmt.Rule{Expr: rule.Query().String(), Labels: rule.Labels().Map()}
		if len(r.Labels) == 0 {
			r.Labels = nil
		}
		switch rule := rule.(type) {
		case *rules.AlertingRule:
			r.Alert = rule.Name()
			r.For = model.Duration(rule.HoldDuration())
			r.KeepFiringFor = model.Duration(rule.KeepFiringFor())
			if a := rule.Annotations(); a.Len() > 0 {
				r.Annotations = a.Map()
			}
		default:
			r.Record = rule.Name()
		}
		rg.Rules = append(rg.Rules, r)
	}
	return rg
}

func (lr *lokiRules) respondYAML(w http.ResponseWriter, v any) {
	b, err := yaml.Marshal(v)
	if err != nil {
		lr.logger.Error("encode rules", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// listRules answers every LogQL rule group as YAML by namespace (file).
func (lr *lokiRules) listRules(w http.ResponseWriter, r *http.Request) {
	out := map[string][]rulefmt.RuleGroup{}
	for _, g := range lr.groups(r) {
		out[g.File()] = append(out[g.File()], ruleGroupYAML(g))
	}
	if len(out) == 0 {
		http.Error(w, errNoRuleGroups, http.StatusNotFound)
		return
	}
	lr.respondYAML(w, out)
}

// namespaceRules answers one namespace's groups.
func (lr *lokiRules) namespaceRules(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("namespace")
	var out []rulefmt.RuleGroup
	for _, g := range lr.groups(r) {
		if g.File() == ns {
			out = append(out, ruleGroupYAML(g))
		}
	}
	if len(out) == 0 {
		http.Error(w, errNoRuleGroups, http.StatusNotFound)
		return
	}
	lr.respondYAML(w, map[string][]rulefmt.RuleGroup{ns: out})
}

// groupRules answers as the Loki ruler's local store does (plain text,
// like the other rule configuration endpoints).
func (lr *lokiRules) groupRules(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, errLocalStoreGetGroup, http.StatusBadRequest)
}

func (lr *lokiRules) readOnly(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, errLocalStoreEdit, http.StatusBadRequest)
}

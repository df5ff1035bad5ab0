package ruler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"

	"github.com/weftdb/weft/query"
)

// Language is the query language of a rule file's expressions.
type Language uint8

const (
	// PromQL rule files are Prometheus rule files.
	PromQL Language = iota
	// LogQL rule files are Loki ruler files: the same format, with LogQL
	// metric queries as expressions.
	LogQL
)

func (l Language) String() string {
	if l == LogQL {
		return "logql"
	}
	return "promql"
}

// logqlMarker prefixes the expressions of a LogQL file between the loader's
// Load and its Parse (the manager passes each rule's expression text from
// one to the other, and nothing else sees it). No PromQL expression starts
// with a NUL byte, so the two cannot be confused.
const logqlMarker = "\x00logql\x00"

// loader is the rules.GroupLoader of weft's manager: it reads a file as
// PromQL or LogQL depending on which list the file came from. lang is
// replaced by ApplyConfig before each Update, under the Ruler's mutex, and
// read only by Load, which the manager calls from Update; no locking beyond
// that is needed.
type loader struct {
	promql parser.Parser
	logger *slog.Logger
	lang   map[string]Language // file → language; absent means PromQL
	shard  func(file, group string) bool
}

// Load parses and validates one rule file: rulefmt's own checks (fields,
// names, templates, duplicate groups), with the expressions parsed by the
// file's language. Errors name the file, the line and column where rulefmt
// knows them, the group and the rule.
func (l *loader) Load(file string, ignoreUnknownFields bool, scheme model.ValidationScheme) (*rulefmt.RuleGroups, []error) {
	lang := l.lang[file]
	p := l.promql
	if lang == LogQL {
		p = logqlParser{l.promql}
	}
	rgs, errs := rulefmt.ParseFile(file, ignoreUnknownFields, scheme, p, l.logger)
	if len(errs) == 0 && l.shard != nil {
		rgs.Groups = slices.DeleteFunc(rgs.Groups, func(g rulefmt.RuleGroup) bool { return !l.shard(file, g.Name) })
	}
	if len(errs) > 0 || lang != LogQL {
		return rgs, errs
	}
	for gi := range rgs.Groups {
		for ri := range rgs.Groups[gi].Rules {
			r := &rgs.Groups[gi].Rules[ri]
			r.Expr = logqlMarker + r.Expr
		}
	}
	return rgs, nil
}

// Parse parses one rule expression as Load left it.
func (l *loader) Parse(q string) (parser.Expr, error) {
	if s, ok := strings.CutPrefix(q, logqlMarker); ok {
		return parseLogQLRule(s)
	}
	return l.promql.ParseExpr(q)
}

// noDependencies is the RuleDependencyController of weft's manager. The
// upstream default walks every expression with parser.Inspect, which panics
// on LogQL expressions; its result is only used to evaluate rules of a group
// concurrently, which weft does not enable (rules of a group run in order,
// as in Prometheus by default).
type noDependencies struct{}

func (noDependencies) AnalyseRules([]rules.Rule) {}

// languageKey is the context key under which a group's evaluation carries
// its language to the QueryFunc and the NotifyFunc.
type languageKey struct{}

// groupLanguage is the language of g's expressions. A group comes from one
// file, so its rules share one language.
func groupLanguage(g *rules.Group) Language {
	for _, r := range g.Rules() {
		if isLogQL(r.Query()) {
			return LogQL
		}
		return PromQL
	}
	return PromQL
}

// contextLanguage is the language withLanguage stored in ctx; PromQL when
// none (a query that does not come from a group's evaluation).
func contextLanguage(ctx context.Context) Language {
	l, _ := ctx.Value(languageKey{}).(Language)
	return l
}

// withLanguage returns ctx carrying g's language.
func withLanguage(ctx context.Context, g *rules.Group) context.Context {
	return context.WithValue(ctx, languageKey{}, groupLanguage(g))
}

// evalIteration is the manager's GroupEvalIterationFunc: upstream's, with
// the group's language and query offset in the context.
func evalIteration(ctx context.Context, g *rules.Group, ts time.Time) {
	ctx = context.WithValue(withLanguage(ctx, g), queryOffsetKey{}, g.QueryOffset())
	rules.DefaultEvalIterationFunc(ctx, g, ts)
}

type queryOffsetKey struct{}

// contextQueryOffset is the query offset of the group evaluating in ctx:
// its alerts fire at ts on the data of ts less the offset.
func contextQueryOffset(ctx context.Context) time.Duration {
	d, _ := ctx.Value(queryOffsetKey{}).(time.Duration)
	return d
}

// checkFile validates one rule file as Load does, without a manager, and
// returns what it holds.
func checkFile(file string, lang Language, logger *slog.Logger) (*rulefmt.RuleGroups, []error) {
	if _, err := os.Stat(file); err != nil {
		return nil, []error{fmt.Errorf("%s: %w", file, err)}
	}
	l := &loader{promql: query.NewParser(), logger: logger, lang: map[string]Language{file: lang}}
	rgs, errs := l.Load(file, false, model.UTF8Validation)
	if len(errs) > 0 {
		return nil, errs
	}
	// rulefmt validated each expression already; Parse is what the
	// manager calls next, so a disagreement would show here.
	for _, g := range rgs.Groups {
		for i, r := range g.Rules {
			if _, err := l.Parse(r.Expr); err != nil {
				errs = append(errs, fmt.Errorf("%s: group %q, rule %d: %w", file, g.Name, i+1, err))
			}
		}
	}
	return rgs, errs
}

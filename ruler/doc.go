// Package ruler evaluates recording and alerting rules over weft's storage
// and sends alerts to Alertmanager.
//
// It embeds Prometheus' own rules manager (github.com/prometheus/prometheus/rules)
// and notifier, so a Prometheus rule file behaves on weft as on Prometheus:
// groups, interval, limit, query_offset, for, keep_firing_for, templated
// labels and annotations, recording results appended to weft's store with
// staleness markers, ALERTS and ALERTS_FOR_STATE series, and the `for`
// state restored from ALERTS_FOR_STATE after a restart.
//
// Rule files whose expressions are LogQL metric queries (Loki ruler files)
// load into the same manager: the group loader parses them with weft's
// LogQL parser into an adapter that satisfies parser.Expr, each group's
// evaluation carries its language in the context, and the QueryFunc sends
// LogQL groups to query/logql. Their results and alert series land in the
// metric store like any other rule's.
//
// Rule groups belong to tenants (docs/tenancy.md, "Rules and alerts"):
// each tenant's run in a rules manager of its own whose context acts as
// that tenant, so they read and write only its data, and the read side
// (VisibleRuleGroups) shows a request only its tenants' groups.
//
// Files: ruler.go (the Ruler: New, ApplyConfig, Start, Stop, the
// retrievers the HTTP API reads), tenants.go (rule files and managers per
// tenant, the tenant of alerts), options.go (Options, Config), loader.go
// (the group loader and languages), logql.go (the LogQL adapter and query
// function), notify.go (notifier and Alertmanager discovery),
// investigate.go (firing alerts handed to an Investigator, kept as
// incidents, and the opted-in ones' probable cause added to their
// annotations), check.go
// (validation for `weft check-rules`), unittest*.go (a runner for rule unit
// tests in the `promtool test rules` format, over weft's own storage and
// engines).
package ruler

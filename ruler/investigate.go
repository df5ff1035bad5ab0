package ruler

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/rules"
)

// Investigator is what the ruler hands alerts to when they start firing
// (the app wires package investigate in): it keeps each as an incident,
// and for the alerts whose rule opts in it investigates and answers the
// top-ranked cause, which the notification then carries. Implementations
// are safe for concurrent use and honour ctx, which bounds one call
// (Options.InvestigateTimeout) and, with multi-tenancy on, acts as the
// alert's tenant (package index/tenant): what the Investigator keeps and
// reads with it is that tenant's.
type Investigator interface {
	AlertFiring(ctx context.Context, a FiringAlert) (Explanation, error)
}

// FiringAlert is one alert that started firing.
type FiringAlert struct {
	Labels labels.Labels
	// Expr is the rule's expression, in Language.
	Expr     string
	Language Language
	// ActiveAt is when the alert became active, FiredAt when it started
	// firing. At is the time of the data it fired on, FiredAt less the
	// group's query_offset: the time to investigate at.
	ActiveAt, FiredAt, At time.Time
	// Investigate says the rule opted in (OptInName): answer the probable
	// cause. Otherwise the alert is only kept.
	Investigate bool
}

// Explanation is an investigation's answer for one alert.
type Explanation struct {
	// Cause is the top-ranked cause in one sentence ("node-6 NVLink
	// degradation — probable cause of stall"); empty when none was found.
	Cause string
}

// Annotations and the opt-in of alerts that carry their probable cause.
const (
	// OptInName is the annotation (or label) with which a rule asks for
	// its alerts to carry their probable cause: weft_investigate: "true".
	OptInName = "weft_investigate"
	// CauseAnnotation holds the top-ranked cause.
	CauseAnnotation = "probable_cause"
	// InvestigationAnnotation links to the whole investigation.
	InvestigationAnnotation = "investigation_url"
)

// maxExplained bounds the alerts whose answer is remembered; beyond it the
// oldest entries are forgotten (they are investigated again if they are
// still firing at their next resend).
const maxExplained = 10_000

// explainer adds the probable cause to the notifications of opted-in
// alerts and hands every alert that starts firing to the Investigator once
// per firing: each alert (labels and active time) is investigated once,
// and its answer re-used on every resend until it resolves. Safe for
// concurrent use (each group evaluates in its own goroutine).
type explainer struct {
	inv      Investigator
	timeout  time.Duration
	perEval  int
	external string
	logger   *slog.Logger

	mu   sync.Mutex
	seen map[alertKey]explained
}

// alertKey names one firing of one alert of one tenant (two tenants' rules
// may well raise alerts with equal labels at the same time).
type alertKey struct {
	tenant   string
	labels   uint64
	activeAt int64
}

type explained struct {
	cause string
	url   string
	added time.Time
}

func newExplainer(opts Options) *explainer {
	if opts.Investigator == nil {
		return nil
	}
	return &explainer{
		inv: opts.Investigator, timeout: opts.InvestigateTimeout, perEval: opts.MaxInvestigationsPerEval,
		external: strings.TrimSuffix(opts.ExternalURL.String(), "/"),
		logger:   opts.Logger.With("component", "alert investigation"), seen: map[alertKey]explained{},
	}
}

// annotate returns the annotations to send for each of alerts (one rule's
// evaluation): those of opted-in firing alerts gain CauseAnnotation and
// InvestigationAnnotation. Alerts seen for the first time are handed to
// the Investigator; at most perEval of them are investigated in one call,
// the others on a later resend.
func (e *explainer) annotate(ctx context.Context, lang Language, expr string, alerts []*rules.Alert) []labels.Labels {
	out := make([]labels.Labels, len(alerts))
	budget := e.perEval
	id := contextTenant(ctx)
	for i, a := range alerts {
		out[i] = a.Annotations
		k := alertKey{tenant: id, labels: a.Labels.Hash(), activeAt: a.ActiveAt.UnixNano()}
		e.mu.Lock()
		ex, ok := e.seen[k]
		if ok && !a.ResolvedAt.IsZero() {
			delete(e.seen, k)
		}
		e.mu.Unlock()
		if !ok {
			if a.State != rules.StateFiring || !a.ResolvedAt.IsZero() {
				continue
			}
			optIn := optedIn(a)
			if optIn {
				if budget <= 0 {
					continue
				}
				budget--
			}
			ex = e.explain(ctx, lang, expr, a, optIn)
			e.remember(k, ex)
		}
		if ex.cause != "" {
			b := labels.NewBuilder(a.Annotations)
			b.Set(CauseAnnotation, ex.cause)
			b.Set(InvestigationAnnotation, ex.url)
			out[i] = b.Labels()
		}
	}
	return out
}

// explain hands a to the Investigator, bounded by the timeout.
func (e *explainer) explain(ctx context.Context, lang Language, expr string, a *rules.Alert, optIn bool) explained {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	t0 := time.Now()
	at := a.FiredAt.Add(-contextQueryOffset(ctx))
	res, err := e.inv.AlertFiring(ctx, FiringAlert{Labels: a.Labels, Expr: expr, Language: lang, ActiveAt: a.ActiveAt, FiredAt: a.FiredAt, At: at, Investigate: optIn})
	if err != nil {
		e.logger.Warn("alert not investigated", "alert", a.Labels.Get(labels.AlertName), "labels", a.Labels.String(), "seconds", time.Since(t0).Seconds(), "err", err)
		return explained{added: time.Now()}
	}
	ex := explained{cause: res.Cause, added: time.Now()}
	if optIn && res.Cause != "" {
		ex.url = e.investigationURL(a, at)
	}
	return ex
}

// investigationURL opens the alert's investigation in weft's API.
func (e *explainer) investigationURL(a *rules.Alert, at time.Time) string {
	b, _ := json.Marshal(a.Labels.Map())
	q := url.Values{"alert": {string(b)}, "time": {at.UTC().Format(time.RFC3339)}}
	return e.external + "/weft/api/v1/investigate?" + q.Encode()
}

func (e *explainer) remember(k alertKey, ex explained) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.seen) >= maxExplained {
		// Forget the oldest tenth.
		ages := make([]time.Time, 0, len(e.seen))
		for _, v := range e.seen {
			ages = append(ages, v.added)
		}
		slices.SortFunc(ages, time.Time.Compare)
		cut := ages[len(ages)/10]
		for key, v := range e.seen {
			if !v.added.After(cut) {
				delete(e.seen, key)
			}
		}
	}
	e.seen[k] = ex
}

// optedIn says a's rule asked for the probable cause (OptInName is "true"
// as an annotation or a label).
func optedIn(a *rules.Alert) bool {
	return a.Annotations.Get(OptInName) == "true" || a.Labels.Get(OptInName) == "true"
}

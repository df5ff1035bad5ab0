package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/prometheus/promql"

	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/investigate"
	"github.com/weftdb/weft/ruler"
	"github.com/weftdb/weft/storage"
)

// newInvestigator builds the investigation API's backend over the
// substrate's index and stores (docs/investigation.md), keeping incidents
// in the log store; nil for the stateless scale-out targets, which have no
// index.
func newInvestigator(sub *storage.Substrate, engine promql.QueryEngine, wl workload.Options, logger *slog.Logger) (*investigate.Investigator, error) {
	if sub == nil {
		return nil, nil
	}
	m, err := workload.New(wl)
	if err != nil {
		return nil, fmt.Errorf("investigate: workload context: %w", err)
	}
	iv, err := investigate.New(investigate.Options{
		Index: sub.Index(), Metrics: sub.Metrics(), Engine: engine, Logs: sub.Logs(), Incidents: sub.Logs(),
		Workload: m, Logger: logger.With("component", "investigate"),
	})
	if err != nil {
		return nil, err
	}
	return iv, nil
}

// alertInvestigator hands the ruler's firing alerts to investigate: an
// opted-in alert is investigated at the time of the data it fired on, with its
// labels as the symptom's workload (the investigation keeps it as an
// incident, with its causes); any other alert is kept as an incident with
// its labels.
type alertInvestigator struct{ iv *investigate.Investigator }

func (a alertInvestigator) AlertFiring(ctx context.Context, fa ruler.FiringAlert) (ruler.Explanation, error) {
	ls := fa.Labels.Map()
	if !fa.Investigate {
		_, err := a.iv.RecordAlert(ctx, investigate.AlertIncident{Labels: ls, ActiveAt: fa.ActiveAt, FiredAt: fa.At, Query: fa.Expr})
		return ruler.Explanation{}, err
	}
	// The rule's expression is not the symptom: it spans every workload
	// the rule watches, so weft picks the alerted workload's own.
	rep, err := a.iv.Investigate(ctx, investigate.Symptom{Alert: ls, Time: fa.At})
	if err != nil {
		return ruler.Explanation{}, err
	}
	if len(rep.Causes) == 0 {
		return ruler.Explanation{}, nil
	}
	return ruler.Explanation{Cause: rep.Causes[0].Summary}, nil
}

package app

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/prometheus/promql"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/investigate"
	"github.com/weftdb/weft/storage"
)

// newInvestigator builds the investigation API's backend over the
// substrate's index and stores (docs/investigation.md); nil for the
// stateless scale-out targets, which have no index.
func newInvestigator(sub *storage.Substrate, engine promql.QueryEngine, wl workload.Options, logger *slog.Logger) (api.Investigator, error) {
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

package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/common/model"
	promroute "github.com/prometheus/common/route"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/util/features"
	"github.com/prometheus/prometheus/util/notifications"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/weftdb/weft/query"
)

// Limits of Prometheus' API that weft keeps as they are.
const (
	// remoteReadSampleLimit, remoteReadConcurrency and remoteReadMaxFrame are
	// Prometheus' defaults for /api/v1/read (--storage.remote.read-*).
	remoteReadSampleLimit = 5e7
	remoteReadConcurrency = 10
	remoteReadMaxFrame    = 1 << 20
	// maxSearchLimit is Prometheus' default bound for the search endpoints.
	maxSearchLimit = 10000
)

// newPrometheusAPI mounts Prometheus' own HTTP API (web/api/v1) over weft's
// storage and returns it as a handler for the /api/v1/ prefix.
func newPrometheusAPI(opts Options, s *Server, instr *instrumentation) (http.Handler, error) {
	// An empty CORSOrigin matches only the empty origin, which Prometheus'
	// CORS code never answers: CORS is off.
	cors, err := regexp.Compile("^(?:" + opts.CORSOrigin + ")$")
	if err != nil {
		return nil, fmt.Errorf("compile cors origin %q: %w", opts.CORSOrigin, err)
	}
	bi := &v1.PrometheusVersion{
		Version:   opts.BuildInfo.Version,
		Revision:  opts.BuildInfo.Revision,
		Branch:    opts.BuildInfo.Branch,
		BuildUser: opts.BuildInfo.BuildUser,
		BuildDate: opts.BuildInfo.BuildDate,
		GoVersion: opts.BuildInfo.GoVersion,
	}
	if bi.GoVersion == "" {
		bi.GoVersion = runtime.Version()
	}
	flags := opts.Flags
	if flags == nil {
		flags = map[string]string{}
	}
	cfg := config.DefaultConfig
	started := s.started

	runtimeInfo := func() (v1.RuntimeInfo, error) {
		cwd, err := os.Getwd()
		if err != nil {
			cwd = "<error retrieving current working directory>"
		}
		host, err := os.Hostname()
		if err != nil {
			host = "<error retrieving hostname>"
		}
		retention := "unlimited"
		if opts.Retention > 0 {
			retention = model.Duration(opts.Retention).String()
		}
		return v1.RuntimeInfo{
			StartTime:           started,
			CWD:                 cwd,
			Hostname:            host,
			ServerTime:          time.Now().UTC(),
			ReloadConfigSuccess: true,
			LastConfigTime:      started,
			GoroutineCount:      runtime.NumGoroutine(),
			GOMAXPROCS:          runtime.GOMAXPROCS(0),
			GOMEMLIMIT:          debug.SetMemoryLimit(-1),
			GOGC:                os.Getenv("GOGC"),
			GODEBUG:             os.Getenv("GODEBUG"),
			StorageRetention:    retention,
		}, nil
	}

	ready := func(f http.HandlerFunc) http.HandlerFunc { return s.requireReady(f).ServeHTTP }

	api := v1.NewAPI(
		opts.Engine,
		opts.Storage,
		nil, // remote write is mounted by Server, not by Prometheus' handler
		opts.Storage,
		func(context.Context) v1.ScrapePoolsRetriever { return noScrape{} },
		func(context.Context) v1.TargetRetriever { return noScrape{} },
		alertmanagerRetriever(opts.Rules),
		func() config.Config { return cfg },
		flags,
		v1.GlobalURLOptions{},
		ready,
		&tsdbAdmin{admin: opts.Admin, card: opts.Cardinality},
		opts.DataDir,
		opts.EnableAdmin,
		false, // search endpoints: experimental upstream
		maxSearchLimit,
		opts.Logger,
		rulesRetriever(opts.Rules),
		remoteReadSampleLimit,
		remoteReadConcurrency,
		remoteReadMaxFrame,
		false, // not an agent
		cors,
		runtimeInfo,
		bi,
		func() []notifications.Notification { return []notifications.Notification{} },
		func() (<-chan notifications.Notification, func(), bool) { return nil, func() {}, false },
		withHeadChunks(opts.Gatherer, opts.Cardinality),
		nil, // remote read metrics are not registered
		nil, // default stats renderer
		false,
		nil,
		false, false, false, // OTLP is not served by this handler
		opts.LookbackDelta,
		false, // type and unit labels
		false, // append metadata
		nil,   // default error codes
		features.NewRegistry(),
		v1.OpenAPIOptions{Version: opts.BuildInfo.Version},
		query.NewParser(),
		false, // query cost estimation: experimental upstream
		opts.QueryTimeout,
	)

	// Large answers (vectors, matrices, /series) get weft's encoder; it
	// writes the same bytes as v1.JSONCodec, which answers the rest.
	api.ClearCodecs()
	api.InstallCodec(jsonCodec{})

	router := promroute.New().WithInstrumentation(func(name string, h http.HandlerFunc) http.HandlerFunc {
		return instr.wrap("/api/v1"+name, h).ServeHTTP
	})
	api.Register(router)
	return LimitPrometheusForm(remoteReadGuard(withRuleGroupAlias(fastGzip(http.StripPrefix("/api/v1", router)))), DefaultMaxFormBytes), nil
}

// noScrape answers the scrape-manager endpoints (targets, scrape pools) with
// empty lists: weft does not scrape.
type noScrape struct{}

func (noScrape) ScrapePools() []string                       { return []string{} }
func (noScrape) TargetsActive() map[string][]*scrape.Target  { return map[string][]*scrape.Target{} }
func (noScrape) TargetsDropped() map[string][]*scrape.Target { return map[string][]*scrape.Target{} }
func (noScrape) TargetsDroppedCounts() map[string]int        { return map[string]int{} }
func (noScrape) ScrapePoolConfig(string) (*config.ScrapeConfig, error) {
	return nil, errNoScrapePools
}

// noAlertmanagers answers /api/v1/alertmanagers with empty lists.
type noAlertmanagers struct{}

func (noAlertmanagers) Alertmanagers() []*url.URL        { return []*url.URL{} }
func (noAlertmanagers) DroppedAlertmanagers() []*url.URL { return []*url.URL{} }

// noRules answers /api/v1/rules and /api/v1/alerts when no ruler runs.
type noRules struct{}

func (noRules) RuleGroups() []*rules.Group           { return []*rules.Group{} }
func (noRules) AlertingRules() []*rules.AlertingRule { return []*rules.AlertingRule{} }

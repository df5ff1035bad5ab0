// Command weft is the weft server: one binary that stores metrics (and, in
// later releases, logs and traces) of GPU clusters and serves them over the
// Prometheus HTTP API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/model"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/cmd/weft/internal/app"
	"github.com/weftdb/weft/storage"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitStoreFailed (EX_SOFTWARE): the store hit an error it cannot go
	// on from (docs/operations.md#disk-full); a supervisor restarts weft,
	// which replays what was acknowledged.
	exitStoreFailed = 70
)

// version is set at build time with -ldflags "-X main.version=1.2.3" (the
// Makefile does, from git describe); without it the module version a
// `go install github.com/weftdb/weft/cmd/weft@v1.2.3` records is used, else
// devVersion. See buildVersion.
var version string

// devVersion is the version of a build that says none: semver, lower than
// any release.
const devVersion = "0.0.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run parses args, starts the server and serves until SIGINT or SIGTERM.
func run(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check-rules" {
		return runCheckRules(args[1:], os.Stdout, stderr)
	}
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, errConfigChecked) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "weft:", err)
		return exitUsage
	}
	setGCPercent(os.Getenv("GOGC"))
	setMemoryLimit(os.Getenv("GOMEMLIMIT"), opts.Storage.MemoryBudget)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP reloads the rules and alerting configuration, as in Prometheus.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	opts.Rules.ReloadSignal = hup
	if err := app.Run(ctx, opts); err != nil {
		opts.Logger.Error("weft failed", "err", err)
		if errors.Is(err, storage.ErrStoreFailed) {
			return exitStoreFailed
		}
		return exitError
	}
	return exitOK
}

// errConfigChecked ends parseFlags after -check-config found the file valid.
var errConfigChecked = errors.New("config checked")

// defaultGCPercent is weft's garbage-collection target when the GOGC
// environment variable is not set. Go's default, 100, lets the heap grow to
// twice the live data before collecting; a store's live data is mostly its
// head and index, so that is where most of its resident memory would go.
// 50 keeps the peak near 1.5x live (about a fifth less RSS with 300k series
// in weft-bench) for about 5% more CPU per ingested sample.
const defaultGCPercent = 50

// setGCPercent applies defaultGCPercent unless the operator chose GOGC.
func setGCPercent(env string) {
	if env == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// parseFlags turns the command line (and the -config file it names) into
// app.Options. Precedence: defaults < config file < flags given.
func parseFlags(args []string, stderr io.Writer) (app.Options, error) {
	opts := app.DefaultOptions()
	fs := flag.NewFlagSet("weft", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weft [flags]\n       weft check-rules [-logql] FILE...\n\nweft stores metrics of GPU clusters and serves the Prometheus HTTP API.\nDocumentation: docs/user-guide.md, docs/configuration.md, docs/rules.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.String("data-dir", opts.DataDir, "directory of the data: the database, the write-ahead log, the lock file")
	fs.String("http-addr", opts.HTTPAddr, "main HTTP listener: Prometheus API, remote write (/api/v1/write), Loki API, OTLP/HTTP (/otlp/v1/...), /metrics, /-/healthy, /-/ready")
	fs.String("otlp-grpc-addr", opts.OTLPGRPCAddr, "OTLP gRPC listener (the Export services of every signal); empty disables it")
	fs.String("otlp-http-addr", opts.OTLPHTTPAddr, "OTLP HTTP listener (/v1/metrics, /v1/logs, ...; the main listener also serves /otlp/v1/...); empty disables it")
	var (
		retention  = durationFlag(opts.Storage.Retention)
		retMetrics = durationFlag(0)
		retLogs    = durationFlag(0)
		retTraces  = durationFlag(0)
		checkCfg   = fs.String("check-config", "", "validate this configuration file (every key, value and the workload-context rules) and exit: 0 when valid, 2 with the reason when not")
		oooWindow  = durationFlag(opts.Storage.OutOfOrderWindow)
		configFile = fs.String("config", "", "YAML configuration file: every setting, including those no flag covers (limits, log store, workload-context mapping); flags given win; see docs/configuration.md")
		adminAPI   = fs.Bool("enable-admin-api", opts.EnableAdminAPI, "serve /api/v1/admin/tsdb/delete_series and clean_tombstones")
		webConfig  = fs.String("web.config.file", "", "web configuration file in Prometheus' exporter-toolkit format: TLS (with client certificates) and basic auth users, on every listener (docs/security.md)")
		corsOrigin = fs.String("web.cors.origin", "", "regular expression of the origins whose browser pages may read weft's answers (CORS), as Prometheus' -web.cors.origin; default: none (CORS off)")
		logLevel   = fs.String("log-level", "info", "log level: debug, info, warn, error")
		showVer    = fs.Bool("version", false, "print the version and exit")
		webPrefix  = fs.String("web.route-prefix", "", "prefix of every route (APIs, web UI, health, /metrics), as Prometheus' -web.route-prefix; default: the path of -web.external-url, else /")
		webExtURL  = fs.String("web.external-url", "", "URL users reach weft under, e.g. behind a reverse proxy (http://proxy/weft/); the web UI's links use its path")
		memBudget  = byteSizeFlag(0)
		walSync    = fs.Duration("wal-sync-interval", opts.Storage.WALSyncInterval, "fsync the write-ahead log this often; 0 fsyncs before acknowledging every write. Acknowledged writes survive a crash or kill -9 either way; a power loss can lose up to this much")
	)
	rules := registerRuleFlags(fs)
	fs.Var(&retention, "retention", "how long every signal's data is kept, by wall clock, e.g. 30d, 12h (Prometheus duration syntax)")
	fs.Var(&retMetrics, "retention.metrics", "how long metric samples are kept; default -retention")
	fs.Var(&retLogs, "retention.logs", "how long log lines are kept; default -retention")
	fs.Var(&retTraces, "retention.traces", "how long spans are kept; default -retention")
	fs.Var(&oooWindow, "out-of-order-window", "accept samples this much older than a series' newest sample, e.g. 10m")
	fs.Var(&memBudget, "memory-budget", "resident memory past which new series, log streams and trace resources are refused (429; existing ones are accepted), e.g. 4GiB; 0: 2/3 of the cgroup's memory limit, else of the machine's memory; negative: none")
	cluster := registerClusterFlags(fs, opts.Cluster) // config_cluster.go
	multiTenant := fs.Bool("multi-tenant", opts.Tenancy.Enabled, "require the tenant (X-Scope-OrgID header, gRPC metadata x-scope-orgid) on every ingest and query request and keep each tenant's data apart, as Mimir, Loki and Tempo do; off: one anonymous tenant (docs/tenancy.md)")
	federation := fs.Bool("tenant-federation.enabled", opts.Tenancy.Federation, "with -multi-tenant, let a query name several tenants (X-Scope-OrgID: a|b) and read all of their data")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *showVer {
		fmt.Fprintf(stderr, "weft %s (%s)\n", buildVersion(), runtime.Version())
		return opts, flag.ErrHelp
	}

	if *checkCfg != "" {
		c, err := loadConfigFile(*checkCfg)
		if err == nil {
			err = c.apply(&opts)
		}
		if err == nil {
			_, err = rules.rulesConfig(&c.rulesFileConfig, filepath.Dir(*checkCfg), map[string]bool{})
		}
		if err != nil {
			return opts, fmt.Errorf("config %s: %w", *checkCfg, err)
		}
		fmt.Fprintf(stderr, "config %s is valid\n", *checkCfg)
		return opts, errConfigChecked
	}
	logLevelFromFile := ""
	var rulesFile *rulesFileConfig
	if *configFile != "" {
		c, err := loadConfigFile(*configFile)
		if err != nil {
			return opts, err
		}
		if err := c.apply(&opts); err != nil {
			return opts, fmt.Errorf("config %s: %w", *configFile, err)
		}
		if c.Server.LogLevel != nil {
			logLevelFromFile = *c.Server.LogLevel
		}
		rulesFile = &c.rulesFileConfig
	}

	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, dst := range map[string]*string{"data-dir": &opts.DataDir, "http-addr": &opts.HTTPAddr, "otlp-grpc-addr": &opts.OTLPGRPCAddr, "otlp-http-addr": &opts.OTLPHTTPAddr} {
		if set[name] {
			*dst = fs.Lookup(name).Value.String()
		}
	}
	for name, v := range map[string]struct {
		dst *time.Duration
		src durationFlag
	}{
		"retention":         {&opts.Storage.Retention, retention},
		"retention.metrics": {&opts.Storage.SignalRetention.Metrics, retMetrics},
		"retention.logs":    {&opts.Storage.SignalRetention.Logs, retLogs},
		"retention.traces":  {&opts.Storage.SignalRetention.Traces, retTraces},
	} {
		if set[name] {
			*v.dst = time.Duration(v.src)
		}
	}
	if set["out-of-order-window"] {
		opts.Storage.OutOfOrderWindow = time.Duration(oooWindow)
	}
	if set["memory-budget"] {
		opts.Storage.MemoryBudget = int64(memBudget)
	}
	if opts.Storage.MemoryBudget == 0 {
		opts.Storage.MemoryBudget = defaultMemoryBudget()
	}
	if set["wal-sync-interval"] {
		if err := setWALSync(&opts.Storage, *walSync); err != nil {
			return opts, fmt.Errorf("invalid -wal-sync-interval %w", err)
		}
	}
	if err := cluster.apply(set, &opts); err != nil {
		return opts, err
	}
	opts.Web.RoutePrefix = *webPrefix
	opts.Web.ExternalURL = *webExtURL
	if set["enable-admin-api"] {
		opts.EnableAdminAPI = *adminAPI
	}
	if set["web.cors.origin"] {
		opts.CORSOrigin = *corsOrigin
	}
	if set["web.config.file"] {
		opts.Security.WebConfigFile = *webConfig
	}
	if set["multi-tenant"] {
		opts.Tenancy.Enabled = *multiTenant
	}
	if set["tenant-federation.enabled"] {
		opts.Tenancy.Federation = *federation
	}
	opts.ReloadTenantLimits = tenantLimitsReload(*configFile) // config_tenants.go
	if err := rules.applyRules(&opts, *configFile, rulesFile, set); err != nil {
		return opts, fmt.Errorf("rules: %w", err)
	}

	if set["log-level"] || logLevelFromFile == "" {
		logLevelFromFile = *logLevel
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevelFromFile)); err != nil {
		return opts, fmt.Errorf("invalid -log-level %q: %w", logLevelFromFile, err)
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	opts.Flags = map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { opts.Flags[f.Name] = redactURLPasswords(f.Value.String()) })
	opts.BuildInfo = buildInfo()
	cfgYAML, err := effectiveConfigYAML(opts, logLevelFromFile)
	if err != nil {
		return opts, err
	}
	opts.ConfigYAML = cfgYAML
	return opts, nil
}

// durationFlag is a flag.Value in Prometheus' duration syntax ("30d").
type durationFlag time.Duration

func (d *durationFlag) String() string { return model.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := model.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationFlag(v)
	return nil
}

// buildVersion returns the semver of this binary, without a leading "v":
// the -ldflags value, else the main module's version, else devVersion.
func buildVersion() string {
	if version != "" {
		return strings.TrimPrefix(version, "v")
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return strings.TrimPrefix(info.Main.Version, "v")
	}
	return devVersion
}

// buildInfo reports the version and the VCS state the binary was built from.
func buildInfo() api.BuildInfo {
	bi := api.BuildInfo{Version: buildVersion(), Revision: "unknown", Branch: "unknown", BuildUser: "unknown", BuildDate: "unknown", GoVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				bi.Revision = s.Value
			case "vcs.time":
				bi.BuildDate = s.Value
			}
		}
	}
	return bi
}

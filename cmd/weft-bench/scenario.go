package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/weftdb/weft/bench/scenario"
)

// scenarioUsage is the subcommand's synopsis.
const scenarioUsage = `usage: weft-bench scenario NAME [flags]
       weft-bench scenario -list

Generates an incident scenario (deterministic from -seed and -start) and
replays it into a weft through its public APIs: metrics by remote write,
logs by Loki push and OTLP/HTTP, traces by OTLP/HTTP (with -traces). The
ground truth is printed as JSON (or written to -truth). Without -target
nothing is sent. See docs/scenarios.md.`

// runScenario is `weft-bench scenario`; it returns the exit code.
func runScenario(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("weft-bench scenario", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, scenarioUsage)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	d := scenario.DefaultOptions()
	var (
		list, traces              bool
		seed                      int64
		start, target, otlp       string
		truthPath, org            string
		duration, onset, interval time.Duration
		scale                     string
		retryFor                  time.Duration
	)
	fs.BoolVar(&list, "list", false, "list the scenarios and exit")
	fs.Int64Var(&seed, "seed", d.Seed, "seed: the same seed and start give the same data")
	fs.StringVar(&start, "start", "", "first scrape, RFC 3339 (default: the last full hour minus -duration, so the data ends just before now)")
	fs.DurationVar(&duration, "duration", d.Duration, "generated window")
	fs.DurationVar(&onset, "onset", 0, "when the incident begins after -start (default 2h47m for windows of 3h or more, else two thirds of the window)")
	fs.DurationVar(&interval, "interval", d.Interval, "scrape interval of every metric")
	fs.StringVar(&scale, "scale", d.Scale, "background size: "+strings.Join(scenario.Scales(), ", "))
	fs.StringVar(&target, "target", "", "weft's HTTP base URL, e.g. http://127.0.0.1:9338 (empty: generate only)")
	fs.StringVar(&otlp, "otlp-url", "", "OTLP/HTTP base URL (default <target>/otlp; e.g. http://127.0.0.1:4318)")
	fs.BoolVar(&traces, "traces", false, "send the traces to <otlp-url>/v1/traces (off until the target has a trace receiver)")
	fs.StringVar(&org, "org-id", "", "X-Scope-OrgID header for a multi-tenant target")
	fs.StringVar(&truthPath, "truth", "", "write the ground truth JSON to this file instead of stdout")
	var cf clientFlags
	cf.register(fs) // TLS and credentials (client.go)
	fs.DurationVar(&retryFor, "retry-for", 30*time.Second, "how long one request is retried on 429, 5xx and network errors")
	// Flags may follow the name.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	if list {
		for _, n := range scenario.Names() {
			fmt.Fprintf(stdout, "%-22s %s\n", n, scenario.Summary(n))
		}
		return 0
	}
	if name == "" {
		fs.Usage()
		return 2
	}
	o := scenario.Options{Seed: seed, Duration: duration, Onset: onset, Interval: interval, Scale: scale}
	if start == "" {
		o.Start = time.Now().UTC().Truncate(time.Hour).Add(-duration)
	} else {
		t, err := time.Parse(time.RFC3339, start)
		if err != nil {
			fmt.Fprintf(stderr, "weft-bench scenario: -start %q: %v\n", start, err)
			return 2
		}
		o.Start = t
	}
	lg := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	began := time.Now()
	data, err := scenario.Generate(name, o)
	if err != nil {
		fmt.Fprintln(stderr, "weft-bench scenario:", err)
		if errors.Is(err, scenario.ErrUnknownScenario) || errors.Is(err, scenario.ErrBadOptions) {
			return 2
		}
		return 1
	}
	p, err := data.Encode(scenario.EncodeOptions{})
	if err != nil {
		fmt.Fprintln(stderr, "weft-bench scenario:", err)
		return 1
	}
	c := data.Counts()
	lg.Info("scenario_generated", "scenario", name, "seed", seed, "start", data.Options.Start.Format(time.RFC3339),
		"duration", data.Options.Duration, "onset", data.Truth.Onset.Format(time.RFC3339), "series", c.Series, "samples", c.Samples,
		"lines", c.Lines, "spans", c.Spans, "payload_bytes", p.Bytes(), "took", time.Since(began).Round(time.Millisecond))
	out := struct {
		Truth  scenario.GroundTruth `json:"ground_truth"`
		Counts scenario.Counts      `json:"counts"`
		Report *scenario.Report     `json:"replay,omitempty"`
	}{Truth: data.Truth, Counts: c}
	code := 0
	if target != "" {
		client, authz, err := cf.build(time.Minute)
		if err != nil {
			fmt.Fprintln(stderr, "weft-bench scenario:", err)
			return 2
		}
		t := scenario.Target{URL: target, OTLPURL: otlp, Client: client, Headers: map[string]string{}}
		if org != "" {
			t.Headers["X-Scope-OrgID"] = org
		}
		if authz != "" {
			t.Headers["Authorization"] = authz
		}
		rep, err := scenario.Replay(ctx, p, t, scenario.ReplayOptions{Traces: traces, RetryFor: retryFor, Logger: lg})
		out.Report = &rep
		if err != nil {
			fmt.Fprintln(stderr, "weft-bench scenario:", err)
			code = 1
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintln(stderr, "weft-bench scenario: encode truth:", err)
		return 1
	}
	if truthPath != "" {
		if err := os.WriteFile(truthPath, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "weft-bench scenario:", err)
			return 1
		}
		return code
	}
	fmt.Fprintln(stdout, string(b))
	return code
}

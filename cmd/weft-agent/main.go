// Command weft-agent collects NVIDIA GPU telemetry through NVML, attributes it
// to the workloads that hold each GPU, and exports it to weft (remote write,
// Loki push) and to scrapers (/metrics, a drop-in for dcgm-exporter).
// See docs/gpu-agent.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/weftdb/weft/gpuagent"
)

func main() { os.Exit(run(os.Args[1:])) }

// cliFlags are the flags that do not map one to one onto Options.
type cliFlags struct {
	naming, logLevel *string
}

func newFlagSet(opts *gpuagent.Options) (*flag.FlagSet, cliFlags) {
	fs := flag.NewFlagSet("weft-agent", flag.ContinueOnError)
	fs.StringVar(&opts.RemoteWriteURL, "remote-write-url", "", "remote-write receiver URL, e.g. http://weft:9338/api/v1/write (empty: off)")
	fs.StringVar(&opts.LokiURL, "loki-url", "", "Loki-compatible base URL for XID/ECC event lines, e.g. http://weft:9338 (empty: off)")
	fs.StringVar(&opts.ListenAddr, "listen-addr", opts.ListenAddr, "address for /metrics and /v1/register (empty: off)")
	fs.DurationVar(&opts.Interval, "interval", opts.Interval, "collection interval")
	naming := fs.String("naming", string(opts.Naming), "metric naming: dcgm (dcgm-exporter compatible) or otel (hw.gpu.*)")
	fs.StringVar(&opts.QueueDir, "queue-dir", opts.QueueDir, "directory of the on-disk remote-write queue")
	fs.Int64Var(&opts.QueueMaxBytes, "queue-max-bytes", opts.QueueMaxBytes, "byte cap of the queue; oldest requests are dropped beyond it")
	fs.StringVar(&opts.Hostname, "hostname", "", "Hostname label (default: the OS hostname)")
	fs.StringVar(&opts.Instance, "instance", "", "instance label of remote-written series (default: <hostname>:<port of -listen-addr>, as a Prometheus scrape would name it)")
	fs.BoolVar(&opts.Once, "once", false, "collect once, print to stdout and exit")
	fs.StringVar(&opts.Output, "output", opts.Output, "output of -once: text or json")
	fs.StringVar(&opts.ProcRoot, "proc-root", opts.ProcRoot, "proc filesystem to read process cgroups and environments from")
	fs.StringVar(&opts.PodResourcesSocket, "pod-resources-socket", opts.PodResourcesSocket, "kubelet pod-resources socket (missing: no Kubernetes attribution)")
	c := &opts.Client
	fs.StringVar(&c.TenantID, "tenant-id", "", "tenant sent as X-Scope-OrgID on remote write and Loki push (empty: none)")
	fs.StringVar(&c.TLSCAFile, "tls-ca-file", "", "PEM file of the CAs that sign weft's certificate (empty: system roots)")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", "", "client certificate (PEM) for mutual TLS; re-read when it changes")
	fs.StringVar(&c.TLSKeyFile, "tls-key-file", "", "client key (PEM) for mutual TLS; re-read when it changes")
	fs.StringVar(&c.TLSServerName, "tls-server-name", "", "name to check weft's certificate against (default: the URL's host)")
	fs.BoolVar(&c.TLSInsecureSkipVerify, "tls-insecure-skip-verify", false, "accept any server certificate (unsafe; for tests)")
	fs.StringVar(&c.BasicAuthUser, "basic-auth-user", "", "HTTP basic auth user for remote write and Loki push")
	fs.StringVar(&c.BasicAuthPasswordFile, "basic-auth-password-file", "", "file holding the basic auth password; re-read when it changes")
	fs.StringVar(&c.BearerTokenFile, "bearer-token-file", "", "file holding a bearer token for remote write and Loki push; re-read when it changes")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	return fs, cliFlags{naming: naming, logLevel: logLevel}
}

func run(args []string) int {
	opts := gpuagent.DefaultOptions()
	fs, cli := newFlagSet(&opts)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts.Naming = gpuagent.Naming(*cli.naming)
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*cli.logLevel)); err != nil {
		fmt.Fprintln(os.Stderr, "weft-agent: bad -log-level:", err)
		return 2
	}
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := gpuagent.Run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "weft-agent:", err)
		return 1
	}
	return 0
}

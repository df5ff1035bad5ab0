package gpuagent

import (
	"log/slog"
	"time"
)

// Naming selects the metric and label vocabulary of the exported series.
type Naming string

const (
	// NamingDCGM uses dcgm-exporter's names (DCGM_FI_DEV_*) and labels
	// (gpu, UUID, pci_bus_id, device, modelName, Hostname), so dashboards
	// built for dcgm-exporter work unchanged. The default.
	NamingDCGM Naming = "dcgm"
	// NamingOTel uses the OpenTelemetry hardware semantic conventions
	// (hw.gpu.*, hw.id, hw.model, ...).
	NamingOTel Naming = "otel"
)

// Options configures Run. Zero values are replaced by DefaultOptions' values
// where noted.
type Options struct {
	// RemoteWriteURL is the full URL of a remote-write receiver
	// (e.g. http://weft:9338/api/v1/write). Empty disables remote write.
	RemoteWriteURL string
	// LokiURL is the base URL of a Loki push receiver; events go to
	// <LokiURL>/loki/api/v1/push. Empty disables event logs.
	LokiURL string
	// Client is the tenant, TLS and credentials of both pushes. The zero
	// value is plain HTTP without credentials.
	Client ClientOptions
	// ListenAddr serves /metrics and /v1/register. Default ":9400"
	// (dcgm-exporter's port). Empty disables the listener.
	ListenAddr string
	// Interval between collections. Default 10s.
	Interval time.Duration
	// Naming of exported series. Default NamingDCGM.
	Naming Naming
	// QueueDir holds the remote-write segment files. Default
	// "./weft-agent-queue".
	QueueDir string
	// QueueMaxBytes caps the on-disk queue; the oldest segments are dropped
	// (and counted) beyond it. Default 256 MiB.
	QueueMaxBytes int64
	// Hostname is the Hostname label. Default os.Hostname().
	Hostname string
	// Instance is the instance label of remote-written series, the label a
	// Prometheus scrape of dcgm-exporter would give them. Default: host:port
	// of the bound listener, the host being the listen address when that is
	// one specific non-loopback address and Hostname otherwise
	// ("<Hostname>:9400" with the default ListenAddr); Hostname alone with
	// the listener off. /metrics never carries it: a scraper adds its own.
	Instance string
	// Once runs one collection, writes it to Stdout in Output format and
	// returns.
	Once bool
	// Output is the format of Once: "text" (exposition) or "json".
	Output string
	// ProcRoot is the /proc to read process cgroups and environments from.
	// Default "/proc".
	ProcRoot string
	// PodResourcesSocket is the kubelet pod-resources socket. Default
	// /var/lib/kubelet/pod-resources/kubelet.sock; a missing socket disables
	// Kubernetes attribution without error.
	PodResourcesSocket string
	// RegistrationTTL is the default lifetime of a /v1/register entry that
	// names no ttl_seconds. Default 5m.
	RegistrationTTL time.Duration
	// Logger receives the agent's logs; nil discards them.
	Logger *slog.Logger
}

// Tuning constants.
const (
	// defaultQueueMaxBytes bounds the disk the queue may use: at a few KiB per
	// collection of 8 GPUs this holds days of samples for a receiver outage.
	defaultQueueMaxBytes = 256 << 20
	// nvmlInitBackoffMax caps the wait between NVML Init retries: a driver
	// installed after the agent starts is picked up within this time.
	nvmlInitBackoffMax = 5 * time.Minute
	// nvmlInitBackoffMin is the first retry delay after a failed Init.
	nvmlInitBackoffMin = 5 * time.Second
)

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		ListenAddr:         ":9400",
		Interval:           10 * time.Second,
		Naming:             NamingDCGM,
		QueueDir:           "./weft-agent-queue",
		QueueMaxBytes:      defaultQueueMaxBytes,
		Output:             "text",
		ProcRoot:           "/proc",
		PodResourcesSocket: "/var/lib/kubelet/pod-resources/kubelet.sock",
		RegistrationTTL:    5 * time.Minute,
	}
}

func discardLogger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

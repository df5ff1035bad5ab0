package tracestore

import (
	"fmt"
	"log/slog"
	"time"
)

// DefaultIndexedAttributes are the span attributes kept, besides the
// intrinsics, in the light section of every page and in every block's value
// filter, so that searches on them skip blocks and read no heavy columns:
// the HTTP and RPC attributes that Grafana's search form and most dashboards
// filter on.
var DefaultIndexedAttributes = []string{
	"http.route",
	"http.request.method",
	"http.response.status_code",
	"http.method",
	"http.status_code",
	"rpc.service",
	"rpc.method",
	"error.type",
}

// Options configure a Store. The zero value of a field means its default.
type Options struct {
	// PartitionDuration is the time partition of blocks and the unit of
	// retention. Zero means the index's (the substrate passes its own); it
	// must not be longer than the index's.
	PartitionDuration time.Duration
	// Retention refuses, at Push, spans that ended before now minus
	// Retention (ErrTooOld): the substrate's retention clock would drop them
	// at its next pass. Zero or negative accepts every age. The substrate
	// sets it to the trace retention.
	Retention time.Duration
	// IndexedAttributes are the span attributes searchable without reading
	// heavy columns (see DefaultIndexedAttributes; nil takes the default,
	// an empty non-nil slice indexes none). Changing the list is safe: each
	// page records which attributes it indexes.
	IndexedAttributes []string
	// ResourceLabels maps resource attributes to the stream label the ingest
	// path always derives from them (service.name → service_name, the
	// first alias of each workload-context key → the key): a search
	// condition resource.<attr> = "v" then selects streams through the
	// shared index and skips blocks without them. Nil means
	// {"service.name": "service_name"}.
	ResourceLabels map[string]string
	// IdleTime is how long a trace must receive no spans before it may be
	// sealed into a block; a trace whose spans keep coming is sealed once it
	// is MaxTraceAge old and continues in the head. Default 10s, 1m.
	IdleTime, MaxTraceAge time.Duration
	// BlockInterval and BlockBytes decide when a block is cut from the
	// traces ready to seal: once BlockInterval has passed since the last
	// cut, or once they hold BlockBytes. Default 1 minute, 32 MiB.
	BlockInterval time.Duration
	BlockBytes    int
	// MaxHeadBytes makes the next maintenance pass seal every trace, ready
	// or not, once the head holds this much. Default 512 MiB.
	MaxHeadBytes int
	// PageBytes is the size of a block's pages before compression: a trace
	// lookup decodes one page per block holding the trace, so its cost grows
	// with the page; larger pages compress a little better. Default 64 KiB.
	PageBytes int
	// TraceWindow is how far apart in time the parts of one trace may lie
	// and still be assembled into one trace by searches (trace-by-ID reads
	// every block). Default 15 minutes.
	TraceWindow time.Duration
	// MaintenanceInterval is how often the background loop checks what to
	// seal. Default 5s; negative starts no goroutine (callers use Seal).
	MaintenanceInterval time.Duration
	// NoSealOnClose leaves the head in its recent records at Close (the
	// default seals it into blocks).
	NoSealOnClose bool
	// Admit, when set, is asked before every Push: an error refuses the
	// push with it (the substrate's free-space guard and failed state),
	// and Close then leaves the heads unsealed (they are durable in their
	// recent records). Nil admits everything.
	Admit func() error
	// Logger receives maintenance errors; nil is a no-op logger.
	Logger *slog.Logger
	// Now returns the current time; nil is time.Now. For tests.
	Now func() time.Time
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{
		IndexedAttributes:   DefaultIndexedAttributes,
		ResourceLabels:      map[string]string{"service.name": "service_name"},
		IdleTime:            10 * time.Second,
		MaxTraceAge:         time.Minute,
		BlockInterval:       time.Minute,
		BlockBytes:          32 << 20,
		MaxHeadBytes:        512 << 20,
		PageBytes:           64 << 10,
		TraceWindow:         15 * time.Minute,
		MaintenanceInterval: 5 * time.Second,
	}
}

func (o Options) withDefaults() (Options, error) {
	d := DefaultOptions()
	if o.PartitionDuration < 0 {
		return o, fmt.Errorf("negative partition duration %v", o.PartitionDuration)
	}
	if o.IndexedAttributes == nil {
		o.IndexedAttributes = d.IndexedAttributes
	}
	if o.ResourceLabels == nil {
		o.ResourceLabels = d.ResourceLabels
	}
	if o.IdleTime <= 0 {
		o.IdleTime = d.IdleTime
	}
	if o.MaxTraceAge <= 0 {
		o.MaxTraceAge = d.MaxTraceAge
	}
	if o.BlockInterval <= 0 {
		o.BlockInterval = d.BlockInterval
	}
	if o.BlockBytes <= 0 {
		o.BlockBytes = d.BlockBytes
	}
	if o.MaxHeadBytes <= 0 {
		o.MaxHeadBytes = d.MaxHeadBytes
	}
	if o.PageBytes <= 0 {
		o.PageBytes = d.PageBytes
	}
	if o.TraceWindow <= 0 {
		o.TraceWindow = d.TraceWindow
	}
	if o.MaintenanceInterval == 0 {
		o.MaintenanceInterval = d.MaintenanceInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

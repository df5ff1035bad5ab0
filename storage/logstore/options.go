package logstore

import (
	"fmt"
	"log/slog"
	"time"
)

// Options configure a Store. The zero value of a field means its default.
type Options struct {
	// PartitionDuration is the time partition of chunks and the unit of
	// retention. Zero means the index's (the substrate passes its own). It
	// must not be longer than the index's partition duration: after a
	// restart a stream is marked in the index for the whole of each of its
	// log partitions, which covers the index partitions only if none is
	// shorter.
	PartitionDuration time.Duration
	// Retention refuses, at Push, entries older than now minus Retention
	// (ErrTooOld): the substrate's retention clock would drop them at its
	// next pass (DropBefore, which the substrate calls). Zero or negative
	// accepts every age. The substrate sets it to the log retention.
	Retention time.Duration
	// SealEntries seals a stream's head when it holds this many entries.
	// Default 4096: enough lines for zstd to find repetition, small enough
	// that a chunk's token filter stays selective.
	SealEntries int
	// SealBytes seals a stream's head when its lines and metadata reach this
	// size. Default 1 MiB.
	SealBytes int
	// SealAge seals a head whose oldest unsealed push is older than this.
	// Default 10 minutes.
	SealAge time.Duration
	// MaintenanceInterval is how often the background loop seals old heads
	// and applies retention. Default 1 minute; negative starts no goroutine
	// (callers then use Seal and DropBefore).
	MaintenanceInterval time.Duration
	// FilterCacheBytes bounds the memory of sealed chunks' token filters
	// kept for needle and metadata queries. Default 64 MiB; negative keeps
	// none.
	FilterCacheBytes int
	// DeleteCancelPeriod is how long a delete request can be cancelled
	// before the maintenance loop reclaims its entries from storage
	// (queries skip them at once). Default 24h (Loki's
	// delete_request_cancel_period).
	DeleteCancelPeriod time.Duration
	// NoSealOnClose leaves the heads in their recent records at Close
	// (the default seals them into chunks: smaller on disk, and the next
	// Open has nothing to replay).
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
		SealEntries:         4096,
		SealBytes:           1 << 20,
		SealAge:             10 * time.Minute,
		MaintenanceInterval: time.Minute,
		FilterCacheBytes:    64 << 20,
		DeleteCancelPeriod:  24 * time.Hour,
	}
}

func (o Options) withDefaults() (Options, error) {
	d := DefaultOptions()
	if o.PartitionDuration < 0 {
		return o, fmt.Errorf("negative partition duration %v", o.PartitionDuration)
	}
	if o.SealEntries <= 0 {
		o.SealEntries = d.SealEntries
	}
	if o.SealBytes <= 0 {
		o.SealBytes = d.SealBytes
	}
	if o.SealAge <= 0 {
		o.SealAge = d.SealAge
	}
	if o.FilterCacheBytes == 0 {
		o.FilterCacheBytes = d.FilterCacheBytes
	}
	if o.DeleteCancelPeriod <= 0 {
		o.DeleteCancelPeriod = d.DeleteCancelPeriod
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

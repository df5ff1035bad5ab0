package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/weftdb/weft/storage"
)

// failedStoreDrain bounds the shutdown after the store failed: requests that
// reached the store are parked there for good, so waiting the whole
// shutdown timeout for them only delays the restart.
const failedStoreDrain = 5 * time.Second

// stopStorage flushes and closes the substrate within ctx. On a full disk
// or a failed store the substrate skips the flush itself; this bound is for
// whatever still hangs (a filesystem that blocks): past ctx the close is
// left running and Stop returns, so the process can exit (everything
// acknowledged is durable in the WALs; the next start replays it).
func stopStorage(ctx context.Context, sub *storage.Substrate, logger *slog.Logger) error {
	done := make(chan error, 1)
	go func() {
		var errs []error
		if err := sub.Flush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flush storage: %w", err))
		}
		if err := sub.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close storage: %w", err))
		}
		done <- errors.Join(errs...)
	}()
	// A drain that used up ctx still leaves the store storageCloseGrace
	// to close (the WALs flush their buffers).
	grace := time.NewTimer(storageCloseGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-done:
		return err
	case <-grace.C:
		logger.Error("storage_close_timeout", "err", ctx.Err())
		return fmt.Errorf("close storage: %w: %w", storage.ErrStoreFailed, ctx.Err())
	}
}

// storageCloseGrace is what the store gets to close after the shutdown
// timeout ran out; a store on a healthy disk closes in milliseconds.
const storageCloseGrace = 5 * time.Second

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/weftdb/weft/storage"
)

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
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		logger.Error("storage_close_timeout", "err", ctx.Err())
		return fmt.Errorf("close storage: %w: %w", storage.ErrStoreFailed, ctx.Err())
	}
}

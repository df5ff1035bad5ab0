package tracestore

import (
	"context"
	"maps"
	"slices"
)

// TagNames returns the sorted span and resource attribute names of the
// traces with spans in [start, end] (unix ns; end 0 = unbounded), from the
// block headers and the head: names only, nothing is decoded. Each block
// lists at most 1024 names of each scope. Safe for concurrent use.
func (s *Store) TagNames(ctx context.Context, start, end int64) (span, resource []string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	sk, rk := map[string]struct{}{}, map[string]struct{}{}
	s.mu.RLock()
	for _, b := range s.blocks {
		if !b.overlaps(start, end) {
			continue
		}
		for _, k := range b.spanKeys {
			sk[k] = struct{}{}
		}
		for _, k := range b.resKeys {
			rk[k] = struct{}{}
		}
	}
	maps.Copy(sk, s.spanKeys)
	maps.Copy(rk, s.resKeys)
	s.mu.RUnlock()
	return slices.Sorted(maps.Keys(sk)), slices.Sorted(maps.Keys(rk)), nil
}

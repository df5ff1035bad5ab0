package tracestore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/traceentry"
)

// TagNames returns the sorted span and resource attribute names of the
// traces with spans in [start, end] (unix ns; end 0 = unbounded), from the
// block headers and the head: names only, nothing is decoded. Each block
// lists at most 1024 names of each scope. A ctx restricted to tenants
// (package tenant) gets the names of their traces, read from the traces:
// the headers do not say whose names they list. Safe for concurrent use.
func (s *Store) TagNames(ctx context.Context, start, end int64) (span, resource []string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if _, restricted := tenant.FromContext(ctx); restricted {
		return s.tenantTagNames(ctx, start, end)
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

// tenantTagNames is TagNames from the traces ctx may read.
func (s *Store) tenantTagNames(ctx context.Context, start, end int64) (span, resource []string, err error) {
	it, err := s.Fetch(ctx, traceentry.FetchRequest{Start: start, End: end})
	if err != nil {
		return nil, nil, err
	}
	sk, rk := map[string]struct{}{}, map[string]struct{}{}
	for it.Next() {
		for _, sp := range it.At().Spans {
			for _, kv := range sp.Attributes {
				sk[kv.Key] = struct{}{}
			}
			if sp.Resource != nil {
				for _, kv := range sp.Resource.Attributes {
					rk[kv.Key] = struct{}{}
				}
			}
		}
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return nil, nil, err
	}
	return slices.Sorted(maps.Keys(sk)), slices.Sorted(maps.Keys(rk)), nil
}

// Streams returns the label sets of the trace streams (resources) matching
// ms with spans in [start, end] (unix ns), sorted, without the tenant
// label. Safe for concurrent use.
func (s *Store) Streams(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	ids, err := s.ix.Postings(ctx, index.KindTrace, nsToMs(start), nsToMs(end), ms...)
	if err != nil {
		return nil, fmt.Errorf("trace streams: %w", err)
	}
	out := make([]labels.Labels, 0, ids.GetCardinality())
	var b labels.ScratchBuilder
	it := ids.Iterator()
	for it.HasNext() {
		if ls, ok := s.ix.Labels(index.ID(it.Next()), &b); ok {
			out = append(out, tenant.Strip(ls))
		}
	}
	slices.SortFunc(out, labels.Compare)
	return out, nil
}

package storage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/metadata"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/internal/record"
)

// metaPrefix is 0x05 'm': metric name → metadata (docs/format/chunks.md).
var metaPrefix = []byte{tagMeta, 'm'}

// metaStore keeps the latest metadata per metric family name. Safe for
// concurrent use.
type metaStore struct {
	mu sync.RWMutex
	// m is keyed by tenant.ScopedKey(tenant, metric family name).
	m map[string]metadata.Metadata
	// tenants counts the keys of m scoped to a tenant.
	tenants int
	// dirty names changed since the last persist to Pebble.
	dirty map[string]struct{}
}

func (ms *metaStore) init() {
	ms.m = map[string]metadata.Metadata{}
	ms.dirty = map[string]struct{}{}
}

// has reports whether metric's metadata is md already.
func (ms *metaStore) has(metric string, md metadata.Metadata) bool {
	ms.mu.RLock()
	old, ok := ms.m[metric]
	ms.mu.RUnlock()
	return ok && old == md
}

// queueMetadata records metadata for Commit unless the store holds it
// already: senders repeat a family's metadata with every series, and this
// keeps Commit's work and the appender's memory to the changes. The name is
// copied, so callers may pass a name from labels they reuse (CopiesLabels).
func (a *appender) queueMetadata(name string, md metadata.Metadata) {
	name = tenant.ScopedKey(a.tenant, name)
	if a.db.meta.has(name, md) {
		return
	}
	a.metas = append(a.metas, record.Metadata{Metric: strings.Clone(name), Meta: md})
}

// set stores md for metric and reports whether it changed.
func (ms *metaStore) set(metric string, md metadata.Metadata) bool {
	ms.mu.RLock()
	old, ok := ms.m[metric]
	ms.mu.RUnlock()
	if ok && old == md {
		return false
	}
	ms.mu.Lock()
	ms.add(metric, md)
	ms.dirty[metric] = struct{}{}
	ms.mu.Unlock()
	return true
}

// add stores md under key; the caller holds mu.
func (ms *metaStore) add(key string, md metadata.Metadata) {
	if _, had := ms.m[key]; !had {
		if id, _ := tenant.SplitKey(key); id != tenant.Anonymous {
			ms.tenants++
		}
	}
	ms.m[key] = md
}

func (ms *metaStore) snapshot() []record.Metadata {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	out := make([]record.Metadata, 0, len(ms.m))
	for k, v := range ms.m {
		out = append(out, record.Metadata{Metric: k, Meta: v})
	}
	return out
}

// Metadata returns the metadata per metric family name: for metric if not
// empty, else for all names, at most limit names when limit > 0. Each name
// has exactly one entry (weft keeps the latest). A ctx restricted to
// tenants (package tenant) sees only their metadata.
func (db *DB) Metadata(ctx context.Context, metric string, limit int) (map[string][]metadata.Metadata, error) {
	db.meta.mu.RLock()
	defer db.meta.mu.RUnlock()
	out := map[string][]metadata.Metadata{}
	if _, restricted := tenant.FromContext(ctx); !restricted && db.meta.tenants == 0 {
		// Single tenant: the keys are the names.
		if metric != "" {
			if md, ok := db.meta.m[metric]; ok {
				out[metric] = []metadata.Metadata{md}
			}
			return out, nil
		}
		names := make([]string, 0, len(db.meta.m))
		for k := range db.meta.m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if limit > 0 && len(out) >= limit {
				break
			}
			out[k] = []metadata.Metadata{db.meta.m[k]}
		}
		return out, nil
	}
	keys := make([]string, 0, len(db.meta.m))
	for k := range db.meta.m {
		if id, name := tenant.SplitKey(k); tenant.Visible(ctx, id) && (metric == "" || name == metric) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, name := tenant.SplitKey(k)
		if _, dup := out[name]; dup || limit > 0 && len(out) >= limit {
			continue
		}
		out[name] = []metadata.Metadata{db.meta.m[k]}
	}
	return out, nil
}

// persistMetadata writes changed metadata to Pebble (called by checkpoints,
// which then sync Pebble before dropping WAL segments).
func (db *DB) persistMetadata() error {
	db.meta.mu.Lock()
	var recs []record.Metadata
	for k := range db.meta.dirty {
		recs = append(recs, record.Metadata{Metric: k, Meta: db.meta.m[k]})
	}
	clear(db.meta.dirty)
	db.meta.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	for _, r := range recs {
		key := append(append([]byte{}, metaPrefix...), r.Metric...)
		val := record.AppendMetadata(nil, []record.Metadata{r})
		if err := b.Set(key, val, nil); err != nil {
			return fmt.Errorf("batch metadata: %w", err)
		}
	}
	if err := db.ix.Commit(b, pebble.NoSync); err != nil {
		return fmt.Errorf("write metadata: %w", err)
	}
	return nil
}

func (db *DB) loadMetadata() error {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: metaPrefix, UpperBound: []byte{tagMeta, 'm' + 1}})
	if err != nil {
		return fmt.Errorf("metadata iterator: %w", err)
	}
	defer it.Close()
	var dec record.Decoder
	var out record.Decoded
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("read metadata: %w", err)
		}
		if err := dec.Decode(v, &out); err != nil || out.Type != record.TypeMetadata {
			db.log.Warn("metadata_entry_skipped", "key", string(it.Key()[2:]))
			continue
		}
		for _, m := range out.Metadata {
			db.meta.add(m.Metric, m.Meta)
		}
	}
	return it.Error()
}

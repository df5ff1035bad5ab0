package blocks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftdb/weft/storage"
)

// Layout (docs/format/blocks.md).
const (
	// Prefix is where blocks live in the bucket.
	Prefix = "blocks/"
	// MetaName is a block's meta file, uploaded last: a block without
	// one is incomplete and ignored.
	MetaName = "meta.json"
	// storeDir is the directory of the block's store files.
	storeDir = "store"
	// MetaVersion is the meta.json version this weft writes and reads.
	MetaVersion = 1
)

// Meta is a block's meta.json.
type Meta struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Partition of the ingest topic the block's data came from.
	Partition int32 `json:"partition"`
	// Offsets are the ingest log offsets the block holds: [Start, End).
	Offsets OffsetRange `json:"offsets"`
	// Window is the record time window (produce time, unix ms) the
	// builder closed: [Start, End).
	Window TimeRange `json:"window"`
	// MinTime and MaxTime bound the data's own timestamps (unix ms;
	// metric samples, log entries, span starts and ends), inclusive.
	MinTime int64 `json:"min_time"`
	MaxTime int64 `json:"max_time"`
	Stats   Stats `json:"stats"`
	// Files are the block's store files, relative to the block, with
	// their sizes.
	Files []File `json:"files"`
	// TraceIDs is the block's trace-ID filter (TraceIDsName) with its
	// size; nil for a block built before filters, which may hold any
	// trace.
	TraceIDs *File `json:"trace_ids,omitempty"`
	// Compaction says what the block replaced (empty sources: built from
	// the log).
	Compaction Compaction `json:"compaction"`
	// Created is when the block was uploaded (RFC 3339).
	Created time.Time `json:"created"`
}

// OffsetRange is [Start, End) of a partition's offsets.
type OffsetRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// TimeRange is [Start, End) in unix ms.
type TimeRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Stats count a block's data.
type Stats struct {
	Records    int `json:"records"`
	Samples    int `json:"samples"`
	Histograms int `json:"histograms"`
	Entries    int `json:"entries"`
	Spans      int `json:"spans"`
	Series     int `json:"series"`
	Streams    int `json:"streams"` // log streams
	// TraceStreams are the trace resources (streams of index.KindTrace).
	TraceStreams int   `json:"trace_streams"`
	Bytes        int64 `json:"bytes"` // the store files' total size
}

// File is one store file of a block.
type File struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// Compaction records a block's lineage.
type Compaction struct {
	Level   int      `json:"level"`
	Sources []string `json:"sources,omitempty"`
}

// BlockID names the block of partition p starting at offset start: a
// rebuilt block (a builder that crashed between upload and commit) gets
// the same name and replaces the first upload.
func BlockID(p int32, start int64) string {
	return fmt.Sprintf("p%05d-o%020d", p, start)
}

// partitionOfID returns the partition a block ID (BlockID or
// CompactedID) names.
func partitionOfID(id string) (int32, bool) {
	var p int32
	var first int64
	var level int
	if _, err := fmt.Sscanf(id, "p%05d-o%020d-c%d", &p, &first, &level); err == nil && CompactedID(p, first, level) == id {
		return p, true
	}
	if _, err := fmt.Sscanf(id, "p%05d-o%020d", &p, &first); err != nil || BlockID(p, first) != id {
		return 0, false
	}
	return p, true
}

func metaPath(id string) string { return Prefix + id + "/" + MetaName }

// validate checks what a reader relies on.
func (m *Meta) validate() error {
	if m.Version != MetaVersion {
		return fmt.Errorf("meta.json version %d, this weft reads %d", m.Version, MetaVersion)
	}
	if m.ID == "" || strings.ContainsAny(m.ID, "/\\") || m.ID == "." || m.ID == ".." {
		return fmt.Errorf("meta.json: bad id %q", m.ID)
	}
	for _, f := range m.Files {
		if !fs.ValidPath(f.Path) || !strings.HasPrefix(f.Path, storeDir+"/") || f.Size < 0 {
			return fmt.Errorf("meta.json: bad file %q", f.Path)
		}
	}
	if m.TraceIDs != nil && (m.TraceIDs.Path != TraceIDsName || m.TraceIDs.Size < 0 || m.TraceIDs.Size > maxTraceIDsBytes) {
		return fmt.Errorf("meta.json: bad trace_ids %q", m.TraceIDs.Path)
	}
	return nil
}

// deleteBlock deletes a block's meta.json first (readers stop listing it),
// then its files. Deleting what is gone is not an error (Bucket.Delete).
func deleteBlock(ctx context.Context, b Bucket, m *Meta) error {
	if err := b.Delete(ctx, metaPath(m.ID)); err != nil {
		return err
	}
	for _, f := range m.Files {
		if err := b.Delete(ctx, Prefix+m.ID+"/"+f.Path); err != nil {
			return fmt.Errorf("%s: %w", m.ID, err)
		}
	}
	if m.TraceIDs != nil {
		if err := b.Delete(ctx, Prefix+m.ID+"/"+TraceIDsName); err != nil {
			return fmt.Errorf("%s: %w", m.ID, err)
		}
	}
	return nil
}

// blockStore is o for a store that holds a whole block, read or merged:
// no retention (a block holds what it holds; the bucket's lifecycle
// decides), no background work, no disk ballast (a cached copy beside
// every block, or a file a merge would upload).
func blockStore(o storage.Options, logger *slog.Logger) storage.Options {
	o.Retention = -1
	o.RetentionInterval = -1
	o.CheckpointInterval = -1
	o.DiskReserve = -1
	o.Logger = logger
	return o
}

// upload puts dir's files under the block's prefix, then the trace-ID
// filter at traceIDs when m names one, then meta.json.
func upload(ctx context.Context, b Bucket, dir string, m *Meta, traceIDs string) error {
	m.Files = m.Files[:0]
	m.Stats.Bytes = 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Name() == "LOCK" {
			return nil // the substrate's process lock: meaningless in a copy
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m.Files = append(m.Files, File{Path: path.Join(storeDir, filepath.ToSlash(rel)), Size: info.Size()})
		m.Stats.Bytes += info.Size()
		return nil
	})
	if err != nil {
		return fmt.Errorf("list block files: %w", err)
	}
	for _, f := range m.Files {
		fh, err := os.Open(filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(f.Path, storeDir+"/"))))
		if err != nil {
			return err
		}
		err = b.Upload(ctx, Prefix+m.ID+"/"+f.Path, fh, f.Size)
		_ = fh.Close()
		if err != nil {
			return err
		}
	}
	if m.TraceIDs != nil {
		if err := uploadTraceIDs(ctx, b, m, traceIDs); err != nil {
			return err
		}
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return b.Upload(ctx, metaPath(m.ID), bytes.NewReader(mb), int64(len(mb)))
}

// readMeta reads and validates a block's meta.json.
func readMeta(ctx context.Context, b Bucket, id string) (*Meta, error) {
	rc, err := b.Get(ctx, metaPath(id))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", metaPath(id), err)
	}
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", metaPath(id), err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	if m.ID != id {
		return nil, fmt.Errorf("%s names block %q", metaPath(id), m.ID)
	}
	return &m, nil
}

// download copies a block's store files into dir.
func download(ctx context.Context, b Bucket, m *Meta, dir string) error {
	for _, f := range m.Files {
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(f.Path, storeDir+"/")))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		rc, err := b.Get(ctx, Prefix+m.ID+"/"+f.Path)
		if err != nil {
			return err
		}
		out, err := os.Create(dst)
		if err != nil {
			_ = rc.Close()
			return err
		}
		n, err := io.Copy(out, rc)
		_ = rc.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("download %s: %w", f.Path, err)
		}
		if n != f.Size {
			return fmt.Errorf("download %s: %d bytes, meta.json says %d", f.Path, n, f.Size)
		}
	}
	return nil
}

// listBlocks returns the IDs of the bucket's complete blocks (with a
// meta.json), sorted.
func listBlocks(ctx context.Context, b Bucket) ([]string, error) {
	names, err := b.List(ctx, Prefix)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, n := range names {
		id, rest, ok := strings.Cut(strings.TrimPrefix(n, Prefix), "/")
		if ok && rest == MetaName {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

package blocks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/cespare/xxhash/v2"

	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// TraceIDsName is a block's trace-ID filter (docs/format/blocks.md), a
// sidecar beside meta.json that readers keep in memory to download only
// the blocks that may hold a trace.
const TraceIDsName = "trace_ids.bloom"

// Layout of the trace-ID filter: a header, the filter's words, a CRC.
const (
	traceIDsMagic   = "WTID"
	traceIDsVersion = 1
	traceIDsHeader  = 16 // magic, version, probes, 2 reserved, count
	// traceIDsBitsPerID and traceIDsProbes give a false-positive rate
	// near 0.8% at 1.25 bytes per trace ID: a false positive costs one needless
	// block download, and the filters of every block stay in memory.
	traceIDsBitsPerID = 10
	traceIDsProbes    = 7
	// maxTraceIDsBytes bounds a filter a reader accepts (about 400M IDs).
	maxTraceIDsBytes = 512 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// traceIDFilter is a Bloom filter of a block's trace IDs. Immutable once
// built; safe for concurrent reads.
type traceIDFilter struct {
	words  []uint64
	probes uint8
	count  uint64
}

func newTraceIDFilter(n int) *traceIDFilter {
	bits := max(n*traceIDsBitsPerID, 64)
	return &traceIDFilter{words: make([]uint64, (bits+63)/64), probes: traceIDsProbes}
}

// positions calls f with the bit positions of id (double hashing over
// one 64-bit hash).
func (f *traceIDFilter) positions(id traceentry.TraceID, fn func(word int, bit uint64) bool) {
	h := xxhash.Sum64(id[:])
	step := h>>32 | h<<32 | 1
	m := uint64(len(f.words)) * 64
	for i := range uint64(f.probes) {
		p := (h + i*step) % m
		if !fn(int(p/64), 1<<(p%64)) {
			return
		}
	}
}

func (f *traceIDFilter) add(id traceentry.TraceID) {
	f.count++
	f.positions(id, func(w int, bit uint64) bool { f.words[w] |= bit; return true })
}

// mayHold reports whether id may be in the block; a nil filter (a block
// without one) may hold any trace.
func (f *traceIDFilter) mayHold(id traceentry.TraceID) bool {
	if f == nil {
		return true
	}
	if f.count == 0 {
		return false
	}
	in := true
	f.positions(id, func(w int, bit uint64) bool { in = f.words[w]&bit != 0; return in })
	return in
}

// appendTo appends the filter's encoding to dst.
func (f *traceIDFilter) appendTo(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, traceIDsMagic...)
	dst = append(dst, traceIDsVersion, f.probes, 0, 0)
	dst = binary.LittleEndian.AppendUint64(dst, f.count)
	for _, w := range f.words {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// decodeTraceIDFilter decodes appendTo's encoding.
func decodeTraceIDFilter(b []byte) (*traceIDFilter, error) {
	if len(b) < traceIDsHeader+8+4 || (len(b)-traceIDsHeader-4)%8 != 0 {
		return nil, fmt.Errorf("trace-ID filter: %d bytes", len(b))
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errors.New("trace-ID filter: checksum mismatch")
	}
	if string(body[:4]) != traceIDsMagic || body[4] != traceIDsVersion {
		return nil, fmt.Errorf("trace-ID filter: magic %q version %d", body[:4], body[4])
	}
	f := &traceIDFilter{probes: body[5], count: binary.LittleEndian.Uint64(body[8:16])}
	if f.probes == 0 || f.probes > 32 {
		return nil, fmt.Errorf("trace-ID filter: %d probes", f.probes)
	}
	words := body[traceIDsHeader:]
	f.words = make([]uint64, len(words)/8)
	for i := range f.words {
		f.words[i] = binary.LittleEndian.Uint64(words[i*8:])
	}
	return f, nil
}

// buildTraceIDs returns the filter of the traces of st (every trace,
// whole: Export).
func buildTraceIDs(ctx context.Context, st *tracestore.Store) (*traceIDFilter, error) {
	var ids []traceentry.TraceID
	err := st.Export(ctx, 0, 0, func(id traceentry.TraceID, _ []tracestore.ResourceSpans) error {
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list trace ids: %w", err)
	}
	f := newTraceIDFilter(len(ids))
	for _, id := range ids {
		f.add(id)
	}
	return f, nil
}

// writeTraceIDs builds the filter of sub's traces into dir/TraceIDsName
// (beside the store dir upload walks: write it elsewhere) and returns the
// meta.json entry naming it.
func writeTraceIDs(ctx context.Context, sub *storage.Substrate, path string) (*File, error) {
	f, err := buildTraceIDs(ctx, sub.Traces())
	if err != nil {
		return nil, err
	}
	return writeTraceIDFilter(f, path)
}

// writeTraceIDFilter writes f to path and returns the meta.json entry
// naming it.
func writeTraceIDFilter(f *traceIDFilter, path string) (*File, error) {
	b := f.appendTo(nil)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, fmt.Errorf("write trace-ID filter: %w", err)
	}
	return &File{Path: TraceIDsName, Size: int64(len(b))}, nil
}

// uploadTraceIDs uploads the filter file at path as block m's sidecar.
func uploadTraceIDs(ctx context.Context, b Bucket, m *Meta, path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	return b.Upload(ctx, Prefix+m.ID+"/"+TraceIDsName, fh, m.TraceIDs.Size)
}

// readTraceIDs reads block m's filter; nil when m names none (a block
// built before filters: it may hold any trace).
func readTraceIDs(ctx context.Context, b Bucket, m *Meta) (*traceIDFilter, error) {
	if m.TraceIDs == nil {
		return nil, nil
	}
	rc, err := b.Get(ctx, Prefix+m.ID+"/"+TraceIDsName)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, maxTraceIDsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", TraceIDsName, err)
	}
	if int64(len(raw)) != m.TraceIDs.Size {
		return nil, fmt.Errorf("%s: %d bytes, meta.json says %d", TraceIDsName, len(raw), m.TraceIDs.Size)
	}
	return decodeTraceIDFilter(raw)
}

// traceIDsPath is where a builder or compactor writes a block's filter
// before uploading it: beside dir, which upload walks.
func traceIDsPath(dir string) string {
	return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"."+TraceIDsName)
}

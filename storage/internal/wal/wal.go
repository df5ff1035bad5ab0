// Package wal is weft's write-ahead log: numbered segment files of CRC-checked,
// length-prefixed records, a group-commit syncer that lets many committers share
// one write (and, in strict mode, one fsync), and checkpoints that replace old
// segments.
//
// Record framing (see docs/format/wal.md): u32 big-endian payload length, u32
// big-endian CRC-32C of the payload, payload. A WAL is safe for concurrent use by
// many loggers; Replay must run before the first Log.
package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	headerSize = 8
	// MaxRecordSize bounds one record so a corrupt length cannot make replay
	// allocate gigabytes.
	MaxRecordSize = 256 << 20
	// writeBufferSize is the user-space buffer in front of the segment file;
	// a commit of 1000 samples is ~20 KiB, so several fit before a write(2).
	writeBufferSize  = 256 << 10
	checkpointPrefix = "checkpoint."
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrClosed is returned by Log and Sync after Close.
var ErrClosed = errors.New("wal closed")

// CorruptionError reports a damaged record that is not a torn tail of the last
// segment: replay stops there and the store refuses to open.
type CorruptionError struct {
	Segment string
	Offset  int64
	Err     error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal corruption in %s at offset %d: %v", e.Segment, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// Options configure a WAL.
type Options struct {
	// SegmentSize is the size after which a new segment is started (default 64 MiB).
	SegmentSize int64
	// Logger receives replay warnings; nil discards.
	Logger *slog.Logger
	// SyncInterval chooses what Sync waits for. Zero: the batch is written
	// and fsynced (a power loss loses nothing acknowledged). Positive: the
	// batch is written to the operating system (a crash or kill -9 of the
	// process loses nothing acknowledged) and a background fsync runs every
	// SyncInterval, so a power loss can lose up to that much.
	SyncInterval time.Duration
}

// DefaultOptions returns SegmentSize 64 MiB, no logger and an fsync per
// group commit (SyncInterval 0).
func DefaultOptions() Options { return Options{SegmentSize: 64 << 20} }

// WAL is an open write-ahead log directory.
type WAL struct {
	dir  string
	opts Options
	log  *slog.Logger

	rotMu  sync.RWMutex // held for writing while a segment is switched; the syncer holds it for reading
	mu     sync.Mutex   // guards the fields below
	f      *os.File
	bw     *bufio.Writer
	segN   int
	size   int64 // bytes in the current segment
	total  int64 // bytes in all live segments
	seq    uint64
	err    error
	closed bool

	syncMu sync.Mutex
	cond   *sync.Cond
	synced uint64 // highest seq Sync may acknowledge (written, or fsynced in strict mode)
	serr   error
	syncs  uint64
	dirty  bool // interval mode: written since the last fsync

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

// Open opens (creating if needed) the WAL in dir. Call Replay, then Start.
func Open(dir string, opts Options) (*WAL, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultOptions().SegmentSize
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create wal dir: %w", err)
	}
	w := &WAL{dir: dir, opts: opts, log: opts.Logger, kick: make(chan struct{}, 1), done: make(chan struct{})}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.cond = sync.NewCond(&w.syncMu)
	return w, nil
}

func segName(n int) string { return fmt.Sprintf("%08d", n) }

// listing returns segment numbers (sorted) and the newest checkpoint (-1 if none).
func (w *WAL) listing() (segs []int, cp int, err error) {
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, -1, fmt.Errorf("read wal dir: %w", err)
	}
	cp = -1
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, checkpointPrefix) {
			if strings.HasSuffix(name, ".tmp") {
				continue
			}
			if n, err := strconv.Atoi(strings.TrimPrefix(name, checkpointPrefix)); err == nil && n > cp {
				cp = n
			}
			continue
		}
		if n, err := strconv.Atoi(name); err == nil && len(name) == 8 {
			segs = append(segs, n)
		}
	}
	sort.Ints(segs)
	return segs, cp, nil
}

// Replay calls fn for every record: first those of the newest checkpoint, then
// those of every segment at or after it. A torn record at the end of the last
// segment is truncated away; damage anywhere else is a *CorruptionError.
// The record slice is only valid during the call.
func (w *WAL) Replay(fn func(rec []byte) error) error {
	segs, cp, err := w.listing()
	if err != nil {
		return err
	}
	if cp >= 0 {
		if _, err := w.replayFile(filepath.Join(w.dir, checkpointPrefix+segName(cp)), false, fn); err != nil {
			return fmt.Errorf("replay checkpoint: %w", err)
		}
	}
	var live []int
	for _, n := range segs {
		if cp >= 0 && n < cp {
			continue
		}
		live = append(live, n)
	}
	for i, n := range live {
		last := i == len(live)-1
		size, err := w.replayFile(filepath.Join(w.dir, segName(n)), last, fn)
		if err != nil {
			return fmt.Errorf("replay segment %d: %w", n, err)
		}
		w.total += size
	}
	next := 0
	if len(segs) > 0 {
		next = segs[len(segs)-1] + 1
	}
	if cp >= next {
		next = cp + 1
	}
	return w.openSegment(next)
}

func (w *WAL) replayFile(path string, last bool, fn func([]byte) error) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var hdr [headerSize]byte
	var buf []byte
	for {
		_, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			return off, nil
		}
		fail := func(cause error) (int64, error) {
			if last {
				w.log.Warn("wal_torn_tail_truncated", "segment", filepath.Base(path), "offset", off, "err", cause)
				if terr := f.Truncate(off); terr != nil {
					return off, fmt.Errorf("truncate torn tail: %w", terr)
				}
				return off, f.Sync()
			}
			return off, &CorruptionError{Segment: filepath.Base(path), Offset: off, Err: cause}
		}
		if err != nil {
			return fail(fmt.Errorf("short header: %w", err))
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n == 0 || n > MaxRecordSize {
			return fail(fmt.Errorf("bad record length %d", n))
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fail(fmt.Errorf("short record: %w", err))
		}
		if crc32.Checksum(buf, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
			return fail(errors.New("checksum mismatch"))
		}
		if err := fn(buf); err != nil {
			return off, fmt.Errorf("apply record at offset %d: %w", off, err)
		}
		off += headerSize + int64(n)
	}
}

func (w *WAL) openSegment(n int) error {
	f, err := os.OpenFile(filepath.Join(w.dir, segName(n)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create segment %d: %w", n, err)
	}
	if err := syncDir(w.dir); err != nil {
		f.Close()
		return err
	}
	w.f, w.segN, w.size = f, n, 0
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(f, writeBufferSize)
	} else {
		w.bw.Reset(f)
	}
	return nil
}

// Start launches the group-commit syncer (and, with a SyncInterval, the
// periodic fsync); Close stops them.
func (w *WAL) Start() {
	w.wg.Add(1)
	go w.syncLoop()
	if w.opts.SyncInterval > 0 {
		w.wg.Add(1)
		go w.fsyncLoop()
	}
}

// BeginRecord reserves a record header at the end of dst so that the
// payload can be encoded in place, without the copy AppendRecord makes. It
// returns dst and the header's offset, to be passed to EndRecord once the
// payload has been appended.
func BeginRecord(dst []byte) ([]byte, int) {
	start := len(dst)
	return append(dst, make([]byte, headerSize)...), start
}

// EndRecord fills in the header reserved by BeginRecord at start: the length
// and CRC-32C of everything appended after it. The result is byte for byte
// what AppendRecord produces for that payload.
func EndRecord(dst []byte, start int) []byte {
	payload := dst[start+headerSize:]
	binary.BigEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
	return dst
}

// AppendRecord frames rec onto dst; used to build a batch for Log.
func AppendRecord(dst, rec []byte) []byte {
	var hdr [headerSize]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(rec)))
	binary.BigEndian.PutUint32(hdr[4:], crc32.Checksum(rec, castagnoli))
	dst = append(dst, hdr[:]...)
	return append(dst, rec...)
}

// Log writes an already framed batch (see AppendRecord) and returns its
// sequence number for Sync. The batch is not durable until Sync returns: it
// may still be in a user-space buffer.
func (w *WAL) Log(framed []byte) (uint64, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, ErrClosed
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return 0, err
	}
	if w.size > 0 && w.size+int64(len(framed)) > w.opts.SegmentSize {
		w.mu.Unlock()
		if _, err := w.Cut(); err != nil {
			return 0, err
		}
		w.mu.Lock()
	}
	if _, err := w.bw.Write(framed); err != nil {
		w.err = fmt.Errorf("write segment %d: %w", w.segN, err)
		w.mu.Unlock()
		return 0, w.err
	}
	w.size += int64(len(framed))
	w.total += int64(len(framed))
	w.seq++
	seq := w.seq
	w.mu.Unlock()
	return seq, nil
}

// Sync blocks until the batch with sequence seq is written to the segment
// file and, without a SyncInterval, fsynced. Concurrent callers share the
// write and the fsync: the syncer flushes everything logged so far in one go.
func (w *WAL) Sync(seq uint64) error {
	select {
	case w.kick <- struct{}{}:
	default:
	}
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	for w.synced < seq && w.serr == nil {
		w.cond.Wait()
	}
	if w.synced >= seq {
		return nil
	}
	return w.serr
}

func (w *WAL) syncLoop() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case <-w.kick:
		}
		// Let committers that are runnable right now log their batches
		// first, so this fsync covers them too (matters most when there
		// are fewer cores than committers).
		runtime.Gosched()
		strict := w.opts.SyncInterval <= 0
		w.rotMu.RLock()
		w.mu.Lock()
		target := w.seq
		err := w.bw.Flush()
		f := w.f
		w.mu.Unlock()
		if err == nil && strict {
			err = f.Sync()
		}
		w.rotMu.RUnlock()
		w.syncMu.Lock()
		if err != nil {
			w.serr = fmt.Errorf("sync wal: %w", err)
		} else if w.serr == nil && target > w.synced {
			// After a failed fsync nothing more is acknowledged.
			w.synced = target
			if strict {
				w.syncs++
			} else {
				w.dirty = true
			}
		}
		w.cond.Broadcast()
		w.syncMu.Unlock()
	}
}

// fsyncLoop fsyncs the current segment every SyncInterval while anything was
// written since the previous fsync. A failed fsync fails every later Sync:
// the kernel may have dropped the dirty pages, so what follows is not known
// to be durable either.
func (w *WAL) fsyncLoop() {
	defer w.wg.Done()
	t := time.NewTicker(w.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		w.syncMu.Lock()
		dirty := w.dirty
		w.dirty = false
		w.syncMu.Unlock()
		if !dirty {
			continue
		}
		w.rotMu.RLock()
		w.mu.Lock()
		f := w.f
		w.mu.Unlock()
		err := f.Sync()
		w.rotMu.RUnlock()
		w.syncMu.Lock()
		if err != nil {
			w.serr = fmt.Errorf("sync wal: %w", err)
			w.cond.Broadcast()
		} else {
			w.syncs++
		}
		w.syncMu.Unlock()
	}
}

// Cut finishes the current segment (flushed and fsynced) and starts the next;
// it returns the number of the new segment. Everything logged before Cut is
// in segments below that number.
func (w *WAL) Cut() (int, error) {
	w.rotMu.Lock()
	defer w.rotMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	if err := w.bw.Flush(); err != nil {
		return 0, fmt.Errorf("flush segment %d: %w", w.segN, err)
	}
	if err := w.f.Sync(); err != nil {
		return 0, fmt.Errorf("sync segment %d: %w", w.segN, err)
	}
	if err := w.f.Close(); err != nil {
		return 0, fmt.Errorf("close segment %d: %w", w.segN, err)
	}
	target := w.seq
	if err := w.openSegment(w.segN + 1); err != nil {
		w.err = err
		return 0, err
	}
	w.syncMu.Lock()
	if target > w.synced {
		w.synced = target
	}
	w.cond.Broadcast()
	w.syncMu.Unlock()
	return w.segN, nil
}

// WriteCheckpoint writes the records produced by emit into checkpoint.<upTo>
// (temporary file, fsync, rename, fsync dir) and then removes every segment
// below upTo and every older checkpoint. The caller guarantees that whatever
// those segments held is either in the checkpoint or durable elsewhere.
func (w *WAL) WriteCheckpoint(upTo int, emit func(add func(rec []byte) error) error) error {
	final := filepath.Join(w.dir, checkpointPrefix+segName(upTo))
	tmp := final + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("create checkpoint: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	var frame []byte
	err = emit(func(rec []byte) error {
		frame = AppendRecord(frame[:0], rec)
		_, err := bw.Write(frame)
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write checkpoint: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("rename checkpoint: %w", err)
	}
	if err := syncDir(w.dir); err != nil {
		return err
	}
	segs, _, err := w.listing()
	if err != nil {
		return err
	}
	var removed int64
	for _, n := range segs {
		if n >= upTo {
			continue
		}
		p := filepath.Join(w.dir, segName(n))
		if st, err := os.Stat(p); err == nil {
			removed += st.Size()
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove segment %d: %w", n, err)
		}
	}
	ents, _ := os.ReadDir(w.dir)
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, checkpointPrefix) && name != filepath.Base(final) {
			os.Remove(filepath.Join(w.dir, name))
		}
	}
	w.mu.Lock()
	w.total -= removed
	if w.total < 0 {
		w.total = 0
	}
	w.mu.Unlock()
	return syncDir(w.dir)
}

// Size returns the bytes in live segments (checkpoint excluded).
func (w *WAL) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

// Fsyncs returns how many fsyncs the syncer (per group commit) or the
// periodic syncer (with a SyncInterval) has done.
func (w *WAL) Fsyncs() uint64 {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	return w.syncs
}

// Close flushes and fsyncs the current segment and stops the syncer. It is
// idempotent.
func (w *WAL) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.done)
	w.wg.Wait()
	w.rotMu.Lock()
	defer w.rotMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	if w.f != nil {
		err = errors.Join(w.bw.Flush(), w.f.Sync(), w.f.Close())
	}
	w.syncMu.Lock()
	if w.serr == nil {
		w.serr = ErrClosed
	}
	if err == nil {
		w.synced = w.seq
	}
	w.cond.Broadcast()
	w.syncMu.Unlock()
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	return nil
}

// Package wal is weft's write-ahead log: numbered segment files of CRC-checked,
// length-prefixed records, a group-commit syncer that lets many committers share
// one write (and, in strict mode, one fsync), and checkpoints that replace old
// segments.
//
// Record framing (see docs/format/wal.md): u32 big-endian payload length, u32
// big-endian CRC-32C of the payload, payload. A WAL is safe for concurrent use by
// many loggers; Replay must run before the first Log.
//
// A failed write(2) (a full disk) is not sticky: the bytes not written stay
// buffered, in order, so a segment file is always a prefix of what was
// logged, and the next flush retries them. Syncs waiting when the write
// failed return a *WriteError; once space returns, writes resume by
// themselves. A failed fsync is sticky (the kernel may have dropped the
// pages): every later Log and Sync fails with it and Err reports it.
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

// WriteError reports that logged bytes could not be written to the segment
// file (a full disk). It is retryable: the bytes stay buffered and the next
// flush writes them, so a batch whose Sync failed with it may still become
// durable later.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "write wal: " + e.Err.Error() }

func (e *WriteError) Unwrap() error { return e.Err }

// maxPendingBytes bounds what Log accepts while writes are failing: beyond it
// Log refuses (a *WriteError) instead of buffering more in memory.
const maxPendingBytes = 16 << 20

// segmentFile is what the WAL needs of a segment file; tests wrap it to
// inject write errors.
type segmentFile interface {
	io.Writer
	Sync() error
	Close() error
}

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
	f      segmentFile
	buf    []byte // logged, not yet written to f (in order)
	werr   error  // the last write error; nil once a write succeeds
	segN   int
	size   int64 // bytes in the current segment (written and buffered)
	total  int64 // bytes in all live segments
	seq    uint64
	err    error // sticky: a failed fsync or segment switch
	closed bool

	// wrap, when set (tests), wraps every segment file opened.
	wrap func(*os.File) segmentFile

	syncMu sync.Mutex
	cond   *sync.Cond
	synced uint64 // highest seq Sync may acknowledge (written, or fsynced in strict mode)
	serr   error  // sticky: fails every Sync
	wgen   uint64 // incremented at each failed write; fails the Syncs waiting then
	wlast  error  // the error of the latest failed write
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

// openSegment creates segment n and makes it the current one. On error the
// current segment stays.
func (w *WAL) openSegment(n int) error {
	f, err := os.OpenFile(filepath.Join(w.dir, segName(n)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create segment %d: %w", n, err)
	}
	if err := syncDir(w.dir); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	var sf segmentFile = f
	if w.wrap != nil {
		sf = w.wrap(f)
	}
	w.f, w.segN, w.size = sf, n, 0
	if w.buf == nil {
		w.buf = make([]byte, 0, writeBufferSize)
	}
	return nil
}

// writeOutLocked writes the buffered bytes to the segment file. On error
// what was not written stays buffered, so the file remains a prefix of the
// logged stream; w.mu is held.
func (w *WAL) writeOutLocked() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.f.Write(w.buf)
	if n > 0 {
		w.buf = w.buf[:copy(w.buf, w.buf[n:])]
	}
	if err == nil && len(w.buf) > 0 {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.werr = fmt.Errorf("segment %d: %w", w.segN, err)
		return &WriteError{Err: w.werr}
	}
	w.werr = nil
	if cap(w.buf) > 4*writeBufferSize {
		w.buf = make([]byte, 0, writeBufferSize) // give back what a full disk grew
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
// may still be in a user-space buffer. While writes fail (a full disk) Log
// buffers at most maxPendingBytes and then refuses with a *WriteError.
func (w *WAL) Log(framed []byte) (uint64, error) { return w.logBatch(framed, false) }

// LogForce is Log without the refusal while writes fail: for records that
// must precede later ones whatever happens (a new series' record, which
// samples of later batches refer to). They are small.
func (w *WAL) LogForce(framed []byte) (uint64, error) { return w.logBatch(framed, true) }

func (w *WAL) logBatch(framed []byte, force bool) (uint64, error) {
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
	if !force && w.werr != nil && len(w.buf)+len(framed) > maxPendingBytes {
		err := &WriteError{Err: w.werr}
		w.mu.Unlock()
		return 0, err
	}
	if w.size > 0 && w.size+int64(len(framed)) > w.opts.SegmentSize && w.werr == nil {
		w.mu.Unlock()
		// A failed switch keeps the current segment; a sticky failure
		// is reported below.
		_, _ = w.Cut()
		w.mu.Lock()
		if w.closed || w.err != nil {
			err := w.err
			if w.closed {
				err = ErrClosed
			}
			w.mu.Unlock()
			return 0, err
		}
	}
	w.buf = append(w.buf, framed...)
	if len(w.buf) >= writeBufferSize {
		// An error stays buffered; the syncer retries and reports it.
		_ = w.writeOutLocked()
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
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	// The write generation is read before the kick: a round that fails
	// between the kick and the read would otherwise go unnoticed and
	// leave this caller waiting for a round nobody asked for.
	gen := w.wgen
	select {
	case w.kick <- struct{}{}:
	default:
	}
	for w.synced < seq && w.serr == nil && w.wgen == gen {
		w.cond.Wait()
	}
	if w.synced >= seq {
		return nil
	}
	if w.serr != nil {
		return w.serr
	}
	return w.wlast
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
		werr := w.writeOutLocked()
		f := w.f
		w.mu.Unlock()
		var err error
		if werr == nil && strict {
			if err = f.Sync(); err != nil {
				err = fmt.Errorf("sync wal: %w", err)
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
			}
		}
		w.rotMu.RUnlock()
		w.syncMu.Lock()
		if werr != nil {
			// Not sticky: the bytes stay buffered for the next round.
			w.wgen++
			w.wlast = werr
		} else if err != nil {
			w.serr = err
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
		if err != nil {
			w.mu.Lock()
			w.err = fmt.Errorf("sync wal: %w", err)
			w.mu.Unlock()
		}
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
	if w.err != nil {
		return 0, w.err
	}
	if err := w.writeOutLocked(); err != nil {
		return 0, fmt.Errorf("flush segment %d: %w", w.segN, err)
	}
	if err := w.f.Sync(); err != nil {
		w.err = fmt.Errorf("sync segment %d: %w", w.segN, err)
		return 0, w.err
	}
	target := w.seq
	old, oldN := w.f, w.segN
	if err := w.openSegment(w.segN + 1); err != nil {
		return 0, err // the current segment stays; retried at the next Cut
	}
	if err := old.Close(); err != nil {
		w.log.Warn("wal_segment_close_failed", "segment", oldN, "err", err)
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

// Err returns the WAL's sticky error (a failed fsync): the store cannot
// acknowledge anything more until it is reopened. Nil while healthy, also
// while writes fail for a full disk (those are retried).
func (w *WAL) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
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
		werr := w.writeOutLocked()
		var serr error
		if werr == nil {
			serr = w.f.Sync()
		}
		err = errors.Join(werr, serr, w.f.Close())
	}
	w.syncMu.Lock()
	if w.serr == nil {
		w.serr = ErrClosed
	}
	if err == nil && w.err == nil {
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

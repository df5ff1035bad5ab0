package gpuagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Queue is a bounded on-disk FIFO of remote-write requests, one segment file
// per request (<seq>.seg, written to a temporary name and renamed, so a crash
// never leaves half a segment). When the total size would exceed MaxBytes the
// oldest segments are deleted and counted. It is safe for concurrent use: one
// producer (the collection loop) and one consumer (the sender).
type Queue struct {
	dir      string
	maxBytes int64

	mu      sync.Mutex
	segs    []segment // oldest first
	total   int64
	nextSeq uint64
	dropped struct{ segments, bytes uint64 }
	notify  chan struct{}
}

type segment struct {
	seq  uint64
	size int64
}

const segSuffix = ".seg"

// OpenQueue opens (creating) dir and adopts the segments left by an earlier
// run, so a restart of the agent loses nothing that was queued.
func OpenQueue(dir string, maxBytes int64) (*Queue, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create queue dir: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read queue dir: %w", err)
	}
	q := &Queue{dir: dir, maxBytes: maxBytes, notify: make(chan struct{}, 1)}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			os.Remove(filepath.Join(dir, name)) // an interrupted write
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, segSuffix), 10, 64)
		if err != nil || !strings.HasSuffix(name, segSuffix) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		q.segs = append(q.segs, segment{seq, info.Size()})
		q.total += info.Size()
		q.nextSeq = max(q.nextSeq, seq+1)
	}
	slices.SortFunc(q.segs, func(a, b segment) int { return int(a.seq - b.seq) })
	return q, nil
}

func (q *Queue) path(seq uint64) string {
	return filepath.Join(q.dir, fmt.Sprintf("%020d%s", seq, segSuffix))
}

// ErrTooLarge is returned by Push for a request larger than the whole queue.
var ErrTooLarge = errors.New("request larger than queue capacity")

// Push appends data as a new segment, dropping the oldest segments while the
// queue would exceed its cap.
func (q *Queue) Push(data []byte) error {
	size := int64(len(data))
	if q.maxBytes > 0 && size > q.maxBytes {
		q.mu.Lock()
		q.dropped.segments++
		q.dropped.bytes += uint64(size)
		q.mu.Unlock()
		return ErrTooLarge
	}
	q.mu.Lock()
	seq := q.nextSeq
	q.nextSeq++
	q.mu.Unlock()

	p := q.path(seq)
	tmp := p + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		return fmt.Errorf("write queue segment: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("commit queue segment: %w", err)
	}

	q.mu.Lock()
	q.segs = append(q.segs, segment{seq, size})
	q.total += size
	for q.maxBytes > 0 && q.total > q.maxBytes && len(q.segs) > 1 {
		old := q.segs[0]
		q.segs = q.segs[1:]
		q.total -= old.size
		q.dropped.segments++
		q.dropped.bytes += uint64(old.size)
		os.Remove(q.path(old.seq))
	}
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return nil
}

// writeSynced writes data and fsyncs it, so that a renamed segment is never
// empty after a power loss. One fsync per collection interval is cheap.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Peek returns the oldest segment; ok is false when the queue is empty.
func (q *Queue) Peek() (seq uint64, data []byte, ok bool, err error) {
	for {
		q.mu.Lock()
		if len(q.segs) == 0 {
			q.mu.Unlock()
			return 0, nil, false, nil
		}
		seq = q.segs[0].seq
		q.mu.Unlock()
		data, err = os.ReadFile(q.path(seq))
		if err == nil {
			return seq, data, true, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return 0, nil, false, fmt.Errorf("read queue segment: %w", err)
		}
		q.remove(seq) // dropped concurrently by Push
	}
}

// Ack deletes segment seq after it was delivered (or rejected for good).
func (q *Queue) Ack(seq uint64) error {
	q.remove(seq)
	if err := os.Remove(q.path(seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove queue segment: %w", err)
	}
	return nil
}

func (q *Queue) remove(seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, s := range q.segs {
		if s.seq == seq {
			q.total -= s.size
			q.segs = slices.Delete(q.segs, i, i+1)
			return
		}
	}
}

// Notify is signalled after each Push.
func (q *Queue) Notify() <-chan struct{} { return q.notify }

// Stats returns the queued segments and bytes and the dropped ones.
func (q *Queue) Stats() (segments int, bytes int64, droppedSegments, droppedBytes uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.segs), q.total, q.dropped.segments, q.dropped.bytes
}

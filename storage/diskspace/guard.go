package diskspace

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrLowSpace matches (errors.Is) every *LowSpaceError.
var ErrLowSpace = errors.New("disk space low")

// errUnsupported: the platform has no statfs; the guard admits everything.
var errUnsupported = errors.New("free space unknown on this platform")

// LowSpaceError is a write refused because the data directory's filesystem
// has less free space than the reserve. It is retryable: writes resume once
// space is freed.
type LowSpaceError struct {
	Dir           string
	Free, Reserve int64
}

func (e *LowSpaceError) Error() string {
	return fmt.Sprintf("disk space low: %s has %s free, below the %s reserve; writes resume once space is freed",
		e.Dir, bytesString(e.Free), bytesString(e.Reserve))
}

// Is reports whether target is ErrLowSpace.
func (e *LowSpaceError) Is(target error) bool { return target == ErrLowSpace }

// BallastName is the ballast file's name in the guarded directory.
const BallastName = "disk-ballast"

// Defaults; each says why.
const (
	// defaultReserveFraction: 5% of the filesystem covers a flush of
	// Pebble's memtable, a compaction of young tables and a WAL
	// checkpoint on a store that fills the disk.
	defaultReserveFraction = 20 // 1/20
	// minReserve keeps tiny filesystems (a 64 MiB tmpfs) usable while still
	// leaving room for a flush.
	minReserve = 8 << 20
	// maxReserve: past 1 GiB the reserve would only waste a large disk.
	maxReserve = 1 << 30
	// maxBallast bounds the ballast file (half the reserve by default).
	maxBallast = 256 << 20
	// defaultRefresh bounds how stale the free space a write is checked
	// against may be; statfs costs a microsecond.
	defaultRefresh = 100 * time.Millisecond
)

// Options configure a Guard. Zero fields take the defaults named.
type Options struct {
	// Reserve refuses writes while the filesystem has less free space than
	// this many bytes. Default 5% of the filesystem, between 8 MiB and
	// 1 GiB; negative disables the guard (and the ballast).
	Reserve int64
	// Ballast is the size of the ballast file <dir>/disk-ballast. Default
	// half the reserve, at most 256 MiB; negative keeps no ballast.
	Ballast int64
	// Refresh is how long a free-space reading is reused. Default 100ms.
	Refresh time.Duration
	// Logger receives the transitions (low, recovered, ballast released);
	// nil discards them.
	Logger *slog.Logger
	// StatFS returns the free (available to this user) and total bytes of
	// the filesystem holding dir; nil is statfs(2). Tests inject it.
	StatFS func(dir string) (free, total int64, err error)
}

// Status is a Guard's view of the filesystem.
type Status struct {
	Free, Total, Reserve int64
	// Refusing: writes are refused (free space below the reserve, not yet
	// back above it plus the hysteresis).
	Refusing bool
	// BallastHeld: the ballast file exists.
	BallastHeld bool
}

// Guard watches one directory's filesystem. Safe for concurrent use.
type Guard struct {
	dir     string
	opts    Options
	log     *slog.Logger
	reserve int64
	ballast int64
	hyst    int64

	mu       sync.Mutex // serialises refreshes and ballast changes
	held     bool       // the ballast file exists
	status   atomic.Pointer[Status]
	lastRead atomic.Int64 // unix nanos of the last statfs
	disabled bool
}

// New guards dir's filesystem and creates the ballast if there is room.
func New(dir string, opts Options) (*Guard, error) {
	if opts.Refresh <= 0 {
		opts.Refresh = defaultRefresh
	}
	if opts.StatFS == nil {
		opts.StatFS = statFS
	}
	g := &Guard{dir: dir, opts: opts, log: opts.Logger}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.status.Store(&Status{})
	if opts.Reserve < 0 {
		g.disabled = true
		return g, nil
	}
	free, total, err := opts.StatFS(dir)
	if errors.Is(err, errUnsupported) {
		g.log.Warn("disk_space_guard_disabled", "dir", dir, "err", err)
		g.disabled = true
		return g, nil
	}
	if err != nil {
		return nil, fmt.Errorf("statfs %s: %w", dir, err)
	}
	g.reserve = opts.Reserve
	if g.reserve == 0 {
		g.reserve = min(max(total/defaultReserveFraction, minReserve), maxReserve)
	}
	g.ballast = opts.Ballast
	if g.ballast == 0 {
		g.ballast = min(g.reserve/2, maxBallast)
	}
	g.ballast = max(g.ballast, 0)
	g.hyst = max(g.reserve/4, g.ballast)
	if st, err := os.Stat(filepath.Join(dir, BallastName)); err == nil && st.Size() >= g.ballast {
		g.held = g.ballast > 0
	}
	g.mu.Lock()
	g.applyLocked(free, total)
	g.mu.Unlock()
	return g, nil
}

// Reserve returns the effective reserve in bytes (0 when disabled).
func (g *Guard) Reserve() int64 { return g.reserve }

// Check returns a *LowSpaceError while writes are refused, else nil. It
// re-reads the free space at most every Options.Refresh.
func (g *Guard) Check() error {
	if g == nil || g.disabled {
		return nil
	}
	if time.Now().UnixNano()-g.lastRead.Load() >= int64(g.opts.Refresh) {
		g.refresh()
	}
	st := g.status.Load()
	if !st.Refusing {
		return nil
	}
	return &LowSpaceError{Dir: g.dir, Free: st.Free, Reserve: g.reserve}
}

// Status returns the latest reading.
func (g *Guard) Status() Status {
	if g == nil || g.disabled {
		return Status{}
	}
	return *g.status.Load()
}

// Note looks at an error a store got from the filesystem: on ENOSPC it
// releases the ballast and refuses writes at once. It reports whether err
// was ENOSPC.
func (g *Guard) Note(err error) bool {
	if !errors.Is(err, syscall.ENOSPC) {
		return false
	}
	g.NoSpace()
	return true
}

// NoSpace is what a store calls when the filesystem said ENOSPC: the
// ballast is released (so that what is in flight can finish) and writes are
// refused until the free space is back above the reserve.
func (g *Guard) NoSpace() {
	if g == nil || g.disabled {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked("enospc")
	free, total, err := g.opts.StatFS(g.dir)
	if err != nil {
		free, total = 0, g.status.Load().Total
	}
	g.lastRead.Store(time.Now().UnixNano())
	st := g.computeLocked(free, total)
	st.Refusing = true // the filesystem said so, whatever statfs says
	g.status.Store(&st)
}

func (g *Guard) refresh() {
	if !g.mu.TryLock() {
		return // another caller is refreshing; use the reading it replaces
	}
	defer g.mu.Unlock()
	free, total, err := g.opts.StatFS(g.dir)
	if err != nil {
		g.log.Warn("disk_space_statfs_failed", "dir", g.dir, "err", err)
		g.lastRead.Store(time.Now().UnixNano())
		return
	}
	g.applyLocked(free, total)
}

// applyLocked updates the status from a reading and manages the ballast.
func (g *Guard) applyLocked(free, total int64) {
	g.lastRead.Store(time.Now().UnixNano())
	if g.held && free < g.reserve/2 {
		if g.releaseLocked("below half the reserve") {
			if f, t, err := g.opts.StatFS(g.dir); err == nil {
				free, total = f, t
			}
		}
	}
	if !g.held && g.ballast > 0 && free >= g.reserve+g.ballast+g.hyst {
		if err := g.createBallast(); err != nil {
			g.log.Warn("disk_ballast_create_failed", "path", filepath.Join(g.dir, BallastName), "err", err)
		} else {
			g.held = true
			free -= g.ballast
		}
	}
	st := g.computeLocked(free, total)
	g.status.Store(&st)
}

func (g *Guard) computeLocked(free, total int64) Status {
	prev := g.status.Load()
	st := Status{Free: free, Total: total, Reserve: g.reserve, BallastHeld: g.held}
	switch {
	case free < g.reserve:
		st.Refusing = true
	case prev.Refusing && free < g.reserve+g.hyst:
		st.Refusing = true // hysteresis: do not flap at the threshold
	}
	if st.Refusing && !prev.Refusing {
		g.log.Warn("disk_space_low", "dir", g.dir, "free_bytes", free, "reserve_bytes", g.reserve)
	} else if !st.Refusing && prev.Refusing {
		g.log.Info("disk_space_recovered", "dir", g.dir, "free_bytes", free, "reserve_bytes", g.reserve)
	}
	return st
}

// releaseLocked deletes the ballast; it reports whether one was deleted.
func (g *Guard) releaseLocked(why string) bool {
	if !g.held {
		return false
	}
	p := filepath.Join(g.dir, BallastName)
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		g.log.Error("disk_ballast_release_failed", "path", p, "err", err)
		return false
	}
	g.held = false
	g.log.Warn("disk_ballast_released", "path", p, "bytes", g.ballast, "reason", why)
	return true
}

// createBallast writes the ballast file with its blocks allocated (a
// sparse file would free nothing when deleted).
func (g *Guard) createBallast() error {
	p := filepath.Join(g.dir, BallastName)
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = allocate(f, g.ballast)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeZeros fills f with n zero bytes (where fallocate is missing).
func writeZeros(f *os.File, n int64) error {
	buf := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := f.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

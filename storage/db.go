package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/internal/wal"
)

const (
	minInt64 = math.MinInt64
	maxInt64 = math.MaxInt64
)

// DB is weft's metric store: a head of open chunks behind a write-ahead log,
// sealed chunks in Pebble, and a stream index. It implements Prometheus'
// storage.Storage and storage.ExemplarQueryable.
//
// A DB is safe for concurrent use. Appenders and queriers it hands out are
// each for one goroutine. Close stops every goroutine the DB started.
type DB struct {
	dir    string
	opts   Options
	log    *slog.Logger
	partMs int64

	oooWindow int64
	futureMs  int64

	pdb    *pebble.DB
	ix     *index.Index
	idx    streamIndex
	wal    *wal.WAL
	series *seriesMap
	parts  partitionSet
	meta   metaStore
	tombs  tombstones

	// commitMu is held shared by every Commit across its WAL write and head
	// apply, and exclusively by a checkpoint while it cuts the WAL segment,
	// so that everything in older segments is in the head when it snapshots.
	commitMu sync.RWMutex
	// maintMu serialises Flush, checkpoints, compaction, retention and
	// tombstone cleaning.
	maintMu sync.Mutex

	minT, maxT atomic.Int64 // bounds of appended samples (head and Pebble)
	// freshFrom is the smallest ID a series created by this process can
	// have (the index's next ID once Open has replayed the WAL). Such a
	// series has every sample it ever had appended through this head, so
	// its lastT is the newest sample the store holds for it. Immutable
	// after Open.
	freshFrom uint64

	headChunks   atomic.Int64
	sealedChunks atomic.Int64
	stats        counters

	// sealQ holds series with sealed chunks for the sealer goroutine, which
	// converts them to the columnar layout and writes them to Pebble off the
	// commit path.
	sealMu   sync.Mutex
	sealQ    []*memSeries
	sealKick chan struct{}

	// sub is the substrate the store lives on. ownsSub: Open made it for
	// this store alone, and Close closes it.
	sub     *Substrate
	ownsSub bool

	closeOnce sync.Once
	closed    atomic.Bool
	stop      chan struct{}
	wg        sync.WaitGroup
}

var (
	_ promstorage.Storage           = (*DB)(nil)
	_ promstorage.ExemplarQueryable = (*DB)(nil)
)

// Open opens or creates the storage in dir with OpenSubstrate and returns
// its metric store: the convenience for tools and tests that only write and
// read metrics. Closing the returned DB closes the whole substrate.
func Open(ctx context.Context, dir string, opts Options) (*DB, error) {
	sub, err := OpenSubstrate(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	sub.metrics.ownsSub = true
	return sub.metrics, nil
}

// openMetrics opens the metric store on sub's Pebble database, index and
// WAL (not yet started): it loads partitions, tombstones, metadata and the
// head series, replays the WAL (truncating a torn tail of the last segment;
// other damage fails with a *wal.CorruptionError naming segment and offset),
// then starts the WAL and the store's goroutines (the background loop unless
// opts.CheckpointInterval < 0). It owns the WAL from then on; the substrate
// keeps Pebble and the index.
func openMetrics(ctx context.Context, sub *Substrate, w *wal.WAL, opts Options) (db *DB, err error) {
	db = &DB{
		dir:       sub.dir,
		opts:      opts,
		log:       opts.Logger,
		partMs:    opts.PartitionDuration.Milliseconds(),
		oooWindow: opts.OutOfOrderWindow.Milliseconds(),
		futureMs:  -1,
		sub:       sub,
		pdb:       sub.pdb,
		ix:        sub.ix,
		wal:       w,
		series:    newSeriesMap(),
		stop:      make(chan struct{}),
		sealKick:  make(chan struct{}, 1),
	}
	if opts.FutureWindow >= 0 {
		db.futureMs = opts.FutureWindow.Milliseconds()
	}
	db.minT.Store(maxInt64)
	db.maxT.Store(minInt64)
	db.meta.init()
	db.tombs.init()
	db.stats.init()
	db.idx = metricIndex{db.ix}
	if err := db.loadPartitions(); err != nil {
		return nil, err
	}
	if err := db.loadTombstones(); err != nil {
		return nil, err
	}
	if err := db.loadMetadata(); err != nil {
		return nil, err
	}
	if err := db.initTimeBounds(); err != nil {
		return nil, err
	}
	if err := db.loadHeadSeries(ctx); err != nil {
		return nil, err
	}
	if err := db.replay(ctx); err != nil {
		return nil, fmt.Errorf("replay wal: %w", err)
	}
	db.freshFrom = uint64(db.ix.NextID())
	db.wal.Start()
	db.wg.Add(1)
	go db.sealerLoop()
	if opts.CheckpointInterval > 0 {
		db.wg.Add(1)
		go db.backgroundLoop()
	}
	return db, nil
}

// openPebble opens the shared Pebble database in dir with weft's settings
// (the index's merge operator, compression, block and memtable sizes).
// logger is Pebble's (pebbleguard: a fatal error fails the store instead of
// the process); fs is the filesystem, wrapped by the substrate so that an
// ENOSPC releases the disk ballast before Pebble retries.
func openPebble(dir string, cacheBytes int64, logger pebble.Logger, fs vfs.FS, memTable int) (*pebble.DB, error) {
	popts := &pebble.Options{
		FS:                 fs,
		Logger:             logger,
		Merger:             index.Merger(),
		MemTableSize:       uint64(memTable),
		Cleaner:            noRecycleCleaner{},
		FormatMajorVersion: pebbleFormat,
	}
	popts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebbleCompression })
	for l := range popts.Levels {
		popts.Levels[l].BlockSize = pebbleBlockSize
	}
	popts.Cache = pebble.NewCache(cacheBytes)
	pdb, err := pebble.Open(dir, popts)
	popts.Cache.Unref() // the open database holds its own reference
	if err != nil {
		return nil, fmt.Errorf("open pebble: %w", err)
	}
	return pdb, nil
}

// pebbleFormat is the Pebble format a store is created with, and ratcheted
// to when an older store is opened (a one-way upgrade). It must be at least
// the first format whose tables may use MinLZ: Pebble silently replaces a
// compression profile that mentions MinLZ (as every profile but the uniform
// ones does) with Snappy on older table formats, so with Pebble's default
// format pebbleCompression below was Snappy on every level.
const pebbleFormat = pebble.FormatNewest

// pebbleCompression compresses every level but L6 with Pebble's "balanced"
// profile (per block, zstd level 1 where it saves 20% over MinLZ, else
// MinLZ) and L6, where a long-running store keeps most of its bytes, with
// zstd level 3. A young store's bytes sit in L0 until compaction reaches
// them, so flushes get the balanced profile too; with 32 KiB blocks MinLZ
// alone already compresses stream records about 14x, and the adaptive
// choice keeps zstd's CPU to the blocks where it pays.
var pebbleCompression = func() pebble.DBCompressionSettings {
	cs := pebble.DBCompressionGood
	for l := 0; l < len(cs.Levels)-1; l++ {
		cs.Levels[l] = block.BalancedCompression
	}
	return cs
}()

// pebbleBlockSize is the uncompressed size of a table block, instead of
// Pebble's 4 KiB. Stream records (label sets) dominate the bytes of a store
// with many short-lived series and repeat most of their label names and
// values from record to record; chunks of series scraped together share
// their timestamps. zstd finds 2-3x more of that redundancy in 32 KiB than
// in 4 KiB (zstd -3 on a medium weft-bench store: stream records 5.5x ->
// 13x, chunks 3.5x -> 4.5x). Reads are mostly range scans over many series,
// which read whole blocks anyway.
const pebbleBlockSize = 32 << 10

// pebbleMemTableSize is Pebble's memtable size. Sealed chunks arrive as a
// steady stream of ~250-byte values; Pebble's 4 MiB default flushed an L0
// table every ~15k chunks and then spent more CPU compacting those small
// tables than the head spent encoding the samples (profile of
// BenchmarkAppendExisting: flush + compaction ~20% of process CPU). A larger
// memtable flushes ~8x less often and lets L0 compactions merge bigger
// inputs. Memtables are allocated outside the Go heap (cgo) and grow from
// 256 KiB up to this size, so small stores do not pay for it.
const pebbleMemTableSize = 32 << 20

// initTimeBounds derives min/max time from the partitions on disk; the head
// extends them during replay and appends.
func (db *DB) initTimeBounds() error {
	parts := db.parts.all()
	if len(parts) == 0 {
		return nil
	}
	r, err := db.newChunkReader()
	if err != nil {
		return err
	}
	defer r.Close()
	lo := []byte{tagChunk}
	if r.it.SeekGE(lo) {
		if _, _, mint, ok := parseChunkKey(r.it.Key()); ok {
			db.observeTime(mint)
		}
	}
	if r.it.Last() {
		if _, _, mint, ok := parseChunkKey(r.it.Key()); ok {
			if v, err := r.it.ValueAndErr(); err == nil {
				if c, err := decodeChunkValue(v, mint); err == nil {
					db.observeTime(c.maxt)
				}
			}
		}
	}
	return r.it.Error()
}

func (db *DB) observeTime(t int64) {
	for {
		cur := db.minT.Load()
		if t >= cur || db.minT.CompareAndSwap(cur, t) {
			break
		}
	}
	for {
		cur := db.maxT.Load()
		if t <= cur || db.maxT.CompareAndSwap(cur, t) {
			break
		}
	}
}

// StartTime returns the oldest sample timestamp, or math.MaxInt64 when empty.
func (db *DB) StartTime() (int64, error) {
	return db.minT.Load(), nil
}

func (db *DB) backgroundLoop() {
	defer db.wg.Done()
	cp := time.NewTicker(db.opts.CheckpointInterval)
	defer cp.Stop()
	comp := time.NewTicker(db.opts.CompactionInterval)
	defer comp.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-db.stop
		cancel()
	}()
	for {
		select {
		case <-db.stop:
			return
		case <-cp.C:
			if err := db.Checkpoint(ctx); err != nil && ctx.Err() == nil {
				db.log.Error("wal_checkpoint_failed", "err", err)
			}
		case <-comp.C:
			if err := db.Compact(ctx); err != nil && ctx.Err() == nil {
				db.log.Error("compaction_failed", "err", err)
			}
		}
	}
}

// enqueueSealed hands series with newly sealed chunks to the sealer.
func (db *DB) enqueueSealed(ss []*memSeries) {
	db.sealMu.Lock()
	db.sealQ = append(db.sealQ, ss...)
	n := len(db.sealQ)
	db.sealMu.Unlock()
	if n < sealBatchSeries {
		return // the sealer's ticker picks them up within sealMaxDelay
	}
	select {
	case db.sealKick <- struct{}{}:
	default:
	}
}

// Sealed chunks are written to Pebble in batches of at least
// sealBatchSeries series, or after sealMaxDelay, whichever comes first.
// A commit of 1000 series seals ~8 chunks; waking the sealer for each such
// commit cost one Pebble batch commit (and Pebble WAL write) per ~8 chunks.
// Until written, sealed chunks stay readable in the head, so the delay
// changes nothing a query sees; it bounds the head memory they hold (~250
// bytes each).
const (
	sealBatchSeries = 512
	sealMaxDelay    = 250 * time.Millisecond
)

// sealerLoop writes queued sealed chunks to Pebble until Close.
func (db *DB) sealerLoop() {
	defer db.wg.Done()
	var batch []*memSeries
	tick := time.NewTicker(sealMaxDelay)
	defer tick.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-db.sealKick:
		case <-tick.C:
		}
		db.sealMu.Lock()
		batch, db.sealQ = db.sealQ, batch[:0]
		db.sealMu.Unlock()
		if err := db.writePending(batch); err != nil {
			// The chunks stay pending in the head; the next checkpoint or
			// flush writes them again.
			db.log.Warn("write_sealed_chunks_failed", "err", err)
		}
		clear(batch)
	}
}

// Close closes the metric store. A DB from Open owns its substrate and
// closes it all (see Substrate.Close); a substrate's own store is closed by
// the substrate. Close is idempotent.
func (db *DB) Close() error {
	if db.ownsSub {
		return db.sub.Close()
	}
	return db.close()
}

// close stops the background loop, writes sealed chunks, checkpoints the
// WAL and closes it. Open chunks stay in the head (and the WAL); call Flush
// first to seal them. Pebble and the index stay open: they are the
// substrate's.
func (db *DB) close() error {
	var err error
	db.closeOnce.Do(func() {
		close(db.stop)
		db.wg.Wait()
		db.maintMu.Lock()
		db.closed.Store(true)
		db.maintMu.Unlock()
		var ss []*memSeries
		if herr := db.sub.Health(); herr != nil {
			// Low on space or failed: the head is durable in the WAL
			// already; writing it out now could fill the disk or hang.
			db.log.Warn("close_without_flush", "reason", herr)
			err = db.wal.Close()
			return
		}
		db.series.forEach(func(s *memSeries) { ss = append(ss, s) })
		err = db.writePending(ss)
		if err == nil {
			err = db.settleOnClose()
		}
		err = errors.Join(err, db.wal.Close())
	})
	return err
}

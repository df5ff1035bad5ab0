package blocks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/weftdb/weft/cluster/kafkalog"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

func TestFSBucket(t *testing.T) {
	ctx := context.Background()
	b, err := NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"blocks/a/meta.json", "blocks/a/store/x", "other/y"} {
		if err := b.Upload(ctx, n, bytes.NewReader([]byte(n)), int64(len(n))); err != nil {
			t.Fatal(err)
		}
	}
	names, err := b.List(ctx, "blocks/")
	if err != nil || fmt.Sprint(names) != "[blocks/a/meta.json blocks/a/store/x]" {
		t.Fatalf("List = %v, %v", names, err)
	}
	rc, err := b.Get(ctx, "blocks/a/store/x")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "blocks/a/store/x" {
		t.Fatalf("Get = %q", got)
	}
	if err := b.Delete(ctx, "blocks/a/store/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "blocks/a/store/x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a deleted object = %v, want ErrNotFound", err)
	}
	if err := b.Delete(ctx, "blocks/a/store/x"); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
	if err := b.Upload(ctx, "../escape", bytes.NewReader(nil), 0); err != nil {
		t.Fatal(err) // cleaned to "escape", inside the bucket
	}
	if _, err := b.Get(ctx, "escape"); err != nil {
		t.Fatalf("a name with .. escaped the bucket: %v", err)
	}
}

// failingCommits wraps a Log whose commits fail while fail is set: a
// builder that uploads and then dies before its commit.
type failingCommits struct {
	Log
	fail atomic.Bool
}

func (f *failingCommits) Commit(ctx context.Context, next map[int32]int64) error {
	if f.fail.Load() {
		return errors.New("injected commit failure")
	}
	return f.Log.Commit(ctx, next)
}

// TestBuildAndRead: records of two record-time windows become two blocks
// (the first closed by the second's records, the second by idleness);
// the reader serves their samples and lines; a builder that dies between
// upload and commit rebuilds the same blocks, not new ones.
func TestBuildAndRead(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, kafkalog.DefaultTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kopt := kafkalog.DefaultOptions()
	kopt.Brokers = c.ListenAddrs()
	kopt.FetchMaxWait = 100 * time.Millisecond
	p, err := kafkalog.NewProducer(kopt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sink := kafkalog.NewSink(p, 1, 0)
	ctx := context.Background()
	data := time.Now().Add(-time.Hour).Truncate(time.Second)
	write := func(from int) {
		app := sink.AppenderV2(ctx)
		for i := from; i < from+10; i++ {
			ls := labels.FromStrings("__name__", "gpu_mem_used_bytes", "gpu", fmt.Sprint(i))
			if _, err := app.Append(0, ls, 0, data.Add(time.Duration(i)*time.Second).UnixMilli(), float64(i), nil, nil, promstorage.AOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := sink.Push(ctx, []logstore.PushStream{{Labels: labels.FromStrings("job", "train"),
			Entries: []logentry.Entry{{Timestamp: data.Add(time.Duration(from) * time.Second).UnixNano(), Line: fmt.Sprint("batch ", from)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	const window = time.Second
	// Windows are aligned to the clock: start just after a boundary, so
	// the first batch's samples and line do not straddle one.
	time.Sleep(time.Until(time.Now().Truncate(window).Add(window + 20*time.Millisecond)))
	write(0)
	time.Sleep(window + 100*time.Millisecond) // the next records are in a later window
	write(10)

	bucket, err := NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	build := func(fail bool) int {
		t.Helper()
		rd, err := kafkalog.NewReader(kopt, "weft-block-builder", []int32{0})
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		log := &failingCommits{Log: rd}
		log.fail.Store(fail)
		b, err := NewBuilder(BuilderOptions{Partitions: []int32{0}, Window: window, Grace: 100 * time.Millisecond, ScratchDir: t.TempDir()}, log, bucket)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer b.Stop()
		deadline := time.Now().Add(20 * time.Second)
		for {
			ids, err := listBlocks(ctx, bucket)
			if err != nil {
				t.Fatal(err)
			}
			if (fail && b.Uploaded() == 0 && len(ids) >= 1) || (!fail && len(ids) >= 2) {
				return len(ids)
			}
			if time.Now().After(deadline) {
				t.Fatalf("blocks after 20s: %v (uploaded %d)", ids, b.Uploaded())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The first builder uploads the first block and cannot commit.
	if n := build(true); n != 1 {
		t.Fatalf("%d blocks after the failing builder", n)
	}
	// The next rebuilds it (same ID) and builds the second.
	if n := build(false); n != 2 {
		t.Fatalf("%d blocks after the rebuild, want 2 (the first replaced, not duplicated)", n)
	}

	r, err := NewReader(ReaderOptions{CacheDir: t.TempDir(), SyncInterval: time.Hour}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	metas := r.Blocks()
	for _, m := range metas {
		for _, f := range m.Files {
			if strings.Contains(f.Path, "ballast") {
				t.Errorf("block %s uploads %s (%d bytes): a block's store keeps no disk ballast", m.ID, f.Path, f.Size)
			}
		}
	}
	if len(metas) != 2 || metas[0].Offsets.End != metas[1].Offsets.Start || metas[0].Stats.Samples != 10 || metas[1].Stats.Entries != 1 {
		t.Fatalf("blocks: %+v", metas)
	}
	if metas[0].MinTime != data.UnixMilli() || metas[1].MaxTime != data.Add(19*time.Second).UnixMilli() {
		t.Fatalf("block times: %d..%d, %d..%d", metas[0].MinTime, metas[0].MaxTime, metas[1].MinTime, metas[1].MaxTime)
	}
	q, err := r.Querier(data.UnixMilli(), data.Add(time.Minute).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	ss := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "gpu_mem_used_bytes"))
	n := 0
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			n++
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	_ = q.Close()
	if n != 20 {
		t.Fatalf("%d samples read from the blocks, want 20", n)
	}
	// Outside every block's time range: nothing, no block touched.
	q, _ = r.Querier(data.Add(-2*time.Hour).UnixMilli(), data.Add(-time.Hour).UnixMilli())
	if ss := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "gpu_mem_used_bytes")); ss.Next() {
		t.Fatal("series outside the blocks' range")
	}
	_ = q.Close()
	it, err := r.Select(ctx, logentry.SelectParams{Start: data.UnixNano(), End: data.Add(time.Minute).UnixNano(),
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "train")}})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for it.Next() {
		_, e := it.At()
		lines = append(lines, e.Line)
	}
	_ = it.Close()
	if fmt.Sprint(lines) != "[batch 0 batch 10]" {
		t.Fatalf("lines from the blocks: %v", lines)
	}
	vals, err := r.LabelValues(ctx, "job", data.UnixNano(), data.Add(time.Minute).UnixNano())
	if err != nil || fmt.Sprint(vals) != "[train]" {
		t.Fatalf("label values %v, %v", vals, err)
	}
}

// idleLog is a Log with nothing in it.
type idleLog struct{}

func (idleLog) Committed(context.Context) (map[int32]int64, error) { return map[int32]int64{}, nil }
func (idleLog) Start(map[int32]int64)                              {}
func (idleLog) Poll(ctx context.Context) (kafkalog.Poll, error) {
	<-ctx.Done()
	return kafkalog.Poll{}, ctx.Err()
}
func (idleLog) Commit(context.Context, map[int32]int64) error { return nil }

// countingGets counts the objects read from a bucket.
type countingGets struct {
	Bucket
	gets atomic.Int64
}

func (c *countingGets) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Bucket.Get(ctx, name)
}

// TestRetention: the builder deletes its partitions' blocks whose newest
// data is past the retention, meta.json and every file, and leaves newer
// blocks and other builders' partitions alone, reading neither the others'
// meta.json nor again those of blocks it kept; the loop started by Start
// does the same.
func TestRetention(t *testing.T) {
	ctx := context.Background()
	fsb, err := NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bucket := &countingGets{Bucket: fsb}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	put := func(p int32, first int64, maxTime time.Time) string {
		t.Helper()
		dir := t.TempDir()
		for _, f := range []string{"pebble/000001.sst", "pebble/MANIFEST-000001"} {
			if err := os.MkdirAll(filepath.Join(dir, "pebble"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m := &Meta{Version: MetaVersion, ID: BlockID(p, first), Partition: p, MinTime: maxTime.Add(-2 * time.Hour).UnixMilli(), MaxTime: maxTime.UnixMilli()}
		if err := upload(ctx, bucket, dir, m, ""); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	old := put(0, 0, now.Add(-49*time.Hour))
	fresh := put(0, 100, now.Add(-47*time.Hour))
	otherOld := put(1, 0, now.Add(-72*time.Hour))
	objects := func() string {
		t.Helper()
		names, err := bucket.List(ctx, Prefix)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(names, " ")
	}
	b, err := NewBuilder(BuilderOptions{Partitions: []int32{0}, ScratchDir: t.TempDir(), Retention: 48 * time.Hour, Now: func() time.Time { return now }}, idleLog{}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.ApplyRetention(ctx); err != nil || n != 1 {
		t.Fatalf("ApplyRetention = %d, %v; want 1 block deleted", n, err)
	}
	got := objects()
	if strings.Contains(got, old) {
		t.Errorf("objects of the expired block %s remain: %s", old, got)
	}
	for _, id := range []string{fresh, otherOld} {
		for _, o := range []string{"/meta.json", "/store/pebble/000001.sst", "/store/pebble/MANIFEST-000001"} {
			if !strings.Contains(got, Prefix+id+o) {
				t.Errorf("%s%s was deleted: %s", id, o, got)
			}
		}
	}
	if g := bucket.gets.Load(); g != 2 {
		t.Errorf("first pass read %d objects, want the meta.json of partition 0's 2 blocks", g)
	}
	if n, err := b.ApplyRetention(ctx); err != nil || n != 0 {
		t.Fatalf("second pass = %d, %v; want nothing", n, err)
	}
	if g := bucket.gets.Load(); g != 2 {
		t.Errorf("second pass read %d objects, want none (the kept block's max_time is known)", g-2)
	}
	for _, id := range []string{old, fresh, otherOld, BlockID(12345, 1<<40)} {
		want, _ := strconv.Atoi(id[1:6])
		if p, ok := partitionOfID(id); !ok || int(p) != want {
			t.Errorf("partitionOfID(%q) = %d, %v", id, p, ok)
		}
	}
	for _, id := range []string{"", "p1-o2", "x00001-o00000000000000000001", "p00001-o00000000000000000001x"} {
		if _, ok := partitionOfID(id); ok {
			t.Errorf("partitionOfID(%q) accepted", id)
		}
	}

	// The loop: a day later the fresh block goes too.
	now = now.Add(24 * time.Hour)
	lb, err := NewBuilder(BuilderOptions{Partitions: []int32{0}, ScratchDir: t.TempDir(), Retention: 48 * time.Hour, RetentionInterval: 10 * time.Millisecond,
		Now: func() time.Time { return now }}, idleLog{}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := lb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(objects(), fresh) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	lb.Stop()
	if got := objects(); strings.Contains(got, fresh) || !strings.Contains(got, otherOld) {
		t.Errorf("after the loop's pass: %s", got)
	}
	if _, err := NewBuilder(BuilderOptions{Partitions: []int32{0}, ScratchDir: t.TempDir(), Retention: -time.Hour}, idleLog{}, bucket); err == nil {
		t.Error("a negative retention was accepted")
	}
}

package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func openStarted(tb testing.TB, dir string, opts Options) (*WAL, [][]byte) {
	tb.Helper()
	w, err := Open(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	var got [][]byte
	if err := w.Replay(func(rec []byte) error {
		got = append(got, bytes.Clone(rec))
		return nil
	}); err != nil {
		tb.Fatalf("replay: %v", err)
	}
	w.Start()
	tb.Cleanup(func() { _ = w.Close() })
	return w, got
}

func logSync(tb testing.TB, w *WAL, recs ...string) {
	tb.Helper()
	var b []byte
	for _, r := range recs {
		b = AppendRecord(b, []byte(r))
	}
	seq, err := w.Log(b)
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.Sync(seq); err != nil {
		tb.Fatal(err)
	}
}

func TestReplayAfterReopen(t *testing.T) {
	dir := t.TempDir()
	w, _ := openStarted(t, dir, DefaultOptions())
	logSync(t, w, "a", "b")
	logSync(t, w, "c")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := openStarted(t, dir, DefaultOptions())
	if fmt.Sprint(asStrings(got)) != "[a b c]" {
		t.Fatalf("replayed %q", got)
	}
}

func asStrings(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}

func lastSegment(tb testing.TB, dir string) string {
	tb.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "0*"))
	var best string
	for _, s := range segs {
		if st, err := os.Stat(s); err == nil && st.Size() > 0 {
			best = s
		}
	}
	return best
}

func TestTornTailTruncated(t *testing.T) {
	cases := []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"half header", func(b []byte) []byte { return append(b, 0, 0, 0) }},
		{"short payload", func(b []byte) []byte {
			return AppendRecord(b, []byte("torn-record"))[:len(b)+headerSize+3]
		}},
		{"bad checksum", func(b []byte) []byte {
			b = AppendRecord(b, []byte("flipped"))
			b[len(b)-1] ^= 0xff
			return b
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, _ := openStarted(t, dir, DefaultOptions())
			logSync(t, w, "one", "two")
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			seg := lastSegment(t, dir)
			b, _ := os.ReadFile(seg)
			good := len(b)
			if err := os.WriteFile(seg, tc.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			w2, got := openStarted(t, dir, DefaultOptions())
			if fmt.Sprint(asStrings(got)) != "[one two]" {
				t.Fatalf("replayed %q", got)
			}
			if st, _ := os.Stat(seg); st.Size() != int64(good) {
				t.Fatalf("segment is %d bytes after truncation, want %d", st.Size(), good)
			}
			logSync(t, w2, "three")
		})
	}
}

func TestCorruptMiddleReported(t *testing.T) {
	dir := t.TempDir()
	w, _ := openStarted(t, dir, DefaultOptions())
	logSync(t, w, "first", "second")
	if _, err := w.Cut(); err != nil {
		t.Fatal(err)
	}
	logSync(t, w, "third")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, segName(0))
	b, _ := os.ReadFile(first)
	b[headerSize+len("first")+headerSize] ^= 0xff // first byte of "second"
	if err := os.WriteFile(first, b, 0o644); err != nil {
		t.Fatal(err)
	}
	w2, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = w2.Replay(func([]byte) error { return nil })
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != segName(0) || ce.Offset != int64(headerSize+len("first")) {
		t.Fatalf("err = %v, want corruption in %s at %d", err, segName(0), headerSize+len("first"))
	}
}

func TestCheckpointReplacesSegments(t *testing.T) {
	dir := t.TempDir()
	w, _ := openStarted(t, dir, DefaultOptions())
	logSync(t, w, "old1", "old2")
	n, err := w.Cut()
	if err != nil {
		t.Fatal(err)
	}
	logSync(t, w, "new")
	if err := w.WriteCheckpoint(n, func(add func([]byte) error) error { return add([]byte("state")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, segName(0))); !os.IsNotExist(err) {
		t.Fatalf("old segment still there: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := openStarted(t, dir, DefaultOptions())
	if fmt.Sprint(asStrings(got)) != "[state new]" {
		t.Fatalf("replayed %q", got)
	}
}

func TestGroupCommitSharesFsyncs(t *testing.T) {
	w, _ := openStarted(t, t.TempDir(), DefaultOptions())
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				logSync(t, w, "x")
			}
		}()
	}
	wg.Wait()
	if f := w.Fsyncs(); f == 0 || f > writers*each {
		t.Fatalf("fsyncs = %d for %d commits", f, writers*each)
	}
}

func TestSegmentRotation(t *testing.T) {
	dir := t.TempDir()
	w, _ := openStarted(t, dir, Options{SegmentSize: 64})
	for i := 0; i < 10; i++ {
		logSync(t, w, fmt.Sprintf("record-%02d-padding-padding", i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "0*"))
	if len(segs) < 5 {
		t.Fatalf("%d segments, want rotation", len(segs))
	}
	_, got := openStarted(t, dir, Options{SegmentSize: 64})
	if len(got) != 10 || string(got[9]) != "record-09-padding-padding" {
		t.Fatalf("replayed %q", got)
	}
}

func FuzzReplay(f *testing.F) {
	f.Add(AppendRecord(AppendRecord(nil, []byte("a")), []byte("bc")))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, segName(0)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := Open(dir, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		_ = w.Replay(func([]byte) error { return nil })
		_ = w.Close()
	})
}

// TestBeginEndRecordMatchesAppendRecord checks in-place framing against
// AppendRecord, for empty and non-empty payloads after existing bytes.
func TestBeginEndRecordMatchesAppendRecord(t *testing.T) {
	for _, payload := range [][]byte{{}, []byte("a"), bytes.Repeat([]byte{0xfe, 0x01}, 5000)} {
		t.Run(fmt.Sprint(len(payload)), func(t *testing.T) {
			prefix := []byte("previous record bytes")
			want := AppendRecord(append([]byte(nil), prefix...), payload)
			got, start := BeginRecord(append([]byte(nil), prefix...))
			got = EndRecord(append(got, payload...), start)
			if !bytes.Equal(got, want) {
				t.Fatalf("in-place framing differs from AppendRecord")
			}
		})
	}
}

// With a SyncInterval, Sync returns once the batch is in the segment file
// (visible to another reader, so it survives the process being killed),
// and a background fsync follows.
func TestSyncIntervalWritesBeforeAcknowledging(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.SyncInterval = 10 * time.Millisecond
	w, _ := openStarted(t, dir, opts)
	for i := range 20 {
		logSync(t, w, fmt.Sprintf("record-%02d", i))
		data, err := os.ReadFile(filepath.Join(dir, segName(0)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(fmt.Sprintf("record-%02d", i))) {
			t.Fatalf("record %d acknowledged but not in the segment file", i)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.Fsyncs() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no periodic fsync within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := openStarted(t, dir, opts)
	if len(got) != 20 || string(got[19]) != "record-19" {
		t.Fatalf("replayed %d records", len(got))
	}
}

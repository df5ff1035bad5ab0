package storage

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/weftdb/weft/storage/internal/wal"
)

// checkpointName is the file the WAL replays first (internal/wal).
const checkpointName = "checkpoint.00000000"

// realCheckpointRecords writes series, floats, histograms, exemplars and
// metadata to a store, checkpoints it and returns the checkpoint's records.
func realCheckpointRecords(tb testing.TB) [][]byte {
	tb.Helper()
	dir := tb.TempDir()
	db, err := Open(context.Background(), dir, testOptions())
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	app := db.AppenderV2(context.Background())
	for i := range 3 {
		ls := labels.FromStrings("__name__", "up", "job", string(rune('a'+i)))
		for t := int64(0); t < 5; t++ {
			opts := promstorage.AOptions{}
			if t == 4 {
				opts.Exemplars = []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "abc"), Value: 1, Ts: t * 1000, HasTs: true}}
			}
			if _, err := app.Append(0, ls, 0, t*1000, float64(t), nil, nil, opts); err != nil {
				tb.Fatal(err)
			}
		}
	}
	h := tsdbutil.GenerateTestHistogram(1)
	if _, err := app.Append(0, labels.FromStrings("__name__", "lat"), 0, 1000, 0, h, nil, promstorage.AOptions{}); err != nil {
		tb.Fatal(err)
	}
	if _, err := app.Append(0, labels.FromStrings("__name__", "flat"), 0, 1000, 0, nil, h.ToFloat(nil), promstorage.AOptions{}); err != nil {
		tb.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		tb.Fatal(err)
	}
	if err := db.Checkpoint(context.Background()); err != nil {
		tb.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "wal", "checkpoint.*"))
	if len(names) != 1 {
		tb.Fatalf("checkpoints %v", names)
	}
	b, err := os.ReadFile(names[0])
	if err != nil {
		tb.Fatal(err)
	}
	// Frames: 4 bytes length, 4 bytes CRC, payload (wal.AppendRecord).
	var recs [][]byte
	for len(b) >= 8 {
		n := int(binary.BigEndian.Uint32(b))
		if 8+n > len(b) {
			tb.Fatalf("torn checkpoint")
		}
		recs = append(recs, append([]byte(nil), b[8:8+n]...))
		b = b[8+n:]
	}
	if len(recs) == 0 {
		tb.Fatal("empty checkpoint")
	}
	return recs
}

// appendFuzzRecords encodes records as the fuzz input format: each record
// behind its uvarint length.
func appendFuzzRecords(dst []byte, recs ...[]byte) []byte {
	for _, r := range recs {
		dst = binary.AppendUvarint(dst, uint64(len(r)))
		dst = append(dst, r...)
	}
	return dst
}

// FuzzCheckpointReplay opens a store whose WAL checkpoint holds the fuzz
// input's records (uvarint length, payload; each framed correctly, so the
// fuzzer reaches the record decoder and replay rather than the CRC): Open
// never panics, and a store that opens answers a query over everything and
// closes cleanly. Seeds: a real checkpoint's records, alone and in pieces.
func FuzzCheckpointReplay(f *testing.F) {
	recs := realCheckpointRecords(f)
	f.Add(appendFuzzRecords(nil, recs...))
	for _, r := range recs {
		f.Add(appendFuzzRecords(nil, r))
	}
	f.Add(appendFuzzRecords(nil, recs[len(recs)-1], recs[0])) // samples before their series
	f.Add([]byte{})
	f.Add([]byte{3, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		var file []byte
		for len(in) > 0 {
			n, k := binary.Uvarint(in)
			if k <= 0 {
				break
			}
			in = in[k:]
			n = min(n, uint64(len(in)))
			file = wal.AppendRecord(file, in[:n])
			in = in[n:]
		}
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "wal", checkpointName), file, 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := Open(context.Background(), dir, testOptions())
		if err != nil {
			return // refused: the error says why
		}
		_ = queryAll(t, db, -1<<62, 1<<62)
		if err := db.Close(); err != nil {
			t.Fatalf("close after replaying a checkpoint that opened: %v", err)
		}
	})
}

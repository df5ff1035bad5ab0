package app

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/zstd"

	"github.com/weftdb/weft/index"
)

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// diskTexts returns every byte of a stopped weft's data directory in every
// form a secret could be read back from: each file as it is on disk (the
// WALs, the lock, the query log, Pebble's files), every key and value of
// the Pebble database (its blocks decompressed by Pebble), and every zstd
// frame inside those values decompressed (log chunks, trace pages). A plain
// grep of the files alone would miss what compression hides.
func diskTexts(tb testing.TB, dir string) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	pebbleDir := filepath.Join(dir, "pebble") // storage.OpenSubstrate's
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[path] = b
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	db, err := pebble.Open(pebbleDir, &pebble.Options{Merger: index.Merger(), ReadOnly: true, Logger: quietLogger{tb}})
	if err != nil {
		tb.Fatalf("open pebble read-only: %v", err)
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer it.Close()
	dec, err := zstd.NewReader(nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer dec.Close()
	var kv, frames bytes.Buffer
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			tb.Fatal(err)
		}
		kv.Write(it.Key())
		kv.Write(v)
		for rest := v; ; {
			i := bytes.Index(rest, zstdMagic)
			if i < 0 {
				break
			}
			if err := dec.Reset(bytes.NewReader(rest[i:])); err == nil {
				b, _ := io.ReadAll(dec) // a frame's bytes, then an error at what follows it
				frames.Write(b)
			}
			rest = rest[i+len(zstdMagic):]
		}
	}
	if err := it.Error(); err != nil {
		tb.Fatal(err)
	}
	out["pebble keys and values"] = kv.Bytes()
	out["zstd frames in pebble values"] = frames.Bytes()
	return out
}

// quietLogger keeps Pebble's recovery lines out of the test output.
type quietLogger struct{ tb testing.TB }

func (quietLogger) Infof(string, ...any)           {}
func (l quietLogger) Errorf(f string, args ...any) { l.tb.Logf(f, args...) }
func (l quietLogger) Fatalf(f string, args ...any) { l.tb.Fatalf(f, args...) }

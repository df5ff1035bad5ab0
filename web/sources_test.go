package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestBundleUpToDate fails when the committed bundle (dist/) was not built
// from the sources as they are: dist/SOURCES.sha256 is the hash
// scripts/build.mjs computed over its inputs, recomputed here the same way.
// Rebuild with `make web`.
func TestBundleUpToDate(t *testing.T) {
	want, err := os.ReadFile("dist/SOURCES.sha256")
	if err != nil {
		t.Fatalf("read dist/SOURCES.sha256: %v (run `make web`)", err)
	}
	got, err := sourcesHash(".")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(want)) != got {
		t.Fatalf("web/dist is stale: the sources hash to %s, the bundle was built from %s; run `make web` and commit web/dist", got, strings.TrimSpace(string(want)))
	}
}

// sourcesHash mirrors sourcesHash in scripts/build.mjs.
func sourcesHash(root string) (string, error) {
	files := []string{"package.json", "package-lock.json", "scripts/build.mjs"}
	err := filepath.WalkDir(filepath.Join(root, "src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("walk sources: %w", err)
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return "", fmt.Errorf("read source: %w", err)
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s\x00%s\n", f, hex.EncodeToString(sum[:]))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TestBundleBudget checks the budget on the embedded bundle itself:
// every script and style sheet together, gzipped, is at most 400 KiB, so
// the first page (a part of them) is too. scripts/build.mjs checks the
// first page alone.
func TestBundleBudget(t *testing.T) {
	const budget = 400 << 10
	total := 0
	err := fs.WalkDir(dist, "dist/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(dist, p)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(b)
		_ = zw.Close()
		total += buf.Len()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("all assets: %.1f KiB gzipped", float64(total)/1024)
	if total > budget {
		t.Fatalf("assets are %d bytes gzipped, over the %d budget", total, budget)
	}
}

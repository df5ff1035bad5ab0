package index

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportLint keeps the index free of transport and of weft: it must not
// import net/http, gRPC, or any weft package except the leaf
// internal/promlabels, which imports nothing of weft (see
// docs/architecture.md).
func TestImportLint(t *testing.T) {
	forbidden := func(path string) bool {
		if path == "github.com/weftdb/weft/internal/promlabels" {
			return false
		}
		return path == "net/http" || strings.HasPrefix(path, "net/http/") ||
			path == "google.golang.org/grpc" || strings.HasPrefix(path, "google.golang.org/grpc/") ||
			path == "github.com/weftdb/weft" || strings.HasPrefix(path, "github.com/weftdb/weft/")
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := filepath.Glob("*/*.go") // internal packages below index, if any
	files = append(files, sub...)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if forbidden(p) {
				t.Errorf("%s imports %s; the index must not import transport or weft packages", f, p)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}

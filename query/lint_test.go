package query_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportLint keeps query free of transport and configuration: it must not
// import net/http, gRPC, weft's api or web packages, or a config package (see
// docs/architecture.md). Options arrive as structs.
func TestImportLint(t *testing.T) {
	forbidden := func(p string) bool {
		for _, f := range []string{"net/http", "google.golang.org/grpc", "github.com/weftdb/weft/api",
			"github.com/weftdb/weft/web", "github.com/weftdb/weft/cmd", "github.com/prometheus/prometheus/config", "gopkg.in/yaml.v3"} {
			if p == f || strings.HasPrefix(p, f+"/") {
				return true
			}
		}
		return false
	}
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no source files checked")
	}
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if forbidden(p) {
				t.Errorf("%s imports %s; query must not import transport, api, web or config packages", f, p)
			}
		}
	}
}

// Package lint holds the repository's one import rule: a table of which weft
// packages each layer may import and which libraries nobody imports, checked
// over every package of the module (docs/architecture.md explains the
// layers; docs/development.md how to change the table).
package lint

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/weftdb/weft"

// layer says what the packages under a prefix may import. Rules match the
// longest prefix; a package under no prefix fails the test, so a new
// top-level package must be placed in the table.
type layer struct {
	prefix string
	// weft lists the weft packages (and everything below them) the layer's
	// non-test code may import; its own prefix is always allowed. "*" allows
	// every weft package.
	weft []string
	// forbidden are non-weft packages (and everything below) its non-test
	// code must not import: transport and configuration stay out of the
	// storage, index and query layers.
	forbidden []string
}

var (
	transport = []string{"net/http", "google.golang.org/grpc"}
	config    = []string{"go.yaml.in/yaml", "github.com/prometheus/prometheus/config"}
	// remote are the clients of the scale-out engines (Kafka-API log,
	// S3-API bucket): only cluster/ and cmd talk to them.
	remote = []string{"github.com/twmb/franz-go", "github.com/minio/minio-go"}
	leaves = []string{"internal/promlabels", "internal/tenantid"}
)

// layers is the table: the design card's dependency direction,
// cmd → api, web → ingest, query → storage → index.
var layers = []layer{
	{prefix: "cmd", weft: []string{"*"}},
	{prefix: "e2e", weft: []string{"*"}},
	{prefix: "internal/lint", weft: nil},
	{prefix: "internal/promlabels", weft: nil},
	{prefix: "internal/tenantid", weft: nil}, // the tenant ID rule, shared with gpuagent
	{prefix: "internal/gputelemetry", weft: nil},
	{prefix: "internal/testca", weft: nil}, // certificates for TLS tests
	{prefix: "proto", weft: nil},
	{prefix: "index", weft: leaves, forbidden: append(slices.Clone(transport), remote...)},
	{prefix: "storage", weft: append([]string{"index"}, leaves...), forbidden: slices.Concat(transport, config, remote)},
	{prefix: "query", weft: append([]string{"storage", "index"}, leaves...), forbidden: slices.Concat(transport, config, remote)},
	{prefix: "ingest", weft: append([]string{"storage", "index", "proto"}, leaves...), forbidden: slices.Concat(transport, []string{"go.yaml.in/yaml"}, remote)},
	// The scale-out roles' parts (docs/scale-out.md): the ingest log, the
	// ingester's consumer, the fan-out querier, blocks in a bucket. Over
	// the single-node packages, beside api (neither imports the other).
	{prefix: "cluster", weft: append([]string{"ingest", "query", "storage", "index"}, leaves...)},
	{prefix: "ruler", weft: append([]string{"query", "storage", "index", "ingest"}, leaves...)},
	// Investigation (docs/investigation.md): over the index, the stores and
	// the engines, beside the ruler; api serves it.
	{prefix: "investigate", weft: append([]string{"query", "storage", "index", "ingest"}, leaves...), forbidden: slices.Concat(transport, config, remote)},
	{prefix: "api", weft: append([]string{"ingest", "query", "storage", "index", "proto", "ruler", "investigate"}, leaves...)},
	{prefix: "web", weft: []string{"api"}},
	{prefix: "gpuagent", weft: []string{"proto", "internal/tenantid"}, forbidden: config},
	{prefix: "bench", weft: []string{"proto", "internal/gputelemetry"}},
}

// oneLibraryPerConcern are libraries no weft code (tests included) imports,
// with the one to use instead.
var oneLibraryPerConcern = map[string]string{
	"regexp":                   "github.com/grafana/regexp (Prometheus' API takes its type; a drop-in faster regexp)",
	"github.com/golang/snappy": "github.com/klauspost/compress/s2 (snappy-compatible, faster)",
	"gopkg.in/yaml.v3":         "go.yaml.in/yaml/v3 (the maintained yaml.v3, which Prometheus uses)",
	"gopkg.in/yaml.v2":         "go.yaml.in/yaml/v3",
}

func under(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }

func layerOf(rel string) (layer, bool) {
	best, found := layer{}, false
	for _, l := range layers {
		if under(rel, l.prefix) && len(l.prefix) > len(best.prefix) {
			best, found = l, true
		}
	}
	return best, found
}

// TestImports checks every package of the module against the table.
func TestImports(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, rest, _ := strings.Cut(line, "|")
		imports, tests, _ := strings.Cut(rest, "|")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		l, ok := layerOf(rel)
		if !ok {
			t.Errorf("%s is in no layer of internal/lint's table: add it", pkg)
			continue
		}
		checked++
		for _, imp := range strings.Fields(imports) {
			if r := under(imp, module); r {
				dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
				if !allowed(l, rel, dep) {
					t.Errorf("%s imports %s: layer %q may import only %v", pkg, imp, l.prefix, l.weft)
				}
				continue
			}
			for _, f := range l.forbidden {
				if under(imp, f) {
					t.Errorf("%s imports %s: layer %q must not import %s", pkg, imp, l.prefix, f)
				}
			}
		}
		for _, imp := range append(strings.Fields(imports), strings.Fields(tests)...) {
			if use, bad := oneLibraryPerConcern[imp]; bad {
				t.Errorf("%s imports %s: use %s", pkg, imp, use)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d packages; did go list change?", checked)
	}
}

func allowed(l layer, rel, dep string) bool {
	if under(dep, l.prefix) {
		return true
	}
	for _, w := range l.weft {
		if w == "*" || under(dep, w) {
			return true
		}
	}
	return false
}

// TestTable: every layer prefix names a directory of the module, so a
// renamed package cannot silently escape its rule.
func TestTable(t *testing.T) {
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := strings.Fields(string(out))
	for _, l := range layers {
		found := slices.ContainsFunc(pkgs, func(p string) bool {
			return under(strings.TrimPrefix(strings.TrimPrefix(p, module), "/"), l.prefix)
		})
		if !found {
			t.Errorf("layer %q matches no package", l.prefix)
		}
	}
}

package traceql

import (
	"testing"

	"github.com/weftdb/weft/internal/importlint"
)

// TestImportLint keeps the TraceQL engine in the query layer: neither it nor
// any weft package it depends on may import transport, api, web, ingest or
// configuration packages.
func TestImportLint(t *testing.T) {
	importlint.Check(t,
		"net/http",
		"google.golang.org/grpc",
		"github.com/weftdb/weft/api",
		"github.com/weftdb/weft/web",
		"github.com/weftdb/weft/cmd",
		"github.com/weftdb/weft/ingest",
		"gopkg.in/yaml.v3",
	)
}

package storage

import (
	"testing"

	"github.com/weftdb/weft/internal/importlint"
)

// TestImportLint keeps storage free of transport and upper-layer packages:
// neither storage nor any weft package it depends on (index, chunkenc,
// internal/...) may import net/http, gRPC, or weft's api, web, ingest or
// query packages.
func TestImportLint(t *testing.T) {
	importlint.Check(t,
		"net/http",
		"google.golang.org/grpc",
		"github.com/weftdb/weft/api",
		"github.com/weftdb/weft/web",
		"github.com/weftdb/weft/ingest",
		"github.com/weftdb/weft/query",
	)
}

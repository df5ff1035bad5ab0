package tracestore

import (
	"testing"

	"github.com/weftdb/weft/internal/importlint"
)

// TestImportLint keeps the trace store free of transport and upper layers:
// neither it nor any weft package it depends on imports net/http, gRPC,
// api, web, ingest or query. The values it exchanges with the TraceQL
// engine live in storage/traceentry (docs/architecture.md).
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

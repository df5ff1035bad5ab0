package logstore

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportLint keeps the log store free of transport and upper layers:
// neither it nor any weft package it depends on imports net/http, gRPC, api,
// web, ingest or query. The values it exchanges with the LogQL engine live
// in storage/logentry (docs/architecture.md).
func TestImportLint(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{
		"net/http",
		"google.golang.org/grpc",
		"github.com/weftdb/weft/api",
		"github.com/weftdb/weft/web",
		"github.com/weftdb/weft/ingest",
		"github.com/weftdb/weft/query",
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "github.com/weftdb/weft/") {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			for _, f := range forbidden {
				if imp == f || strings.HasPrefix(imp, f+"/") {
					t.Errorf("%s imports %s", fields[0], imp)
				}
			}
		}
	}
	if checked < 3 {
		t.Fatalf("checked only %d weft packages; go list output changed?", checked)
	}
}

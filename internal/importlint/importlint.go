// Package importlint is a test helper that keeps a package below its layer:
// neither it nor any weft package it depends on may import a forbidden
// package (docs/architecture.md lists who may import whom).
package importlint

import (
	"os/exec"
	"strings"
	"testing"
)

// Check runs `go list -deps` on the package in the current directory and
// fails t for every weft package among its dependencies (itself included)
// that imports one of forbidden or a package below one of them.
// Third-party dependencies are out of scope: for example Pebble's error
// library links net/http for crash reporting, which weft never calls.
func Check(t testing.TB, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
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
	if checked < 2 {
		t.Fatalf("checked only %d weft packages; go list output changed?", checked)
	}
}

package ruler

import (
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
)

// TestShardPicksGroups: with Options.Shard a ruler evaluates only the
// groups it picks, checks the whole file still, and Reshard moves the
// groups in and out as its answers change.
func TestShardPicksGroups(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "data"))
	var mine atomic.Pointer[string]
	none := ""
	mine.Store(&none)
	opts := DefaultOptions()
	opts.Shard = func(_, group string) bool { return group == *mine.Load() }
	r := s.newRuler(t, opts)
	f := writeFile(t, dir, "rules.yml", `
groups:
  - name: a
    rules:
      - record: a:up
        expr: sum(up)
  - name: b
    rules:
      - record: b:up
        expr: sum(up)
`)
	names := func() []string {
		var out []string
		for _, g := range r.RuleGroups() {
			out = append(out, g.Name())
		}
		slices.Sort(out)
		return out
	}
	if err := r.ApplyConfig(Config{RuleFiles: []string{f}}); err != nil {
		t.Fatal(err)
	}
	r.Start()
	if got := names(); len(got) != 0 {
		t.Fatalf("groups picked by nobody are evaluated: %v", got)
	}
	for _, pick := range []string{"b", "a", ""} {
		mine.Store(&pick)
		if err := r.Reshard(); err != nil {
			t.Fatal(err)
		}
		want := []string{pick}
		if pick == "" {
			want = nil
		}
		if got := names(); !slices.Equal(got, want) {
			t.Fatalf("picking %q evaluates %v", pick, got)
		}
	}
	// A file with an error is refused whole, whatever the shard picks.
	bad := writeFile(t, dir, "bad.yml", "groups:\n  - name: c\n    rules:\n      - record: c\n        expr: sum(\n")
	if err := r.ApplyConfig(Config{RuleFiles: []string{bad}}); err == nil {
		t.Fatal("a broken file outside the shard was taken")
	}
}

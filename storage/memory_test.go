package storage

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// TestMemoryBudgetRefusesNewStreams: past the budget new series and new
// log streams are refused with a *MemoryBudgetError; samples and lines of
// existing streams are taken; under the budget again, new streams are too.
func TestMemoryBudgetRefusesNewStreams(t *testing.T) {
	var used atomic.Int64
	opts := testOptions()
	opts.MemoryBudget = 1000
	opts.MemoryInUse = used.Load
	sub, err := OpenSubstrate(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	db := sub.Metrics()
	set := func(n int64) {
		used.Store(n)
		sub.mem.lastRead.Store(0) // read it now, not after memoryRefresh
	}
	old := labels.FromStrings("__name__", "up", "job", "old")
	mustAppend(t, db, old, 1000, 1)
	push := func(job string, ts int64) error {
		return sub.Logs().Push(context.Background(), []logstore.PushStream{{
			Labels:  labels.FromStrings("job", job),
			Entries: []logentry.Entry{{Timestamp: ts, Line: "x"}},
		}})
	}
	if err := push("old", 1e9); err != nil {
		t.Fatal(err)
	}

	set(2000)
	mustAppend(t, db, old, 2000, 2) // an existing series is accepted
	if err := push("old", 2e9); err != nil {
		t.Fatalf("existing log stream over budget: %v", err)
	}
	app := db.Appender(context.Background())
	_, err = app.Append(0, labels.FromStrings("__name__", "up", "job", "new"), 2000, 1)
	var be *MemoryBudgetError
	if !errors.As(err, &be) || !errors.Is(err, ErrMemoryBudget) || be.Used != 2000 || be.Budget != 1000 {
		t.Fatalf("new series over budget: %v, want a *MemoryBudgetError with the figures", err)
	}
	_ = app.Rollback()
	if err := push("new", 2e9); !errors.Is(err, ErrMemoryBudget) {
		t.Fatalf("new log stream over budget: %v", err)
	}

	set(500)
	mustAppend(t, db, labels.FromStrings("__name__", "up", "job", "new"), 3000, 1)
	if err := push("new", 3e9); err != nil {
		t.Fatalf("new log stream under budget: %v", err)
	}
}

func TestResidentBytes(t *testing.T) {
	if n := residentBytes(); n < 1<<20 || n > 1<<40 {
		t.Fatalf("residentBytes() = %d, not a plausible RSS", n)
	}
}

package usage_test

import (
	"context"
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/ingest/usage"
	"github.com/weftdb/weft/internal/promlabels"
)

// copyingAppendable's appenders declare, as storage's do, that they keep
// nothing of the labels they are given.
type copyingAppendable struct{}

func (copyingAppendable) AppenderV2(context.Context) promstorage.AppenderV2 {
	return copyingAppender{}
}

type copyingAppender struct{ nopAppender }

func (copyingAppender) CopiesLabels() bool { return true }

// TestAccountingWithReusedLabels: the accounting appender says it copies
// labels when what it wraps does, so the remote-write decoder lends it
// labels in a buffer it rewrites for the next series; the counts must
// still go to the right teams. Series of team a, b, a, b in one buffer:
// a and b twice each.
func TestAccountingWithReusedLabels(t *testing.T) {
	acct := usage.New(usage.Options{})
	ap := acct.Appendable(copyingAppendable{}).AppenderV2(tenant.With(context.Background(), "acme"))
	c, ok := ap.(interface{ CopiesLabels() bool })
	if !ok || !c.CopiesLabels() {
		t.Fatal("the accounting appender over a copying appender does not say it copies labels")
	}
	buf := make([]byte, 0, 64)
	for i, team := range []string{"a", "b", "a", "b"} {
		buf = buf[:0]
		for _, s := range []string{labels.MetricName, "m", "team", team} {
			buf = promlabels.AppendString(buf, s)
		}
		ls, ok := promlabels.FromEncoded(unsafe.String(unsafe.SliceData(buf), len(buf)))
		if !ok {
			t.Fatal("labels are not stringlabels in this build")
		}
		if _, err := ap.Append(0, ls, 0, int64(i), 1, nil, nil, promstorage.AOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ap.Commit(); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, u := range acct.Snapshot() {
		got[u.Team] += u.Samples
	}
	if len(got) != 2 || got["a"] != 2 || got["b"] != 2 {
		t.Errorf("samples per team = %v, want a:2 b:2", got)
	}
	if c, ok := acct.Appendable(nopAppendable{}).AppenderV2(context.Background()).(interface{ CopiesLabels() bool }); ok && c.CopiesLabels() {
		t.Error("the accounting appender over an appender that keeps labels says it copies them")
	}
}

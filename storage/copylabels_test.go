//go:build !slicelabels && !dedupelabels

package storage

import (
	"context"
	"fmt"
	"testing"
	"unsafe"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	promstorage "github.com/prometheus/prometheus/storage"
)

// reusedLabels returns labels whose memory is buf: the stringlabels encoding
// (a length byte before each name and value) of pairs, written into buf so
// that the caller can overwrite it afterwards, as the remote-write receiver
// does with its one label buffer per request.
func reusedLabels(buf []byte, pairs ...string) (labels.Labels, []byte) {
	buf = buf[:0]
	for _, s := range pairs {
		buf = append(buf, byte(len(s)))
		buf = append(buf, s...)
	}
	s := unsafe.String(unsafe.SliceData(buf), len(buf))
	return *(*labels.Labels)(unsafe.Pointer(&s)), buf
}

// TestAppenderCopiesLabels proves AppenderV2's CopiesLabels promise: labels
// (and a metadata family name taken from them) whose memory is overwritten
// right after each call are stored intact, for new and for existing series.
func TestAppenderCopiesLabels(t *testing.T) {
	db := openTestDB(t, testOptions())
	app := db.AppenderV2(context.Background())
	if c, ok := app.(interface{ CopiesLabels() bool }); !ok || !c.CopiesLabels() {
		t.Fatal("storage's AppenderV2 does not promise to copy labels")
	}
	buf := make([]byte, 0, 128)
	meta := metadata.Metadata{Type: model.MetricTypeGauge, Help: "GPU utilization.", Unit: "percent"}
	for round := range 2 { // round 0 creates the series, round 1 finds them
		for i := range 50 {
			var ls labels.Labels
			ls, buf = reusedLabels(buf, "__name__", "gpu_util", "gpu", fmt.Sprintf("%03d", i), "run_id", "run-a")
			opts := promstorage.AppendV2Options{
				Metadata:         meta,
				MetricFamilyName: ls.Get("__name__"),
				Exemplars:        []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "abc"), Value: 1, Ts: int64(round*1000 + i), HasTs: true}},
			}
			if _, err := app.Append(0, ls, 0, int64(round*1000+i), float64(i), nil, nil, opts); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
			for j := range buf {
				buf[j] = 'X' // the receiver's next series overwrites the buffer
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}

	q, err := db.Querier(0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "gpu_util"))
	n := 0
	for ss.Next() {
		want := labels.FromStrings("__name__", "gpu_util", "gpu", fmt.Sprintf("%03d", n), "run_id", "run-a")
		if got := ss.At().Labels(); !labels.Equal(got, want) {
			t.Fatalf("series %d stored as %s, want %s", n, got, want)
		}
		n++
	}
	if err := ss.Err(); err != nil || n != 50 {
		t.Fatalf("%d series, err %v", n, err)
	}
	md, err := db.Metadata(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := md["gpu_util"]; len(got) != 1 || got[0] != meta || len(md) != 1 {
		t.Fatalf("metadata %v", md)
	}
}

package otlp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// fuzzIngest decodes arbitrary bytes as an OTLP export request and ingests
// whatever decodes. Ingest must not panic, must not fail (the storage is
// healthy), and must report 0 <= Rejected <= DataPoints.
func fuzzIngest(f *testing.F, json bool) {
	b, err := os.ReadFile("testdata/rich.json")
	if err != nil {
		f.Fatal(err)
	}
	seeds := []pmetric.Metrics{loadJSON(f, "rich.json"), mixedPayload(), deltaSum("a", 0, 1, 2, 3)}
	if json {
		f.Add(b)
	}
	for _, md := range seeds {
		req := pmetricotlp.NewExportRequestFromMetrics(md)
		var b []byte
		if json {
			b, err = req.MarshalJSON()
		} else {
			b, err = req.MarshalProto()
		}
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Not a TSDB: a fuzzed timestamp in year 2200 would make Prometheus'
	// head compact centuries of empty blocks. fuzzAppendable checks what
	// it is given and rejects negative timestamps like a storage would.
	ing, err := New(fuzzAppendable{}, DefaultOptions())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req := pmetricotlp.NewExportRequest()
		var err error
		if json {
			err = req.UnmarshalJSON(b)
		} else {
			err = req.UnmarshalProto(b)
		}
		if err != nil {
			return
		}
		res, err := ing.Ingest(context.Background(), req.Metrics())
		if errors.Is(err, ErrUnavailable) {
			t.Fatalf("healthy storage, yet unavailable: %v", err)
		}
		if err != nil {
			t.Fatalf("unclassified error %v", err)
		}
		if res.Rejected < 0 || res.Rejected > res.DataPoints {
			t.Fatalf("result %+v", res)
		}
	})
}

type fuzzAppendable struct{}

func (fuzzAppendable) AppenderV2(context.Context) storage.AppenderV2 { return fuzzAppender{} }

type fuzzAppender struct{}

func (fuzzAppender) Append(_ storage.SeriesRef, ls labels.Labels, _, t int64, _ float64, h *histogram.Histogram, fh *histogram.FloatHistogram, _ storage.AOptions) (storage.SeriesRef, error) {
	if ls.IsEmpty() || !ls.Has(labels.MetricName) {
		return 0, fmt.Errorf("BUG: converter appended %v", ls)
	}
	if t < 0 {
		return 0, storage.ErrOutOfBounds
	}
	if h != nil {
		if err := h.Validate(); err != nil {
			return 0, err
		}
	}
	if fh != nil {
		if err := fh.Validate(); err != nil {
			return 0, err
		}
	}
	return 1, nil
}
func (fuzzAppender) Commit() error   { return nil }
func (fuzzAppender) Rollback() error { return nil }

func FuzzIngestProtobuf(f *testing.F) { fuzzIngest(f, false) }

func FuzzIngestJSON(f *testing.F) { fuzzIngest(f, true) }

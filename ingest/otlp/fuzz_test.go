package otlp

import (
	"context"
	"errors"
	"os"
	"testing"

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
	ing, _ := newTestIngester(f, DefaultOptions())
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
		if err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("unclassified error %v", err)
		}
		if err != nil {
			t.Fatalf("healthy storage reported unavailable: %v", err)
		}
		if res.Rejected < 0 || res.Rejected > res.DataPoints {
			t.Fatalf("result %+v", res)
		}
	})
}

func FuzzIngestProtobuf(f *testing.F) { fuzzIngest(f, false) }

func FuzzIngestJSON(f *testing.F) { fuzzIngest(f, true) }

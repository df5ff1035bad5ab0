package ingest

import (
	"testing"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// The fuzz targets check two properties on arbitrary bytes:
//   - decoding and appending never panic;
//   - whatever Prometheus' generated (gogo) decoder accepts, weft's decoder
//     accepts too and appends exactly what Prometheus' conversions and the
//     documented validation rules say (a differential round trip).

func FuzzDecodeV2(f *testing.F) {
	f.Add(marshal(f, v2Request(f)))
	f.Add(marshal(f, &writev2.Request{Symbols: []string{"", "__name__", "x"}, Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}}}))
	f.Add([]byte{})
	f.Add([]byte{5<<3 | 2, 2, 1<<3 | 0, 0x80})
	d := testDecoder()
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _, err := decodeAppend(t, d, ProtoV2, data, true)
		var ref writev2.Request
		if refErr := ref.Unmarshal(data); refErr != nil {
			return
		}
		if err != nil && !isRejectErr(err) {
			t.Fatalf("prometheus decodes the request, weft fails: %v", err)
		}
		compareCalls(t, got, expectV2(&ref))
	})
}

func FuzzDecodeV1(f *testing.F) {
	f.Add(marshal(f, v1Request(f)))
	f.Add(marshal(f, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "x"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: 1}}}}}))
	f.Add([]byte{})
	d := testDecoder()
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _, err := decodeAppend(t, d, ProtoV1, data, false)
		var ref prompb.WriteRequest
		if refErr := ref.Unmarshal(data); refErr != nil {
			return
		}
		if err != nil && !isRejectErr(err) {
			t.Fatalf("prometheus decodes the request, weft fails: %v", err)
		}
		compareCalls(t, got, expectV1Inline(&ref))
	})
}

// expectV1Inline adapts expectV1 to an appender without AppendExemplars:
// exemplars then ride inline on the series' last append, which is where
// recAppender records them too, so the call sequences are the same.
func expectV1Inline(req *prompb.WriteRequest) []appended { return expectV1(req) }

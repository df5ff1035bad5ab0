package bench

import (
	"strings"
	"testing"
	"time"
)

func TestParseAndDiff(t *testing.T) {
	const (
		vecA   = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"model":"b"},"value":[10,"2"]},{"metric":{"model":"a"},"value":[10,"1"]}]}}`
		vecB   = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"model":"a"},"value":[10,"1.0000000001"]},{"metric":{"model":"b"},"value":[10,"2"]}]}}`
		vecC   = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"model":"a"},"value":[10,"1.1"]},{"metric":{"model":"c"},"value":[10,"2"]}]}}`
		mat    = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"x":"1"},"values":[[1,"1"],[2,"NaN"]]}]}}`
		matNaN = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"x":"1"},"values":[[1,"1"],[2,"NaN"]]}]}}`
		matLen = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"x":"1"},"values":[[1,"1"]]}]}}`
		ser    = `{"status":"success","data":[{"__name__":"up","job":"a"},{"__name__":"up","job":"b"}]}`
		serRev = `{"status":"success","data":[{"job":"b","__name__":"up"},{"__name__":"up","job":"a"}]}`
		vals   = `{"status":"success","data":["x","y"]}`
		vals2  = `{"status":"success","data":["y"]}`
	)
	tests := []struct {
		name, want, got string
		diffs           []string // substrings, one per expected diff
	}{
		{"same vector, other order, within tolerance", vecA, vecB, nil},
		{"value and series differ", vecA, vecC, []string{`{model="a"} @10.000: 1.1, want 1`, `extra {model="c"}`, `missing {model="b"}`}},
		{"NaN equals NaN", mat, matNaN, nil},
		{"point count differs", mat, matLen, []string{"1 points, want 2"}},
		{"series in any order", ser, serRev, nil},
		{"label values missing", vals, vals2, []string{`missing x`}},
		{"type differs", vecA, mat, []string{"result type matrix, want vector"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := parseResult([]byte(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			g, err := parseResult([]byte(tc.got))
			if err != nil {
				t.Fatal(err)
			}
			d := Diff(w, g)
			if len(d) != len(tc.diffs) {
				t.Fatalf("diffs %q, want %d", d, len(tc.diffs))
			}
			for _, want := range tc.diffs {
				found := false
				for _, x := range d {
					found = found || strings.Contains(x, want)
				}
				if !found {
					t.Errorf("no diff contains %q in %q", want, d)
				}
			}
		})
	}
}

func TestParseResultErrors(t *testing.T) {
	for _, body := range []string{
		``, `{`, `{"status":"error","error":"bad"}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}`,
		`{"status":"success","data":{"resultType":"streams","result":[]}}`,
	} {
		if _, err := parseResult([]byte(body)); err == nil {
			t.Errorf("parseResult(%q) = nil error", body)
		}
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := Percentile(ds, tc.q); got != tc.want {
			t.Errorf("Percentile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("Percentile of nothing is not 0")
	}
}

func TestSegmentSteps(t *testing.T) {
	o := DefaultWorkloadOptions()
	for _, tc := range []struct {
		name  string
		k, n  int
		segs  []Segment
		check func([]int) bool
	}{
		{"shares", 1, 80, []Segment{{RW1, 0.7}, {RW2, 0.15}, {OTLP, 0.15}}, func(s []int) bool { return s[0] == 56 && s[1] == 12 && s[2] == 12 }},
		{"blocks", 4, 80, []Segment{{RW1, 0.5}, {RW2, 0.5}}, func(s []int) bool { return s[0]%4 == 0 && s[0]+s[1] == 80 }},
		{"too few steps", 1, 2, []Segment{{RW1, 0.7}, {RW2, 0.15}, {OTLP, 0.15}}, func(s []int) bool { return s[0] >= 1 && s[1] >= 1 && s[2] >= 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o.SamplesPerSeriesPerRequest, o.Segments = tc.k, tc.segs
			if s := segmentSteps(o, tc.n); !tc.check(s) {
				t.Errorf("segmentSteps = %v", s)
			}
		})
	}
}

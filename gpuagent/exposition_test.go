package gpuagent

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parseText parses exposition text with Prometheus' own parser (legacy
// names), as a scraper of dcgm-exporter would.
func parseText(tb testing.TB, text []byte) map[string]*dto.MetricFamily {
	tb.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		tb.Fatalf("prometheus text parser rejects the output: %v", err)
	}
	return fams
}

func TestGoldenFilesParse(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.prom")
	if len(files) < 3 {
		t.Fatalf("golden files missing: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fams := parseText(t, data)
			up, ok := fams["gpu_agent_nvml_up"]
			if !ok || up.GetType() != dto.MetricType_GAUGE {
				t.Fatalf("gpu_agent_nvml_up missing or mistyped")
			}
			for name, fam := range fams {
				if fam.GetHelp() == "" {
					t.Errorf("%s has no HELP", name)
				}
			}
			if e, ok := fams["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]; ok && e.GetType() != dto.MetricType_COUNTER {
				t.Error("energy is not a counter")
			}
		})
	}
}

func TestWriteTextEscaping(t *testing.T) {
	series := []Series{
		{Name: "a_metric", Type: Gauge, Help: "line1\nback\\slash", Labels: []Label{{"model", `say "hi"` + "\n" + `\`}}, Value: math.NaN()},
		{Name: "a_metric", Type: Gauge, Help: "line1\nback\\slash", Labels: []Label{{"model", "x"}}, Value: math.Inf(1)},
		{Name: "hw.gpu.utilization", Type: Gauge, Help: "h", Labels: []Label{{"hw.id", "GPU-1"}}, Value: 0.25},
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, series); err != nil {
		t.Fatal(err)
	}
	fams := parseText(t, buf.Bytes())
	a := fams["a_metric"]
	if a.GetHelp() != "line1\nback\\slash" || len(a.Metric) != 2 {
		t.Fatalf("a_metric = %v", a)
	}
	if got := a.Metric[0].Label[0].GetValue(); got != `say "hi"`+"\n"+`\` {
		t.Errorf("label value round trip = %q", got)
	}
	if !math.IsNaN(a.Metric[0].Gauge.GetValue()) || !math.IsInf(a.Metric[1].Gauge.GetValue(), 1) {
		t.Errorf("special values = %v %v", a.Metric[0].Gauge.GetValue(), a.Metric[1].Gauge.GetValue())
	}
	h := fams["hw_gpu_utilization"]
	if h == nil || h.Metric[0].Label[0].GetName() != "hw_id" {
		t.Errorf("otel name not mapped to the legacy charset: %v", fams)
	}
}

// Under OTel naming several defs share a family; each family must have
// exactly one HELP, TYPE and unit.
func TestOTelFamiliesConsistent(t *testing.T) {
	r := &Renderer{Naming: NamingOTel}
	type meta struct{ help, typ, unit string }
	fams := map[string]meta{}
	for _, d := range AllMetrics {
		s := r.series(d, nil, nil, 1)
		m := meta{s.Help, s.Type.String(), s.Unit}
		if prev, ok := fams[s.Name]; ok && prev != m {
			t.Errorf("family %s: %+v vs %+v", s.Name, prev, m)
		}
		fams[s.Name] = m
	}
}

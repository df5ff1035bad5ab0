package bench

import "testing"

// BenchmarkGenerate measures the generator at the small scale with a shorter
// span; it reports the cost per generated sample.
func BenchmarkGenerate(b *testing.B) {
	o, err := Scale("small")
	if err != nil {
		b.Fatal(err)
	}
	o.Duration = o.Duration / 4
	b.ReportAllocs()
	samples := 0
	for b.Loop() {
		w, err := Generate(o)
		if err != nil {
			b.Fatal(err)
		}
		samples += w.TotalSamples()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(samples), "ns/sample")
}

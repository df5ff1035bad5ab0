package api

import (
	"testing"
)

// FuzzVMImportLine: no import line makes the parser panic, and a line it
// accepts yields one series with as many samples as timestamps.
func FuzzVMImportLine(f *testing.F) {
	for _, s := range []string{
		`{"metric":{"__name__":"a","b":"c"},"values":[1,null,"Inf","-Inf","NaN",2.5e3],"timestamps":[1,2,3,4,5,6]}`,
		`{"metric":{"__name__":"a"},"values":[1],"timestamps":[1,2]}`,
		`{"metric":{},"values":[],"timestamps":[]}`,
		`{"metric":{"a":1},"values":["x"],"timestamps":[1.5]}`,
		`{"metric":null}`,
		`[1,2,3]`,
		`{"values":["\u0000"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var st importState
		if err := st.addLine(line, nil); err != nil {
			return
		}
		if len(st.req.Timeseries) != 1 || st.samples != len(st.req.Timeseries[0].Samples) || st.samples == 0 {
			t.Fatalf("accepted line %q gave %+v", line, st.req)
		}
	})
}

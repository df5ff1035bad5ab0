package chunkenc

import ("fmt";"testing";"time")

func TestZZCount(t *testing.T) {
	all := telemetryDay()
	for _, l := range []struct{n string; c []sampleChunk}{{"480", chunkByCount(all, 480)}, {"1d", chunkByTime(all, 24*time.Hour)}} {
		tags := map[byte]int{}
		modes := map[string]int{}
		for _, c := range l.c {
			b := AppendFloats(nil, c.v)
			_, r, _ := readUvarint(b, "")
			tags[r[0]]++
			tb := AppendTimestamps(nil, c.t)
			_, r2, _ := readUvarint(tb, "")
			modes[fmt.Sprint("ts", r2[0])]++
			if r[0] == floatTagDecimal { 
				// find int mode: skip exp, exc count...
			}
		}
		fmt.Println(l.n, tags, modes)
	}
}

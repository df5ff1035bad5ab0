package chunkenc_test

import (
	"fmt"
	"math"

	"github.com/weftdb/weft/storage/chunkenc"
)

// A chunk is its columns appended one after the other; decoding returns the
// rest of the buffer for the next column.
func Example() {
	ts := []int64{1_767_225_600_000, 1_767_225_615_000, 1_767_225_630_000, 1_767_225_645_000}
	vs := []float64{412.345, 415.5, 409.125, math.Float64frombits(0x7ff0000000000002)} // last: StaleNaN

	var chunk []byte
	chunk = chunkenc.AppendTimestamps(chunk, ts)
	chunk = chunkenc.AppendFloats(chunk, vs)

	gotT, rest, err := chunkenc.DecodeTimestamps(nil, chunk)
	if err != nil {
		panic(err)
	}
	gotV, rest, err := chunkenc.DecodeFloats(nil, rest)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(rest), "bytes left")
	fmt.Println(gotT)
	fmt.Println(gotV[:3], math.Float64bits(gotV[3]) == 0x7ff0000000000002)
	// Output:
	// 0 bytes left
	// [1767225600000 1767225615000 1767225630000 1767225645000]
	// [412.345 415.5 409.125] true
}

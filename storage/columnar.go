package storage

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	wchunkenc "github.com/weftdb/weft/storage/chunkenc"
)

// encColumnar marks a sealed chunk in weft's columnar layout (chunk value
// version 2, docs/format/chunks.md): the head keeps Prometheus XOR2 /
// histogram chunks because they compress incrementally, and everything
// written to Pebble is re-encoded with storage/chunkenc's columnar codecs,
// which compress better once the whole chunk is known.
const encColumnar = chunkenc.EncNone

// Column flags (second payload byte).
const colHasST = 1 << 0

var errBadColumnar = errors.New("bad columnar chunk")

// columns is decoded (or to-be-encoded) chunk data, reused via colPool.
type columns struct {
	vt  chunkenc.ValueType
	ts  []int64
	st  []int64
	vs  []float64
	hs  []*histogram.Histogram
	fhs []*histogram.FloatHistogram
}

var colPool = sync.Pool{New: func() any { return &columns{} }}

func (c *columns) reset(vt chunkenc.ValueType) {
	c.vt = vt
	c.ts, c.st, c.vs, c.hs, c.fhs = c.ts[:0], c.st[:0], c.vs[:0], c.hs[:0], c.fhs[:0]
}

// fromChunk loads a Prometheus chunk's samples into c.
func (c *columns) fromChunk(enc chunkenc.Encoding, data []byte) error {
	ch, err := chunkenc.FromData(enc, data)
	if err != nil {
		return err
	}
	c.reset(encValType(enc))
	it := ch.Iterator(nil)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		c.ts = append(c.ts, it.AtT())
		c.st = append(c.st, it.AtST())
		switch vt {
		case chunkenc.ValFloat:
			_, v := it.At()
			c.vs = append(c.vs, v)
		case chunkenc.ValHistogram:
			_, h := it.AtHistogram(nil)
			c.hs = append(c.hs, h)
		case chunkenc.ValFloatHistogram:
			_, fh := it.AtFloatHistogram(nil)
			c.fhs = append(c.fhs, fh)
		}
	}
	return it.Err()
}

// appendColumnar encodes c: value type, flags, timestamp column, optional
// start-timestamp column, value column.
func appendColumnar(dst []byte, c *columns) []byte {
	flags := byte(0)
	for _, st := range c.st {
		if st != 0 {
			flags |= colHasST
			break
		}
	}
	dst = append(dst, byte(c.vt), flags)
	dst = wchunkenc.AppendTimestamps(dst, c.ts)
	if flags&colHasST != 0 {
		dst = wchunkenc.AppendTimestamps(dst, c.st)
	}
	switch c.vt {
	case chunkenc.ValHistogram:
		return wchunkenc.AppendHistograms(dst, c.hs)
	case chunkenc.ValFloatHistogram:
		return wchunkenc.AppendFloatHistograms(dst, c.fhs)
	default:
		return wchunkenc.AppendFloats(dst, c.vs)
	}
}

// decodeColumnar fills c from a columnar payload; never panics on input.
func decodeColumnar(c *columns, b []byte) error {
	if len(b) < 2 {
		return errBadColumnar
	}
	vt, flags := chunkenc.ValueType(b[0]), b[1]
	if vt != chunkenc.ValFloat && vt != chunkenc.ValHistogram && vt != chunkenc.ValFloatHistogram {
		return errBadColumnar
	}
	c.reset(vt)
	var err error
	rest := b[2:]
	if c.ts, rest, err = wchunkenc.DecodeTimestamps(c.ts, rest); err != nil {
		return fmt.Errorf("timestamps: %w", err)
	}
	if flags&colHasST != 0 {
		if c.st, rest, err = wchunkenc.DecodeTimestamps(c.st, rest); err != nil {
			return fmt.Errorf("start timestamps: %w", err)
		}
	} else {
		for range c.ts {
			c.st = append(c.st, 0)
		}
	}
	n := 0
	switch vt {
	case chunkenc.ValHistogram:
		c.hs, _, err = wchunkenc.DecodeHistograms(c.hs, rest)
		n = len(c.hs)
	case chunkenc.ValFloatHistogram:
		c.fhs, _, err = wchunkenc.DecodeFloatHistograms(c.fhs, rest)
		n = len(c.fhs)
	default:
		c.vs, _, err = wchunkenc.DecodeFloats(c.vs, rest)
		n = len(c.vs)
	}
	if err != nil {
		return fmt.Errorf("values: %w", err)
	}
	if n != len(c.ts) || len(c.st) != len(c.ts) {
		return errBadColumnar
	}
	return nil
}

// colIterator iterates decoded columns; it owns its columns and reuses them
// across chunks.
type colIterator struct {
	c   columns
	i   int
	err error
}

func (it *colIterator) load(data []byte) {
	it.i = -1
	it.err = decodeColumnar(&it.c, data)
	if it.err != nil {
		it.c.ts = it.c.ts[:0]
	}
}

func (it *colIterator) cur() chunkenc.ValueType {
	if it.i >= len(it.c.ts) {
		return chunkenc.ValNone
	}
	return it.c.vt
}

func (it *colIterator) Next() chunkenc.ValueType {
	if it.i < len(it.c.ts) {
		it.i++
	}
	return it.cur()
}

func (it *colIterator) Seek(t int64) chunkenc.ValueType {
	if it.i < 0 {
		it.i = 0
	}
	for it.i < len(it.c.ts) && it.c.ts[it.i] < t {
		it.i++
	}
	return it.cur()
}

func (it *colIterator) At() (int64, float64) { return it.c.ts[it.i], it.c.vs[it.i] }

func (it *colIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	src := it.c.hs[it.i]
	if h == nil {
		return it.c.ts[it.i], src.Copy()
	}
	src.CopyTo(h)
	return it.c.ts[it.i], h
}

func (it *colIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	t := it.c.ts[it.i]
	if it.c.vt == chunkenc.ValHistogram {
		return t, it.c.hs[it.i].ToFloat(fh)
	}
	src := it.c.fhs[it.i]
	if fh == nil {
		return t, src.Copy()
	}
	src.CopyTo(fh)
	return t, fh
}

func (it *colIterator) AtT() int64  { return it.c.ts[it.i] }
func (it *colIterator) AtST() int64 { return it.c.st[it.i] }
func (it *colIterator) Err() error  { return it.err }

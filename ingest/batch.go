package ingest

import (
	"fmt"
	"math"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/ingest/workload"
)

// maxPooledBatchBytes bounds the arena memory a released Batch may keep in the
// pool. A rare huge request should not pin tens of MiB per P forever; batches
// that grew beyond this are left to the garbage collector.
const maxPooledBatchBytes = 8 << 20

// Decoder decodes remote write request bodies into Batches. It is safe for
// concurrent use; Batches are pooled and reused, so steady-state decoding
// allocates almost nothing.
type Decoder struct {
	opts Options
	pool sync.Pool
}

// NewDecoder returns a Decoder; zero fields of opts take their defaults.
func NewDecoder(opts Options) *Decoder {
	return &Decoder{opts: opts.withDefaults()}
}

// Batch is one decoded remote write request. It is not safe for concurrent
// use. Its strings point into the buffer given to Decode: that buffer must not
// be modified or reused until Release. Nothing handed to storage by Append
// points into the buffer (labels, metadata and histograms are copied).
type Batch struct {
	d     *Decoder
	proto Protocol

	// Arenas: every series indexes contiguous ranges of these.
	series    []seriesEntry
	buf       []byte   // the request buffer the strRefs point into
	symbols   []strRef // v2 symbols table
	refs      []uint32 // v2 series label references
	exRefs    []uint32 // v2 exemplar label references
	pairs     []pair   // v1 series labels
	exPairs   []pair   // v1 exemplar labels
	samples   []sample
	hists     []histEntry
	exemplars []exemplarEntry

	// Reused scratch.
	hs        histScratch
	sb        labels.ScratchBuilder
	leBuf     []byte           // labelEncoder's buffer, kept between series
	canon     []workload.Label // canonicalLabels' result, kept between series
	borrow    bool             // the appender copies labels: hand it leBuf's memory
	exBuf     []exemplar.Exemplar
	symClones []string // lazily cloned symbols for metadata, "" = not yet
	symState  []uint8  // per symbol: 0 not checked, symValidUTF8, symInvalidUTF8
	// symsChecked is 0 until allSymbolsValid ran, then whether all are valid.
	symsChecked uint8
	rej         rejections
}

// Decode parses buf as a p message. On error (wrapping ErrMalformed) nothing
// is returned and nothing needs releasing; otherwise the caller must call
// Release on the Batch when done with it.
func (d *Decoder) Decode(p Protocol, buf []byte) (*Batch, error) {
	b, _ := d.pool.Get().(*Batch)
	if b == nil {
		b = &Batch{d: d, sb: labels.NewScratchBuilder(16)}
	}
	b.proto, b.buf = p, buf
	var err error
	if uint64(len(buf)) > math.MaxUint32 {
		err = fmt.Errorf("%w: body of %d bytes is too large", ErrMalformed, len(buf))
	}
	switch {
	case err != nil:
	case p == ProtoV1:
		err = b.decodeV1(buf)
	case p == ProtoV2:
		err = b.decodeV2(buf)
	default:
		err = fmt.Errorf("%w: unknown protocol %d", ErrMalformed, p)
	}
	if err != nil {
		b.Release()
		return nil, fmt.Errorf("decode %s: %w", p, err)
	}
	return b, nil
}

// Protocol returns the message kind the batch was decoded from.
func (b *Batch) Protocol() Protocol { return b.proto }

// NumSeries returns the number of TimeSeries messages in the batch.
func (b *Batch) NumSeries() int { return len(b.series) }

// Release returns the batch to its Decoder's pool. The batch must not be used
// afterwards.
func (b *Batch) Release() {
	b.buf = nil
	clear(b.hists)
	clear(b.exBuf)
	clear(b.symClones)
	b.series, b.symbols, b.refs, b.exRefs = b.series[:0], b.symbols[:0], b.refs[:0], b.exRefs[:0]
	b.pairs, b.exPairs, b.samples, b.hists = b.pairs[:0], b.exPairs[:0], b.samples[:0], b.hists[:0]
	b.exemplars, b.exBuf, b.symClones, b.symState = b.exemplars[:0], b.exBuf[:0], b.symClones[:0], b.symState[:0]
	b.symsChecked = 0
	b.rej.reset()
	if b.arenaBytes() > maxPooledBatchBytes {
		return
	}
	b.d.pool.Put(b)
}

func (b *Batch) arenaBytes() int {
	return cap(b.series)*64 + cap(b.symbols)*8 + cap(b.refs)*4 + cap(b.exRefs)*4 +
		cap(b.pairs)*16 + cap(b.exPairs)*16 + cap(b.samples)*24 + cap(b.hists)*32 +
		cap(b.exemplars)*24 + cap(b.exBuf)*48 + cap(b.symClones)*16 + cap(b.symState)
}

// ref returns where p, a subslice of b.buf, lies in it.
func (b *Batch) ref(p []byte) strRef {
	if len(p) == 0 {
		return strRef{}
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(p))) - uintptr(unsafe.Pointer(unsafe.SliceData(b.buf)))
	return strRef{off: uint32(off), n: uint32(len(p))}
}

// str returns the string r refers to, without copying (see unsafeString).
func (b *Batch) str(r strRef) string { return unsafeString(b.buf[r.off : r.off+r.n]) }

// sym returns symbol i, which must be in range.
func (b *Batch) sym(i uint32) string { return b.str(b.symbols[i]) }

const (
	symValidUTF8   = 1
	symInvalidUTF8 = 2
)

// symValid reports whether symbol i is valid UTF-8, checking each symbol at
// most once per request: RW 2.0 series share most of their strings.
func (b *Batch) symValid(i uint32) bool {
	if len(b.symState) < len(b.symbols) {
		b.symState = append(b.symState, make([]uint8, len(b.symbols)-len(b.symState))...)
	}
	switch b.symState[i] {
	case symValidUTF8:
		return true
	case symInvalidUTF8:
		return false
	}
	ok := utf8.ValidString(b.sym(i))
	b.symState[i] = symInvalidUTF8
	if ok {
		b.symState[i] = symValidUTF8
	}
	return ok
}

// allSymbolsValid reports whether every symbol of the request is valid
// UTF-8, checking them all at its first call: the usual answer, yes, then
// spares a check per label reference.
func (b *Batch) allSymbolsValid() bool {
	if b.symsChecked == 0 {
		b.symsChecked = symValidUTF8
		for i := range b.symbols {
			if !b.symValid(uint32(i)) {
				b.symsChecked = symInvalidUTF8
			}
		}
	}
	return b.symsChecked == symValidUTF8
}

// rejections collects the client errors of one Append.
type rejections struct {
	msgs  []error
	total int
}

func (r *rejections) reset() {
	clear(r.msgs)
	r.msgs, r.total = r.msgs[:0], 0
}

// wantMessage reports whether the next rejection's message will be kept, so
// callers format labels only then.
func (r *rejections) wantMessage(limit int) bool { return len(r.msgs) < limit }

func (r *rejections) add(limit int, e *rejection) {
	r.total++
	if e != nil && len(r.msgs) < limit {
		r.msgs = append(r.msgs, e)
	}
}

// err returns a fresh *RejectError (it does not alias the pooled slice).
func (r *rejections) err() error {
	if r.total == 0 {
		return nil
	}
	return &RejectError{Messages: append([]error(nil), r.msgs...), Total: r.total}
}

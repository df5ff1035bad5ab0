package index

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/internal/promlabels"
)

// The in-memory compact label set: uvarint(number of labels), then for every
// label uvarint(name ref), uvarint(value ref), in label order. A 12-label GPU
// series of ~350 bytes of strings encodes in ~30 bytes.

// maxLabels bounds the label count a compact encoding may claim, so a corrupt
// count cannot make a decoder allocate without bound.
const maxLabels = 1 << 16

// appendLabelRefs appends the compact encoding of refs (name, value pairs).
func appendLabelRefs(dst []byte, refs []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(refs)/2))
	for _, r := range refs {
		dst = binary.AppendUvarint(dst, uint64(r))
	}
	return dst
}

// uvarintString decodes a uvarint from s at i like binary.Uvarint.
func uvarintString(s string, i int) (uint64, int) {
	var x uint64
	var sh uint
	for j := 0; j < binary.MaxVarintLen64; j++ {
		if i+j >= len(s) {
			return 0, 0
		}
		c := s[i+j]
		if c < 0x80 {
			if j == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1
			}
			return x | uint64(c)<<sh, j + 1
		}
		x |= uint64(c&0x7f) << sh
		sh += 7
	}
	return 0, -1
}

// decodeLabelRefs appends the refs of the compact encoding enc to dst. It
// never panics; malformed input returns an error wrapping ErrCorrupt.
func decodeLabelRefs(dst []uint32, enc string) ([]uint32, error) {
	n, w := uvarintString(enc, 0)
	if w <= 0 || n > maxLabels {
		return dst, fmt.Errorf("decode label set: count: %w", ErrCorrupt)
	}
	i := w
	for j := uint64(0); j < 2*n; j++ {
		r, w := uvarintString(enc, i)
		if w <= 0 || r > 1<<32-1 {
			return dst, fmt.Errorf("decode label set: ref %d: %w", j, ErrCorrupt)
		}
		dst = append(dst, uint32(r))
		i += w
	}
	if i != len(enc) {
		return dst, fmt.Errorf("decode label set: %d trailing bytes: %w", len(enc)-i, ErrCorrupt)
	}
	return dst, nil
}

// buildLabels decodes enc and returns the label set. In the default
// (stringlabels) build it writes Prometheus' label encoding straight into a
// pooled buffer and allocates the result once; b is used only by the other
// label builds. Queries that select many series call this once per series,
// so it is a large part of their CPU.
func (s *symbols) buildLabels(enc string, b *labels.ScratchBuilder) (labels.Labels, error) {
	if _, ok := promlabels.FromEncoded(""); ok {
		return s.encodeLabels(enc)
	}
	return s.buildLabelsScratch(enc, b)
}

// labelBufPool holds buffers for encodeLabels.
var labelBufPool = sync.Pool{New: func() any { return new([]byte) }}

// encodeLabels is buildLabels for the stringlabels build.
func (s *symbols) encodeLabels(enc string) (labels.Labels, error) {
	bp := labelBufPool.Get().(*[]byte)
	defer labelBufPool.Put(bp)
	buf := (*bp)[:0]
	w, err := s.walkLabels(enc)
	for err == nil && w.left > 0 {
		var name, value string
		if name, value, err = w.next(); err == nil {
			buf = promlabels.AppendString(buf, name)
			buf = promlabels.AppendString(buf, value)
		}
	}
	*bp = buf
	if err == nil {
		err = w.end()
	}
	if err != nil {
		return labels.EmptyLabels(), err
	}
	ls, _ := promlabels.FromEncoded(string(buf))
	return ls, nil
}

// buildLabelsScratch is buildLabels with a labels.ScratchBuilder.
func (s *symbols) buildLabelsScratch(enc string, b *labels.ScratchBuilder) (labels.Labels, error) {
	b.Reset()
	w, err := s.walkLabels(enc)
	for err == nil && w.left > 0 {
		var name, value string
		if name, value, err = w.next(); err == nil {
			b.Add(name, value)
		}
	}
	if err == nil {
		err = w.end()
	}
	if err != nil {
		return labels.EmptyLabels(), err
	}
	return b.Labels(), nil
}

// labelWalk reads a compact label set one label at a time, resolving its
// symbols: walkLabels, then next while left > 0, then end.
type labelWalk struct {
	s    *symbols
	enc  string
	i    int    // read position in enc
	j    uint64 // labels read
	left uint64 // labels still to read
}

func (s *symbols) walkLabels(enc string) (labelWalk, error) {
	n, w := uvarintString(enc, 0)
	if w <= 0 || n > maxLabels {
		return labelWalk{}, fmt.Errorf("decode label set: count: %w", ErrCorrupt)
	}
	return labelWalk{s: s, enc: enc, i: w, left: n}, nil
}

// next returns the next label's name and value.
func (w *labelWalk) next() (name, value string, err error) {
	rn, w1 := uvarintString(w.enc, w.i)
	if w1 <= 0 {
		return "", "", fmt.Errorf("decode label set: name %d: %w", w.j, ErrCorrupt)
	}
	w.i += w1
	rv, w2 := uvarintString(w.enc, w.i)
	if w2 <= 0 {
		return "", "", fmt.Errorf("decode label set: value %d: %w", w.j, ErrCorrupt)
	}
	w.i += w2
	if rn > 1<<32-1 || rv > 1<<32-1 {
		return "", "", fmt.Errorf("decode label set: ref overflow: %w", ErrCorrupt)
	}
	name, ok1 := w.s.name(uint32(rn))
	value, ok2 := w.s.value(uint32(rn), uint32(rv))
	if !ok1 || !ok2 {
		return "", "", fmt.Errorf("decode label set: unknown symbol: %w", ErrCorrupt)
	}
	w.j++
	w.left--
	return name, value, nil
}

// end checks that nothing follows the last label.
func (w *labelWalk) end() error {
	if w.i != len(w.enc) {
		return fmt.Errorf("decode label set: trailing bytes: %w", ErrCorrupt)
	}
	return nil
}

// equalLabels reports whether the compact encoding enc denotes ls. It is the
// verification behind every hash hit on the write path, so it reads the
// symbol tables with as few dependent loads as it can, and walks ls once
// (counting its labels instead of calling ls.Len, another walk).
func (s *symbols) equalLabels(enc string, ls labels.Labels, tid string) bool {
	n, i := uvarintString(enc, 0)
	if i <= 0 || n > maxLabels {
		return false
	}
	dicts := *s.dicts.Load()
	eq := true
	seen := uint64(0)
	// one compares the next stored label with (name, value).
	one := func(name, value string) {
		if seen++; seen > n {
			eq = false
			return
		}
		rn, w1 := uvarintString(enc, i)
		if w1 <= 0 || rn >= uint64(len(dicts)) {
			eq = false
			return
		}
		rv, w2 := uvarintString(enc, i+w1)
		if w2 <= 0 {
			eq = false
			return
		}
		i += w1 + w2
		d := dicts[rn]
		if d.name != name || rv >= uint64(d.n.Load()) {
			eq = false
			return
		}
		eq = d.at(uint32(rv)) == value
	}
	ls.Range(func(l labels.Label) {
		if !eq {
			return
		}
		if tid != "" && tenant.SortsAfter(l.Name) {
			one(tenant.LabelName, tid)
			tid = ""
			if !eq {
				return
			}
		}
		one(l.Name, l.Value)
	})
	if eq && tid != "" {
		one(tenant.LabelName, tid)
	}
	return eq && seen == n && i == len(enc)
}

// labelValueRef returns the value reference of the label nameRef in enc.
func labelValueRef(enc string, nameRef uint32) (uint32, bool) {
	n, i := uvarintString(enc, 0)
	if i <= 0 {
		return 0, false
	}
	for j := uint64(0); j < n; j++ {
		rn, w1 := uvarintString(enc, i)
		if w1 <= 0 {
			return 0, false
		}
		rv, w2 := uvarintString(enc, i+w1)
		if w2 <= 0 {
			return 0, false
		}
		i += w1 + w2
		if uint32(rn) == nameRef {
			return uint32(rv), true
		}
	}
	return 0, false
}

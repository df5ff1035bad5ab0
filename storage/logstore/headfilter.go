package logstore

import (
	"encoding/binary"
	"sort"
	"strings"

	"github.com/weftdb/weft/storage/logentry"
)

// headSegLen is the size of the head segments that get a token filter: as
// a stream's head grows, every headSegLen entries (in push order) get a
// filter like a chunk's (over long words only, headMinWord), so that a needle query scans only the last,
// unfiltered part of each head and the segments its filters let through.
const headSegLen = 256

// headSeg covers the head entries up to end (from the previous segment's
// end) with a token filter.
type headSeg struct {
	end    int
	filter bloom
}

// filterWords builds the token filter words of es (lines and metadata),
// over the grams of words of at least minWord bytes (0: every item).
func filterWords(es []logentry.Entry, minWord int) []uint64 {
	bp := itemPool.Get().(*[]uint64)
	items := (*bp)[:0]
	for _, e := range es {
		items = appendLineItemsMin(items, e.Line, minWord)
		items = appendMetaItems(items, e.Metadata)
	}
	words := make([]uint64, bloomWords(estimateDistinct(items)))
	for _, h := range items {
		addBloom(words, h)
	}
	*bp = items
	itemPool.Put(bp)
	return words
}

// indexHead builds the filters of the head's full segments that have
// none; st.mu held.
func (st *stream) indexHead() {
	covered := 0
	if n := len(st.segs); n > 0 {
		covered = st.segs[n-1].end
	}
	for len(st.entries)-covered >= headSegLen {
		end := covered + headSegLen
		words := filterWords(st.entries[covered:end], headMinWord)
		b := make([]byte, 0, 8*len(words))
		for _, w := range words {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
		st.segs = append(st.segs, headSeg{end: end, filter: bloom{b: b}})
		covered = end
	}
}

// selectHead returns the head entries in [p.Start, p.End) that may pass
// p's line filters: segments whose filter rules the filters out are
// skipped, and each remaining entry must contain every LineContains value.
// Without filters, a sorted head's entries are returned without copying:
// entries already in a head are never modified (appends go past them,
// sealing replaces the slice). st.mu held.
func (st *stream) selectHead(p logentry.SelectParams, h Hints) []logentry.Entry {
	var dst []logentry.Entry
	var contains []string
	for _, f := range p.LineFilters {
		if f.Op == logentry.LineContains {
			contains = append(contains, f.Value)
		}
	}
	if len(contains) == 0 && len(h.MetadataEqual) == 0 && !st.unsorted {
		lo := sort.Search(len(st.entries), func(i int) bool { return st.entries[i].Timestamp >= p.Start })
		hi := sort.Search(len(st.entries), func(i int) bool { return st.entries[i].Timestamp >= p.End })
		return st.entries[lo:hi:hi]
	}
	from := 0
	for _, sg := range st.segs {
		ok := true
		for _, f := range p.LineFilters {
			if f.Op == logentry.LineContains && !sg.filter.mayContainLong(f.Value) {
				ok = false
			}
		}
		for _, l := range h.MetadataEqual {
			if ok && !st.ls.Has(l.Name) && !sg.filter.mayHaveMeta(l.Name, l.Value) {
				ok = false
			}
		}
		if ok {
			dst = appendHeadEntries(dst, st.entries[from:sg.end], p, contains)
		}
		from = sg.end
	}
	return appendHeadEntries(dst, st.entries[from:], p, contains)
}

func appendHeadEntries(dst, es []logentry.Entry, p logentry.SelectParams, contains []string) []logentry.Entry {
next:
	for _, e := range es {
		if e.Timestamp < p.Start || e.Timestamp >= p.End {
			continue
		}
		for _, c := range contains {
			if !strings.Contains(e.Line, c) {
				continue next
			}
		}
		dst = append(dst, e)
	}
	return dst
}

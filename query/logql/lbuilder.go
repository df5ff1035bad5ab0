package logql

import (
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// Label categories, as Loki's categorize-labels response separates them.
const (
	catStream uint8 = iota
	catMetadata
	catParsed
)

// Names of the labels the pipeline sets on failures.
const (
	ErrorLabel        = "__error__"
	ErrorDetailsLabel = "__error_details__"
)

// Values of ErrorLabel.
const (
	errJSON         = "JSONParserErr"
	errLogfmt       = "LogfmtParserErr"
	errSampleExtr   = "SampleExtractionErr"
	errLabelFilter  = "LabelFilterErr"
	errTemplate     = "TemplateFormatErr"
	errUnpack       = "JSONParserErr"
	extractedSuffix = "_extracted"
)

type lbl struct {
	name, value string
	cat         uint8
}

// indexLabelsAt is the number of labels from which an entry's labels are
// found through a map: a line with many fields (a 256 KiB logfmt line has
// up to 64k) would otherwise cost quadratic time in set.
const indexLabelsAt = 32

// lbuilder holds the labels of one entry while the pipeline runs. It is
// reset per entry and reused, so that the common path does not allocate.
type lbuilder struct {
	ls      []lbl
	base    []lbl // the stream labels of b.stream, sorted
	stream  labels.Labels
	changed bool // anything beyond the stream labels (metadata, parsed, deletions)
	buf     []byte
	idx     map[string]int // name → index in ls, when idxOK
	idxOK   bool
}

// find returns the index of name in ls, or -1.
func (b *lbuilder) find(name string) int {
	if len(b.ls) < indexLabelsAt {
		for i := range b.ls {
			if b.ls[i].name == name {
				return i
			}
		}
		return -1
	}
	if !b.idxOK {
		if b.idx == nil {
			b.idx = make(map[string]int, 2*len(b.ls))
		}
		clear(b.idx)
		for i := range b.ls {
			b.idx[b.ls[i].name] = i
		}
		b.idxOK = true
	}
	if i, ok := b.idx[name]; ok {
		return i
	}
	return -1
}

// invalidate drops the name index after ls was reordered or shortened.
func (b *lbuilder) invalidate() { b.idxOK = false }

// reset starts a new entry. stream must stay valid while the builder is used
// for it; consecutive entries of one stream reuse the converted labels.
func (b *lbuilder) reset(stream labels.Labels, md labels.Labels) {
	if b.base == nil || !sameLabels(stream, b.stream) {
		b.base = b.base[:0]
		stream.Range(func(l labels.Label) { b.base = append(b.base, lbl{l.Name, l.Value, catStream}) })
		if b.base == nil {
			b.base = []lbl{}
		}
	}
	b.stream = stream
	b.ls = append(b.ls[:0], b.base...)
	b.invalidate()
	b.changed = false
	if !md.IsEmpty() {
		md.Range(func(l labels.Label) {
			b.set(l.Name, l.Value, catMetadata)
		})
	}
}

// sameLabels is labels.Equal, fast when both share storage.
func sameLabels(a, b labels.Labels) bool { return labels.Equal(a, b) }

func (b *lbuilder) get(name string) (string, bool) {
	if i := b.find(name); i >= 0 {
		return b.ls[i].value, true
	}
	return "", false
}

// streamHas reports whether name is a stream label of the entry's stream.
func (b *lbuilder) streamHas(name string) bool { return b.stream.Has(name) }

func (b *lbuilder) set(name, value string, cat uint8) {
	b.changed = true
	if i := b.find(name); i >= 0 {
		b.ls[i].value = value
		if cat != catStream {
			b.ls[i].cat = cat
		}
		return
	}
	b.ls = append(b.ls, lbl{name, value, cat})
	if b.idxOK {
		b.idx[name] = len(b.ls) - 1
	}
}

// setParsed adds a parsed label, suffixing _extracted when it collides with
// a stream label.
func (b *lbuilder) setParsed(name, value string) {
	if b.streamHas(name) {
		name += extractedSuffix
	}
	b.set(name, value, catParsed)
}

func (b *lbuilder) del(name string) {
	if i := b.find(name); i >= 0 {
		b.ls = append(b.ls[:i], b.ls[i+1:]...)
		b.invalidate()
		b.changed = true
	}
}

func (b *lbuilder) hasErr() bool {
	_, ok := b.get(ErrorLabel)
	return ok
}

func (b *lbuilder) setErr(kind, details string) {
	if b.hasErr() {
		return
	}
	b.set(ErrorLabel, kind, catParsed)
	if details != "" {
		b.set(ErrorDetailsLabel, details, catParsed)
	}
}

func (b *lbuilder) sortLabels() {
	slices.SortFunc(b.ls, func(x, y lbl) int { return strings.Compare(x.name, y.name) })
	b.invalidate()
}

// labels returns all labels (any category) as a new sorted labels.Labels.
func (b *lbuilder) labels() labels.Labels {
	if !b.changed {
		return b.stream
	}
	return b.category(255)
}

// category returns the labels of one category (255: all).
func (b *lbuilder) category(cat uint8) labels.Labels {
	b.sortLabels()
	sb := labels.NewScratchBuilder(len(b.ls))
	for _, l := range b.ls {
		if cat == 255 || l.cat == cat {
			sb.Add(l.name, l.value)
		}
	}
	return sb.Labels()
}

// key writes a sorted identity of all labels except skip into b.buf.
func (b *lbuilder) key(g *Grouping, skip string) []byte {
	b.sortLabels()
	b.buf = b.buf[:0]
	for _, l := range b.ls {
		if l.name == skip || !groupKeeps(g, l.name) {
			continue
		}
		b.buf = append(b.buf, l.name...)
		b.buf = append(b.buf, 0xff)
		b.buf = append(b.buf, l.value...)
		b.buf = append(b.buf, 0xfe)
	}
	return b.buf
}

// grouped returns the labels kept by g, without skip.
func (b *lbuilder) grouped(g *Grouping, skip string) labels.Labels {
	b.sortLabels()
	sb := labels.NewScratchBuilder(len(b.ls))
	for _, l := range b.ls {
		if l.name == skip || !groupKeeps(g, l.name) {
			continue
		}
		sb.Add(l.name, l.value)
	}
	return sb.Labels()
}

func groupKeeps(g *Grouping, name string) bool {
	if g == nil {
		return true
	}
	in := false
	for _, n := range g.Labels {
		if n == name {
			in = true
			break
		}
	}
	return in != g.Without
}

// templateData returns the labels as a map for text/template.
func (b *lbuilder) templateData() map[string]string {
	m := make(map[string]string, len(b.ls))
	for _, l := range b.ls {
		m[l.name] = l.value
	}
	return m
}

package logpattern

import (
	"cmp"
	"slices"
	"strings"
)

// Options configure a Miner. Zero fields take the defaults of
// DefaultOptions.
type Options struct {
	// Depth is how many leading tokens route a line in the prefix tree
	// (below the token-count level). Default 2.
	Depth int
	// MaxChildren bounds the children of one tree node; further distinct
	// tokens go to the node's wildcard child. Default 64.
	MaxChildren int
	// Similarity is the least share of matching positions (0..1] for a
	// line to join a cluster. Default 0.5.
	Similarity float64
	// MaxClusters bounds the clusters (patterns) kept. Default 300.
	MaxClusters int
	// MaxTokens cuts longer lines (the rest is one wildcard). Default 128.
	MaxTokens int
	// MaxLineBytes cuts longer lines (the rest is one wildcard). Default 4096.
	MaxLineBytes int
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{Depth: 2, MaxChildren: 64, Similarity: 0.5, MaxClusters: 300, MaxTokens: 128, MaxLineBytes: 4096}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Depth <= 0 {
		o.Depth = d.Depth
	}
	if o.MaxChildren <= 0 {
		o.MaxChildren = d.MaxChildren
	}
	if !(o.Similarity > 0 && o.Similarity <= 1) {
		o.Similarity = d.Similarity
	}
	if o.MaxClusters <= 0 {
		o.MaxClusters = d.MaxClusters
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = d.MaxTokens
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = d.MaxLineBytes
	}
	return o
}

// wildKey is the prefix-tree key of tokens with digits and of overflow.
const wildKey = "\x00*"

// Sample is the number of lines of a pattern at one sample time.
type Sample struct {
	T     int64 // the sample time the caller passed to Add
	Count int64
}

// Pattern is one mined template.
type Pattern struct {
	Text    string   // the template, variable parts written as "<_>"
	Total   int64    // lines in all samples
	Samples []Sample // ascending T
}

// Miner clusters lines into patterns. It is not safe for concurrent use;
// it holds every cluster in memory until it is dropped.
type Miner struct {
	opts     Options
	root     map[int]*node // by token count
	clusters []*cluster
	dropped  int64
	buf      []token
}

type node struct {
	children map[string]*node
	clusters []*cluster // at the leaf
}

type cluster struct {
	tokens  []token
	total   int64
	samples map[int64]int64
}

// New returns an empty Miner.
func New(opts Options) *Miner {
	return &Miner{opts: opts.withDefaults(), root: map[int]*node{}}
}

// Add mines one line, counting it at sample time t (the caller's bucket,
// for example the start of its step). It reports false when the line was
// dropped because it would start a cluster beyond MaxClusters.
func (m *Miner) Add(line string, t int64) bool {
	m.buf = tokenize(m.buf[:0], line, m.opts.MaxTokens, m.opts.MaxLineBytes)
	ts := m.buf
	full := len(m.clusters) >= m.opts.MaxClusters
	leaf := m.leaf(ts, !full)
	if leaf == nil { // full, and no cluster on this path
		m.dropped++
		return false
	}
	var best *cluster
	bestSim, bestWild := -1.0, -1
	for _, c := range leaf.clusters {
		sim, wild := similarity(c.tokens, ts)
		if sim > bestSim || sim == bestSim && wild > bestWild {
			best, bestSim, bestWild = c, sim, wild
		}
	}
	if best != nil && bestSim >= m.opts.Similarity {
		for i := range best.tokens {
			if !best.tokens[i].wild && best.tokens[i].text != ts[i].text {
				// A literal of the template never looks like a capture
				// (newTemplate), so neither does the line's equal token.
				best.tokens[i] = token{text: Wildcard, wild: true, space: best.tokens[i].space}
			}
		}
		best.add(t)
		return true
	}
	if full {
		m.dropped++
		return false
	}
	c := &cluster{tokens: newTemplate(ts), samples: map[int64]int64{}}
	c.add(t)
	leaf.clusters = append(leaf.clusters, c)
	m.clusters = append(m.clusters, c)
	return true
}

// Dropped is the number of lines Add dropped.
func (m *Miner) Dropped() int64 { return m.dropped }

func (c *cluster) add(t int64) {
	c.total++
	c.samples[t]++
}

// newTemplate is the template of a new cluster: ts with number-like
// tokens (see numeric) and tokens that LogQL would read as a capture
// ("<name>") already variable, the texts copied so that a
// cluster does not keep a whole (possibly long) line alive.
func newTemplate(ts []token) []token {
	out := make([]token, len(ts))
	for i, t := range ts {
		if t.wild || numeric(t.text) || looksLikeCapture(t.text) {
			out[i] = token{text: Wildcard, wild: true, space: t.space}
			continue
		}
		out[i] = token{text: strings.Clone(t.text), space: t.space}
	}
	return out
}

// leaf walks the prefix tree to the leaf of ts, growing it if grow is
// set; otherwise it returns nil where the path ends. (Once MaxClusters is
// reached the tree stops growing: it has at most Depth+1 nodes per
// cluster.)
func (m *Miner) leaf(ts []token, grow bool) *node {
	n := m.root[len(ts)]
	if n == nil {
		if !grow {
			return nil
		}
		n = &node{}
		m.root[len(ts)] = n
	}
	for i := 0; i < m.opts.Depth && i < len(ts); i++ {
		key := ts[i].text
		if ts[i].wild || hasDigit(key) {
			key = wildKey
		}
		if ts[i].space {
			key = " " + key // "a=" "b" and "a" " b" take different paths
		}
		next := n.children[key]
		if next == nil && !grow {
			if len(n.children) < m.opts.MaxChildren {
				return nil
			}
			key = wildKey
			if ts[i].space {
				key = " " + key
			}
			if next = n.children[key]; next == nil {
				return nil
			}
		}
		if next == nil {
			if n.children == nil {
				n.children = map[string]*node{}
			}
			if len(n.children) >= m.opts.MaxChildren {
				key = wildKey
				if ts[i].space {
					key = " " + key
				}
				next = n.children[key]
			}
			if next == nil {
				next = &node{}
				n.children[key] = next
			}
		}
		n = next
	}
	return n
}

// similarity is the share of positions where the template has the line's
// literal token, or a wildcard where the line has a number-like token (the
// masks of two numbers match, as in Drain's preprocessing). Other
// wildcards do not count (Drain's simSeq), so a template does not grow
// more permissive as it generalizes. The second result, the number of
// wildcards, breaks ties in favour of the more general template. A
// template that is all wildcards matches every line of its length (1).
// Templates whose spacing differs from the line's never match (-1).
func similarity(tpl, ts []token) (float64, int) {
	if len(tpl) != len(ts) || len(ts) == 0 {
		return -1, 0
	}
	same, wild := 0, 0
	for i := range tpl {
		if tpl[i].space != ts[i].space {
			return -1, 0
		}
		switch {
		case tpl[i].wild:
			wild++
			if ts[i].wild || numeric(ts[i].text) {
				same++
			}
		case tpl[i].text == ts[i].text:
			same++
		}
	}
	if wild == len(tpl) {
		return 1, wild
	}
	return float64(same) / float64(len(ts)), wild
}

// Patterns returns the mined patterns, most lines first (then by text).
// Clusters whose templates are written the same are merged. A template
// without a variable part ends in "<_>", so that every pattern is valid in
// LogQL's pattern filter (|> "...") and matches the lines it was mined from.
func (m *Miner) Patterns() []Pattern {
	byText := map[string]int{}
	var out []Pattern
	for _, c := range m.clusters {
		text := render(c.tokens)
		if !strings.Contains(text, Wildcard) {
			// LogQL's pattern filter needs a capture; a trailing one
			// matches the same lines (a pattern's last literal already
			// matches a prefix of the line).
			text += Wildcard
		}
		i, ok := byText[text]
		if !ok {
			i = len(out)
			byText[text] = i
			out = append(out, Pattern{Text: text})
		}
		p := &out[i]
		p.Total += c.total
		for t, n := range c.samples {
			p.Samples = append(p.Samples, Sample{T: t, Count: n})
		}
	}
	for i := range out {
		out[i].Samples = mergeSamples(out[i].Samples)
	}
	slices.SortFunc(out, func(a, b Pattern) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return cmp.Compare(a.Text, b.Text)
	})
	return out
}

// mergeSamples sorts ss by time and adds up the counts of equal times.
func mergeSamples(ss []Sample) []Sample {
	slices.SortFunc(ss, func(a, b Sample) int { return cmp.Compare(a.T, b.T) })
	out := ss[:0]
	for _, s := range ss {
		if n := len(out); n > 0 && out[n-1].T == s.T {
			out[n-1].Count += s.Count
			continue
		}
		out = append(out, s)
	}
	return out
}

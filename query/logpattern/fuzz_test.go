package logpattern

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzMiner: for any lines, tokenizing never panics and (within the
// bounds) writes the line back exactly; mining never panics, every line is
// counted once (in a pattern or as dropped), and every pattern has a
// capture.
func FuzzMiner(f *testing.F) {
	f.Add("level=info msg=\"request served\" path=/a/1 duration=12ms\nlevel=info msg=\"request served\" path=/b/2 duration=3ms", 4, 64)
	f.Add("{\"level\":\"info\",\"msg\":\"a b\"}\n{\"level\":\"warn\",\"msg\":\"c d\"}", 128, 4096)
	f.Add("  \n= =\n\":,\"\n<_><_>\n\xff\xfe x=\x00", 2, 3)
	f.Fuzz(func(t *testing.T, text string, maxTokens, maxBytes int) {
		maxTokens = 2 + abs(maxTokens)%200
		maxBytes = 1 + abs(maxBytes)%8192
		lines := strings.Split(text, "\n")
		for _, l := range lines {
			ts := tokenize(nil, l, maxTokens, maxBytes)
			if len(ts) > maxTokens+1 {
				t.Fatalf("%d tokens for %q, bound %d", len(ts), l, maxTokens)
			}
			if len(l) <= maxBytes && len(ts) < maxTokens {
				if got := join(ts); got != l {
					t.Fatalf("tokens of %q write back as %q", l, got)
				}
			}
		}
		o := DefaultOptions()
		o.MaxTokens, o.MaxLineBytes, o.MaxClusters = maxTokens, maxBytes, 8
		m := New(o)
		for i, l := range lines {
			m.Add(l, int64(i%3))
		}
		var total int64
		for _, p := range m.Patterns() {
			total += p.Total
			if !strings.Contains(p.Text, Wildcard) {
				t.Fatalf("pattern %q has no capture", p.Text)
			}
			if strings.Contains(p.Text, Wildcard+Wildcard) {
				t.Fatalf("pattern %q has touching captures", p.Text)
			}
			var n int64
			for _, s := range p.Samples {
				n += s.Count
			}
			if n != p.Total {
				t.Fatalf("pattern %q: samples add up to %d, total %d", p.Text, n, p.Total)
			}
			if utf8.ValidString(text) && !utf8.ValidString(p.Text) {
				t.Fatalf("pattern %q of valid UTF-8 is not", p.Text)
			}
		}
		if total+m.Dropped() != int64(len(lines)) {
			t.Fatalf("%d lines counted + %d dropped, %d added", total, m.Dropped(), len(lines))
		}
	})
}

func join(ts []token) string {
	var b strings.Builder
	for _, t := range ts {
		if t.space {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // math.MinInt
			return 0
		}
		return -n
	}
	return n
}

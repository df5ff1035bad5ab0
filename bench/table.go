package bench

import (
	"fmt"
	"strings"
)

// Every report's first table has the same shape: a row per figure, a
// column per system, then a weft/peer ratio column per peer and, where the
// issue sets goals, a goal column. ratioTable writes it for any result
// type.

// ratioRow is one figure of a report table.
type ratioRow[R any] struct {
	name string
	get  func(R) (float64, bool)
	// goal is the weft/peer ratio an issue asks for ("" when none): at
	// least want when above is true, else at most want.
	goal  string
	above bool
	want  float64
	// lowerBound, when set, says a result's figure is only a lower bound
	// (the metrics' max ingest, when the system took all that was
	// offered); its cell reads "≥", and its ratios are bounds or unknown.
	lowerBound func(R) bool
}

// systemResult is what ratioTable needs of a result.
type systemResult interface {
	systemName() string
	failure() string
}

func (r SystemResult) systemName() string      { return r.System }
func (r SystemResult) failure() string         { return r.Error }
func (r LogSystemResult) systemName() string   { return r.System }
func (r LogSystemResult) failure() string      { return r.Error }
func (r TraceSystemResult) systemName() string { return r.System }
func (r TraceSystemResult) failure() string    { return r.Error }

// ratioTable writes the table of rows over results to b.
func ratioTable[R systemResult](b *strings.Builder, results []R, rows []ratioRow[R]) {
	weft := -1
	for i, r := range results {
		if r.systemName() == "weft" && r.failure() == "" {
			weft = i
		}
	}
	var peers []int
	if weft >= 0 {
		for i := range results {
			if i != weft {
				peers = append(peers, i)
			}
		}
	}
	goals := false
	for _, row := range rows {
		goals = goals || row.goal != ""
	}
	b.WriteString("| metric |")
	for _, r := range results {
		fmt.Fprintf(b, " %s |", r.systemName())
	}
	for _, i := range peers {
		fmt.Fprintf(b, " weft/%s |", results[i].systemName())
	}
	if goals {
		b.WriteString(" goal |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(results)+len(peers)))
	if goals {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range rows {
		bounded := func(r R) bool { return row.lowerBound != nil && row.lowerBound(r) }
		fmt.Fprintf(b, "| %s |", row.name)
		for _, r := range results {
			v, ok := row.get(r)
			switch {
			case r.failure() != "":
				b.WriteString(" error |")
			case !ok:
				b.WriteString(" – |")
			case bounded(r):
				fmt.Fprintf(b, " ≥%s |", num(v))
			default:
				fmt.Fprintf(b, " %s |", num(v))
			}
		}
		verdict := ""
		for _, i := range peers {
			w, p := results[weft], results[i]
			wv, wok := row.get(w)
			pv, pok := row.get(p)
			if !wok || !pok || pv == 0 || p.failure() != "" {
				b.WriteString(" – |")
				continue
			}
			// A lower bound makes the ratio a bound too, or unknown.
			mark := ""
			switch wb, pb := bounded(w), bounded(p); {
			case wb && pb:
				b.WriteString(" ? |")
				continue
			case wb:
				mark = "≥"
			case pb:
				mark = "≤"
			}
			ratio := wv / pv
			fmt.Fprintf(b, " %s%.2f |", mark, ratio)
			if row.goal != "" {
				if (row.above && ratio >= row.want) || (!row.above && ratio <= row.want) {
					verdict = " (met)"
				} else {
					verdict = " (**missed**)"
				}
			}
		}
		if goals {
			fmt.Fprintf(b, " %s%s |", row.goal, verdict)
		}
		b.WriteString("\n")
	}
}

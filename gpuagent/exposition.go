package gpuagent

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteText writes series (sorted by SortSeries) in the Prometheus text
// exposition format 0.0.4, with one HELP and TYPE line per family, as
// dcgm-exporter does. Dotted OTel names and label names are written with '.'
// replaced by '_' because the 0.0.4 format allows no dots.
func WriteText(w io.Writer, series []Series) error {
	bw := bufio.NewWriter(w)
	last := ""
	for _, s := range series {
		name := promName(s.Name)
		if name != last {
			bw.WriteString("# HELP ")
			bw.WriteString(name)
			bw.WriteByte(' ')
			bw.WriteString(escapeHelp(s.Help))
			bw.WriteString("\n# TYPE ")
			bw.WriteString(name)
			bw.WriteByte(' ')
			bw.WriteString(s.Type.String())
			bw.WriteByte('\n')
			last = name
		}
		bw.WriteString(name)
		if len(s.Labels) > 0 {
			bw.WriteByte('{')
			for i, l := range s.Labels {
				if i > 0 {
					bw.WriteByte(',')
				}
				bw.WriteString(promName(l.Name))
				bw.WriteString(`="`)
				bw.WriteString(escapeLabelValue(l.Value))
				bw.WriteByte('"')
			}
			bw.WriteByte('}')
		}
		bw.WriteByte(' ')
		bw.WriteString(formatValue(s.Value))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// promName maps a name to the legacy Prometheus character set.
func promName(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string       { return helpEscaper.Replace(s) }
func escapeLabelValue(s string) string { return valueEscaper.Replace(s) }

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

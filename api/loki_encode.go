package api

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/query/logql"
)

// Loki's JSON response encoding, written by hand so that field order and
// number formatting are Loki's:
//
//	{"status":"success","data":{"resultType":"streams",["encodingFlags":[...],]"result":[...],"stats":{...}}}
//
// streams: {"stream":{labels},"values":[["<ns>","line"(,{"structuredMetadata":{..},"parsed":{..}})]]}
//          (with categorize-labels every entry has the third element, {} when
//          empty, and "encodingFlags" follows "resultType" whatever the type)
// vector:  {"metric":{labels},"value":[<seconds>,"<value>"]}
// matrix:  {"metric":{labels},"values":[[<seconds>,"<value>"],...]}
// scalar:  [<seconds>,"<value>"]

func appendQueryResponse(b []byte, res *logql.Result, dir logql.Direction, categorize bool) []byte {
	b = append(b, `{"status":"success","data":{"resultType":`...)
	b = appendJSONString(b, string(res.Type))
	if categorize {
		b = append(b, `,"encodingFlags":["categorize-labels"]`...)
	}
	b = append(b, `,"result":`...)
	switch res.Type {
	case logql.ValueTypeStreams:
		b = appendStreams(b, res.Streams, dir, categorize)
	case logql.ValueTypeVector:
		b = appendVector(b, res.Vector)
	case logql.ValueTypeMatrix:
		b = appendMatrix(b, res.Matrix)
	case logql.ValueTypeScalar:
		if res.Scalar == nil {
			b = append(b, "null"...)
		} else {
			b = appendPoint(b, res.Scalar.T, res.Scalar.V)
		}
	default:
		b = append(b, "[]"...)
	}
	b = append(b, `,"stats":`...)
	b = appendStats(b, res)
	return append(b, "}}"...)
}

func appendStreams(b []byte, ss []logql.StreamResult, dir logql.Direction, categorize bool) []byte {
	if categorize {
		ss = groupByStreamLabels(ss)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		ls := s.Labels
		if categorize {
			ls = s.StreamLabels
		}
		b = append(b, `{"stream":`...)
		b = appendLabelMap(b, ls)
		b = append(b, `,"values":[`...)
		es := slices.Clone(s.Entries)
		slices.SortStableFunc(es, func(x, y logql.ResultEntry) int {
			if dir == logql.Backward {
				return cmp.Compare(y.Timestamp, x.Timestamp)
			}
			return cmp.Compare(x.Timestamp, y.Timestamp)
		})
		for j, e := range es {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `["`...)
			b = strconv.AppendInt(b, e.Timestamp, 10)
			b = append(b, `",`...)
			b = appendJSONLine(b, e.Line)
			if categorize {
				// Always a third element, {} when the entry has neither.
				b = append(b, ",{"...)
				if !e.StructuredMetadata.IsEmpty() {
					b = append(b, `"structuredMetadata":`...)
					b = appendLabelMap(b, e.StructuredMetadata)
				}
				if !e.Parsed.IsEmpty() {
					if !e.StructuredMetadata.IsEmpty() {
						b = append(b, ',')
					}
					b = append(b, `"parsed":`...)
					b = appendLabelMap(b, e.Parsed)
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, "]}"...)
	}
	return append(b, ']')
}

// groupByStreamLabels merges the results that share stream labels (they
// differ only in structured metadata or parsed labels): with
// categorize-labels Loki groups entries by stream labels alone. The first
// appearance decides a stream's position.
func groupByStreamLabels(ss []logql.StreamResult) []logql.StreamResult {
	idx := make(map[string]int, len(ss))
	out := make([]logql.StreamResult, 0, len(ss))
	for _, s := range ss {
		k := s.StreamLabels.String()
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			out = append(out, logql.StreamResult{Labels: s.StreamLabels, StreamLabels: s.StreamLabels})
			i = len(out) - 1
		}
		out[i].Entries = append(out[i].Entries, s.Entries...)
	}
	return out
}

func appendVector(b []byte, v []logql.Sample) []byte {
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"metric":`...)
		b = appendLabelMap(b, s.Labels)
		b = append(b, `,"value":`...)
		b = appendPoint(b, s.T, s.V)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendMatrix(b []byte, m []logql.Series) []byte {
	b = append(b, '[')
	for i, s := range m {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"metric":`...)
		b = appendLabelMap(b, s.Labels)
		b = append(b, `,"values":[`...)
		for j, p := range s.Points {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendPoint(b, p.T, p.V)
		}
		b = append(b, "]}"...)
	}
	return append(b, ']')
}

// appendPoint writes [<unix seconds>,"<value>"]: seconds with up to three
// decimals (millisecond precision, as Loki's metric results), the value as
// Prometheus formats floats.
func appendPoint(b []byte, tNs int64, v float64) []byte {
	b = append(b, '[')
	b = appendSeconds(b, tNs)
	b = append(b, `,"`...)
	b = appendFloat(b, v)
	return append(b, `"]`...)
}

func appendSeconds(b []byte, tNs int64) []byte {
	ms := tNs / 1e6
	if tNs < 0 && tNs%1e6 != 0 {
		ms--
	}
	sec, frac := ms/1000, ms%1000
	if frac < 0 {
		sec, frac = sec-1, frac+1000
	}
	b = strconv.AppendInt(b, sec, 10)
	if frac != 0 {
		b = append(b, '.')
		d := []byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		for len(d) > 0 && d[len(d)-1] == '0' {
			d = d[:len(d)-1]
		}
		b = append(b, d...)
	}
	return b
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

func appendLabelMap(b []byte, ls labels.Labels) []byte {
	return appendLabelObject(b, ls, appendJSONString)
}

// appendLabelObject appends ls as a JSON object, its strings written by
// str (Loki's and Prometheus' APIs escape differently).
func appendLabelObject(b []byte, ls labels.Labels, str func([]byte, string) []byte) []byte {
	b = append(b, '{')
	first := true
	ls.Range(func(l labels.Label) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = str(b, l.Name)
		b = append(b, ':')
		b = str(b, l.Value)
	})
	return append(b, '}')
}

// appendJSONLine appends a log line as Loki writes it: a JSON string with
// HTML escaping (<, > and & as \u003c, \u003e, \u0026).
func appendJSONLine(b []byte, s string) []byte {
	enc, err := json.Marshal(s)
	if err != nil {
		panic("BUG: marshal string: " + err.Error())
	}
	return append(b, enc...)
}

// appendJSONString appends s as a JSON string (encoding/json's escaping,
// without HTML escaping), as Loki writes label names and values.
func appendJSONString(b []byte, s string) []byte {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			simple = false
			break
		}
	}
	if simple {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	enc, err := json.Marshal(s)
	if err != nil {
		panic("BUG: marshal string: " + err.Error())
	}
	// json.Marshal escapes <, > and & for HTML; Loki does not.
	out := make([]byte, 0, len(enc))
	for i := 0; i < len(enc); i++ {
		if enc[i] == '\\' && i+5 < len(enc) && enc[i+1] == 'u' && enc[i+2] == '0' && enc[i+3] == '0' {
			switch string(enc[i+4 : i+6]) {
			case "3c":
				out = append(out, '<')
				i += 5
				continue
			case "3e":
				out = append(out, '>')
				i += 5
				continue
			case "26":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		if enc[i] == '\\' && i+1 < len(enc) {
			out = append(out, enc[i], enc[i+1])
			i++
			continue
		}
		out = append(out, enc[i])
	}
	return append(b, out...)
}

// appendStats writes the summary part of Loki's query statistics.
func appendStats(b []byte, res *logql.Result) []byte {
	st := res.Stats
	secs := st.ExecTime.Seconds()
	perSec := func(n int64) int64 {
		if secs <= 0 {
			return 0
		}
		return int64(float64(n) / secs)
	}
	returned := 0
	for _, s := range res.Streams {
		returned += len(s.Entries)
	}
	b = append(b, `{"summary":{"bytesProcessedPerSecond":`...)
	b = strconv.AppendInt(b, perSec(st.BytesScanned), 10)
	b = append(b, `,"linesProcessedPerSecond":`...)
	b = strconv.AppendInt(b, perSec(st.EntriesScanned), 10)
	b = append(b, `,"totalBytesProcessed":`...)
	b = strconv.AppendInt(b, st.BytesScanned, 10)
	b = append(b, `,"totalLinesProcessed":`...)
	b = strconv.AppendInt(b, st.EntriesScanned, 10)
	b = append(b, `,"execTime":`...)
	b = strconv.AppendFloat(b, secs, 'f', -1, 64)
	b = append(b, `,"queueTime":0,"subqueries":0,"totalEntriesReturned":`...)
	b = strconv.AppendInt(b, int64(returned), 10)
	b = append(b, `,"splits":0,"shards":0,"totalPostFilterLines":`...)
	b = strconv.AppendInt(b, int64(returned), 10)
	b = append(b, `,"totalStructuredMetadataBytesProcessed":0}}`...)
	return b
}

package bench

import (
	"strconv"
	"unicode/utf8"
)

// logEncoder batches generated lines into Loki JSON push bodies, one lane
// per stream (stream index mod workers), so each stream's lines are sent in
// order by one worker.
type logEncoder struct {
	w      *LogWorkload
	max    int
	lanes  []logLaneBuf
	labels [][]byte // per stream: the encoded "stream" object
}

type logLaneBuf struct {
	n       int
	streams map[int][]logValue // stream index → values in time order
	order   []int              // streams in first-seen order (deterministic output)
}

type logValue struct {
	ts   int64
	line string
}

func newLogEncoder(w *LogWorkload, o LogOptions) *logEncoder {
	e := &logEncoder{w: w, max: o.LinesPerPush, lanes: make([]logLaneBuf, o.Workers)}
	for _, s := range w.Streams {
		b := []byte{'{'}
		for i, l := range s.Labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, l[0])
			b = append(b, ':')
			b = appendJSONString(b, l[1])
		}
		e.labels = append(e.labels, append(b, '}'))
	}
	return e
}

func (e *logEncoder) add(stream int, ts int64, line string) {
	lane := stream % len(e.lanes)
	l := &e.lanes[lane]
	if l.streams == nil {
		l.streams = map[int][]logValue{}
	}
	if _, ok := l.streams[stream]; !ok {
		l.order = append(l.order, stream)
	}
	l.streams[stream] = append(l.streams[stream], logValue{ts, line})
	l.n++
	if l.n >= e.max {
		e.flush(lane)
	}
}

func (e *logEncoder) flushAll() {
	for i := range e.lanes {
		e.flush(i)
	}
}

// flush encodes a lane's buffered lines as one push body:
// {"streams":[{"stream":{...},"values":[["<ns>","<line>"],...]},...]}.
func (e *logEncoder) flush(lane int) {
	l := &e.lanes[lane]
	if l.n == 0 {
		return
	}
	b := make([]byte, 0, l.n*256)
	b = append(b, `{"streams":[`...)
	for i, si := range l.order {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"stream":`...)
		b = append(b, e.labels[si]...)
		b = append(b, `,"values":[`...)
		for j, v := range l.streams[si] {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `["`...)
			b = strconv.AppendInt(b, v.ts, 10)
			b = append(b, `",`...)
			b = appendJSONString(b, v.line)
			b = append(b, ']')
		}
		b = append(b, "]}"...)
	}
	b = append(b, "]}"...)
	e.w.Payloads = append(e.w.Payloads, LogPayload{Body: b, Lines: l.n, Lane: lane})
	*l = logLaneBuf{}
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

package loki

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/weftdb/weft/ingest/internal/wire"
)

// ErrMalformed is wrapped by every error about an undecodable body.
var ErrMalformed = errors.New("malformed push request")

// Request is a decoded push request. Labels are as sent (unvalidated).
type Request struct {
	Streams []Stream
}

// Stream is one stream of a request.
type Stream struct {
	// Labels are the stream's label pairs as sent, in any order. For
	// protobuf they are parsed from the label-set string; LabelsErr is set
	// (and Labels empty) when that string does not parse, so that the
	// stream alone is rejected.
	Labels    []Pair
	LabelsErr error
	Entries   []Entry
}

// Entry is one pushed line.
type Entry struct {
	Timestamp int64 // unix ns
	Line      string
	Metadata  []Pair
}

// Pair is a label or structured-metadata pair.
type Pair struct{ Name, Value string }

// DecodeJSON decodes a JSON push body (already gunzipped).
func DecodeJSON(body []byte) (*Request, error) {
	if req, ok := decodeJSONFast(body); ok {
		return req, nil
	}
	return decodeJSONReflect(body)
}

// decodeJSONReflect is DecodeJSON with encoding/json: the reference for
// every body, used for those the fast path does not take.
func decodeJSONReflect(body []byte) (*Request, error) {
	var raw struct {
		Streams []struct {
			Stream map[string]string `json:"stream"`
			Values []jsonEntry       `json:"values"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	req := &Request{Streams: make([]Stream, 0, len(raw.Streams))}
	for _, rs := range raw.Streams {
		s := Stream{Labels: make([]Pair, 0, len(rs.Stream)), Entries: make([]Entry, len(rs.Values))}
		for k, v := range rs.Stream {
			s.Labels = append(s.Labels, Pair{k, v})
		}
		for i, e := range rs.Values {
			s.Entries[i] = Entry(e)
		}
		req.Streams = append(req.Streams, s)
	}
	return req, nil
}

// jsonEntry is ["<ns>", "line"] or ["<ns>", "line", {"k": "v"}].
type jsonEntry Entry

func (e *jsonEntry) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	if len(parts) != 2 && len(parts) != 3 {
		return fmt.Errorf("log entry has %d elements, want 2 or 3", len(parts))
	}
	var ts string
	if err := json.Unmarshal(parts[0], &ts); err != nil {
		return fmt.Errorf("timestamp must be a string of unix nanoseconds: %w", err)
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q: %w", ts, err)
	}
	e.Timestamp = t
	if err := json.Unmarshal(parts[1], &e.Line); err != nil {
		return fmt.Errorf("log line must be a string: %w", err)
	}
	if len(parts) == 3 {
		var md map[string]string
		if err := json.Unmarshal(parts[2], &md); err != nil {
			return fmt.Errorf("structured metadata must be an object of strings: %w", err)
		}
		for k, v := range md {
			e.Metadata = append(e.Metadata, Pair{k, v})
		}
	}
	return nil
}

// DecodeProto decodes a logproto.PushRequest (already snappy-decoded).
// Strings are copied out of body.
func DecodeProto(body []byte) (*Request, error) {
	req := &Request{}
	err := eachField(body, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != 1 {
			return nil
		}
		if typ != protowire.BytesType {
			return fmt.Errorf("streams: wire type %d", typ)
		}
		s, err := decodeStream(v)
		if err != nil {
			return err
		}
		req.Streams = append(req.Streams, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return req, nil
}

func decodeStream(b []byte) (Stream, error) {
	var s Stream
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1:
			if typ != protowire.BytesType {
				return fmt.Errorf("stream labels: wire type %d", typ)
			}
			ls, err := parseLabelSet(string(v))
			if err != nil {
				s.LabelsErr = err
				s.Labels = nil
			} else {
				s.Labels = ls
			}
		case 2:
			if typ != protowire.BytesType {
				return fmt.Errorf("stream entries: wire type %d", typ)
			}
			e, err := decodeEntry(v)
			if err != nil {
				return err
			}
			s.Entries = append(s.Entries, e)
		}
		return nil
	})
	return s, err
}

func decodeEntry(b []byte) (Entry, error) {
	var e Entry
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1:
			if typ != protowire.BytesType {
				return fmt.Errorf("entry timestamp: wire type %d", typ)
			}
			t, err := decodeTimestamp(v)
			if err != nil {
				return err
			}
			e.Timestamp = t
		case 2:
			if typ != protowire.BytesType {
				return fmt.Errorf("entry line: wire type %d", typ)
			}
			e.Line = string(v)
		case 3:
			if typ != protowire.BytesType {
				return fmt.Errorf("structured metadata: wire type %d", typ)
			}
			var p Pair
			if err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if typ != protowire.BytesType && (num == 1 || num == 2) {
					return fmt.Errorf("structured metadata pair: wire type %d", typ)
				}
				switch num {
				case 1:
					p.Name = string(v)
				case 2:
					p.Value = string(v)
				}
				return nil
			}); err != nil {
				return err
			}
			e.Metadata = append(e.Metadata, p)
		}
		return nil
	})
	return e, err
}

// decodeTimestamp decodes a google.protobuf.Timestamp into unix ns.
func decodeTimestamp(b []byte) (int64, error) {
	var sec, nanos int64
	err := eachField(b, func(num protowire.Number, typ protowire.Type, _ []byte, x uint64) error {
		if (num == 1 || num == 2) && typ != protowire.VarintType {
			return fmt.Errorf("timestamp: wire type %d", typ)
		}
		switch num {
		case 1:
			sec = int64(x)
		case 2:
			nanos = int64(int32(x))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if nanos < 0 || nanos >= 1e9 || sec > math.MaxInt64/int64(1e9)-1 || sec < math.MinInt64/int64(1e9)+1 {
		return 0, fmt.Errorf("timestamp %ds %dns out of range", sec, nanos)
	}
	return sec*1e9 + nanos, nil
}

// eachField walks the fields of one message (ingest/internal/wire).
var eachField = wire.EachField

// parseLabelSet parses a label set in Prometheus syntax, {a="b", c="d"}
// (as Loki clients send it in StreamAdapter.labels). Values are Go-quoted
// strings in double quotes or backticks.
func parseLabelSet(s string) ([]Pair, error) {
	in := strings.TrimSpace(s)
	if !strings.HasPrefix(in, "{") || !strings.HasSuffix(in, "}") {
		return nil, fmt.Errorf("label set %q: want {name=\"value\", ...}", truncate(s))
	}
	in = in[1 : len(in)-1]
	var out []Pair
	for {
		in = strings.TrimLeft(in, " \t\n")
		if in == "" {
			return out, nil
		}
		i := 0
		for i < len(in) && (in[i] == '_' || in[i] >= 'a' && in[i] <= 'z' || in[i] >= 'A' && in[i] <= 'Z' || i > 0 && in[i] >= '0' && in[i] <= '9') {
			i++
		}
		if i == 0 {
			return nil, fmt.Errorf("label set %q: expected a label name", truncate(s))
		}
		name := in[:i]
		in = strings.TrimLeft(in[i:], " \t\n")
		if !strings.HasPrefix(in, "=") {
			return nil, fmt.Errorf("label set %q: expected = after %s", truncate(s), name)
		}
		in = strings.TrimLeft(in[1:], " \t\n")
		end, err := quotedEnd(in)
		if err != nil {
			return nil, fmt.Errorf("label set %q: value of %s: %w", truncate(s), name, err)
		}
		val, err := strconv.Unquote(in[:end])
		if err != nil || !utf8.ValidString(val) {
			return nil, fmt.Errorf("label set %q: value of %s is not a valid string", truncate(s), name)
		}
		out = append(out, Pair{name, val})
		in = strings.TrimLeft(in[end:], " \t\n")
		if in == "" {
			return out, nil
		}
		if in[0] != ',' {
			return nil, fmt.Errorf("label set %q: expected , or }", truncate(s))
		}
		in = in[1:]
	}
}

// quotedEnd returns the length of the quoted string at the start of s.
func quotedEnd(s string) (int, error) {
	if s == "" || (s[0] != '"' && s[0] != '`') {
		return 0, errors.New("expected a quoted string")
	}
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q == '"':
			i++
		case s[i] == q:
			return i + 1, nil
		}
	}
	return 0, errors.New("unterminated string")
}

func truncate(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

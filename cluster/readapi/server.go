package readapi

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// Frame types of a select answer.
const (
	frameData  = 'd' // a logs record (cluster/record) of stream pieces
	frameError = 'e' // the server failed; the message follows
	frameEnd   = 'z' // the answer is complete
)

// Tuning constants.
const (
	// frameBytes cuts a data frame after about this many line bytes, so
	// the server holds little and the client decodes as it reads.
	frameBytes = 256 << 10
	// maxRequestBytes bounds a request body (matchers and filters).
	maxRequestBytes = 1 << 20
	// maxFrameBytes bounds a frame the client accepts.
	maxFrameBytes = 64 << 20
)

// LogSource is what the server reads: *logstore.Store.
type LogSource interface {
	Select(ctx context.Context, p logentry.SelectParams) (logentry.Iterator, error)
	LabelNames(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]string, error)
	LabelValues(ctx context.Context, name string, start, end int64, ms ...*labels.Matcher) ([]string, error)
	Series(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error)
	EachStreamTotal(ctx context.Context, start, end int64, ms []*labels.Matcher, f func(ls labels.Labels, t logstore.Stats)) error
}

// Handlers returns the API's routes (http.ServeMux patterns) over logs,
// traces (none when traces is nil) and status, for api.Options.Handlers.
// status reports the ingester.
func Handlers(logs LogSource, traces TraceSource, status func() Status, logger *slog.Logger) map[string]http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &server{logs: logs, log: logger}
	hs := map[string]http.Handler{
		"GET " + PathStatus:  http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, status()) }),
		"POST " + PathSelect: http.HandlerFunc(s.selectLogs),
		"POST " + PathLabels: s.meta(func(ctx context.Context, q *query) (any, error) {
			v, err := s.logs.LabelNames(ctx, q.Start, q.End, q.ms...)
			return StringsResponse{Values: v}, err
		}),
		"POST " + PathValues: s.meta(func(ctx context.Context, q *query) (any, error) {
			v, err := s.logs.LabelValues(ctx, q.Name, q.Start, q.End, q.ms...)
			return StringsResponse{Values: v}, err
		}),
		"POST " + PathSeries: s.meta(func(ctx context.Context, q *query) (any, error) {
			ss, err := s.logs.Series(ctx, q.Start, q.End, q.ms...)
			out := SeriesResponse{Series: [][]string{}}
			for _, ls := range ss {
				if q.keep(ls) {
					out.Series = append(out.Series, labelsToStrings(ls))
				}
			}
			return out, err
		}),
		"POST " + PathTotals: s.meta(func(ctx context.Context, q *query) (any, error) {
			out := TotalsResponse{Streams: []Total{}}
			err := s.logs.EachStreamTotal(ctx, q.Start, q.End, q.ms, func(ls labels.Labels, t logstore.Stats) {
				if q.keep(ls) {
					out.Streams = append(out.Streams, Total{Labels: labelsToStrings(ls), Chunks: t.Chunks, Entries: t.Entries, Bytes: t.Bytes})
				}
			})
			return out, err
		}),
	}
	if traces != nil {
		for p, h := range (&traceServer{server: s, traces: traces}).routes() {
			hs[p] = h
		}
	}
	return hs
}

type server struct {
	logs LogSource
	log  *slog.Logger
}

// query is a decoded Request.
type query struct {
	Request
	ms   []*labels.Matcher
	want map[int32]bool // nil: every partition
}

// keep reports whether a stream belongs to the requested partitions.
func (q *query) keep(ls labels.Labels) bool {
	return q.want == nil || q.want[record.PartitionOf(ls, q.TotalPartitions)]
}

func decodeRequest(r *http.Request) (*query, error) {
	var q query
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q.Request); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	ms, err := DecodeMatchers(q.Matchers)
	if err != nil {
		return nil, err
	}
	q.ms = ms
	if q.want, err = partitionSet(q.Partitions, q.TotalPartitions); err != nil {
		return nil, err
	}
	return &q, nil
}

// partitionSet is a request's partitions as a set; nil (every partition)
// when it names none.
func partitionSet(parts []int32, total int32) (map[int32]bool, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	if total <= 0 {
		return nil, fmt.Errorf("%w: partitions without total_partitions", ErrBadRequest)
	}
	want := make(map[int32]bool, len(parts))
	for _, p := range parts {
		want[p] = true
	}
	return want, nil
}

func (s *server) meta(f func(ctx context.Context, q *query) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := decodeRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := f(r.Context(), q)
		if err != nil {
			s.log.Warn("internal_read_failed", "path", r.URL.Path, "err", err)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, out)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// selectLogs streams the selected entries as frames.
func (s *server) selectLogs(w http.ResponseWriter, r *http.Request) {
	q, err := decodeRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	it, err := s.logs.Select(r.Context(), logentry.SelectParams{Start: q.Start, End: q.End, Matchers: q.ms, LineFilters: q.LineFilters, Direction: q.Direction})
	if err != nil {
		s.log.Warn("internal_select_failed", "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer it.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := record.NewEncoder()
	var (
		frame   []byte
		pending []logstore.PushStream
		size    int
		cur     labels.Labels
		keepCur bool
	)
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		frame = enc.AppendLogs(frame[:0], pending)
		pending, size = pending[:0], 0
		return writeFrame(bw, frameData, frame)
	}
	for it.Next() {
		ls, e := it.At()
		if len(pending) == 0 || !labels.Equal(ls, cur) {
			cur, keepCur = ls.Copy(), q.keep(ls)
			if keepCur {
				pending = append(pending, logstore.PushStream{Labels: cur})
			}
		}
		if !keepCur {
			continue
		}
		last := &pending[len(pending)-1]
		e.Metadata = e.Metadata.Copy()
		last.Entries = append(last.Entries, e)
		size += len(e.Line) + 16
		if size >= frameBytes {
			if err := flush(); err != nil {
				return // the client went away
			}
			cur = labels.EmptyLabels() // the next entry starts a new stream piece
		}
	}
	err = it.Err()
	if err == nil && flush() != nil {
		return // the client went away
	}
	s.end(bw, "internal_select_failed", err)
}

func writeFrame(w *bufio.Writer, typ byte, payload []byte) error {
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = typ
	n := binary.PutUvarint(hdr[1:], uint64(len(payload)))
	if _, err := w.Write(hdr[:1+n]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// readFrame reads one frame; it never allocates more than maxFrameBytes.
func readFrame(r *bufio.Reader, buf []byte) (byte, []byte, error) {
	typ, err := r.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil, ErrTruncated
		}
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: frame length: %w", ErrTruncated, err)
	}
	if n > maxFrameBytes {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds %d", n, maxFrameBytes)
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrTruncated, err)
	}
	return typ, buf, nil
}

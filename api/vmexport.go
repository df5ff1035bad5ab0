package api

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/query"
)

// VMExportOptions configure NewVMExportHandler.
type VMExportOptions struct {
	// Logger receives errors after the answer started; nil discards them.
	Logger *slog.Logger
	// Now returns the default end time; nil is time.Now. For tests.
	Now func() time.Time
}

// exportFlushBytes is how much of the answer is buffered before it is
// written out: large enough for few syscalls, small enough that a client
// sees the first series at once and the server holds little.
const exportFlushBytes = 64 << 10

// NewVMExportHandler serves VictoriaMetrics' /api/v1/export (GET or POST):
// the raw samples of every series matching any match[] selector (at least
// one is required) in [start, end] (default: all of it, up to now), as
// JSON lines, one per series:
//
//	{"metric":{"__name__":"up","job":"x"},"values":[1,0.5],"timestamps":[1549891472010,1549891487724]}
//
// Timestamps are milliseconds; NaN is written null and ±Inf "Inf"/"-Inf"
// (what /api/v1/import reads back). max_rows_per_line=N splits a series
// into lines of at most N samples. Stale markers and native histograms are
// left out (VictoriaMetrics has neither). The answer is streamed: memory
// holds one line, not the answer, and it is gzipped when the client
// accepts gzip. Safe for concurrent use.
func NewVMExportHandler(q storage.Queryable, opts VMExportOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return fastGzip(&vmExportHandler{q: q, opts: opts, parser: query.NewParser()})
}

type vmExportHandler struct {
	q      storage.Queryable
	opts   VMExportOptions
	parser parser.Parser
}

var errExportParam = errors.New("bad export parameter")

// exportRequest is a parsed export request.
type exportRequest struct {
	sets       [][]*labels.Matcher
	start, end int64 // ms, inclusive
	maxRows    int   // 0: one line per series
}

func (h *vmExportHandler) parse(r *http.Request) (exportRequest, error) {
	var er exportRequest
	if err := r.ParseForm(); err != nil {
		return er, fmt.Errorf("%w: parse form: %w", errExportParam, err)
	}
	matches := r.Form["match[]"]
	if len(matches) == 0 {
		return er, fmt.Errorf("%w: missing `match[]` query arg", errExportParam)
	}
	for _, m := range matches {
		ms, err := h.parser.ParseMetricSelector(m)
		if err != nil {
			return er, fmt.Errorf("%w: match[] %q: %w", errExportParam, m, err)
		}
		er.sets = append(er.sets, ms)
	}
	var err error
	if er.start, err = exportTime(r.FormValue("start"), math.MinInt64); err != nil {
		return er, fmt.Errorf("%w: start: %w", errExportParam, err)
	}
	if er.end, err = exportTime(r.FormValue("end"), h.opts.Now().UnixMilli()); err != nil {
		return er, fmt.Errorf("%w: end: %w", errExportParam, err)
	}
	if er.end < er.start {
		return er, fmt.Errorf("%w: end must not be before start", errExportParam)
	}
	if v := r.FormValue("max_rows_per_line"); v != "" {
		if er.maxRows, err = strconv.Atoi(v); err != nil || er.maxRows < 0 {
			return er, fmt.Errorf("%w: max_rows_per_line must be a non-negative integer, got %q", errExportParam, v)
		}
	}
	return er, nil
}

// exportTime parses unix seconds (integer or fractional) or RFC3339, as
// VictoriaMetrics and Prometheus accept them, into milliseconds.
func exportTime(v string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/1e3 {
			return 0, fmt.Errorf("time %q out of range", v)
		}
		return int64(math.Round(f * 1000)), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, fmt.Errorf("cannot parse %q as unix seconds or RFC3339", v)
	}
	return t.UnixMilli(), nil
}

func (h *vmExportHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	er, err := h.parse(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q, err := h.q.Querier(er.start, er.end)
	if err != nil {
		http.Error(w, "open querier: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: er.start, End: er.end}
	var set storage.SeriesSet
	if len(er.sets) == 1 {
		set = q.Select(r.Context(), false, hints, er.sets[0]...)
	} else {
		sss := make([]storage.SeriesSet, 0, len(er.sets))
		for _, ms := range er.sets {
			sss = append(sss, q.Select(r.Context(), true, hints, ms...))
		}
		set = storage.NewMergeSeriesSet(sss, 0, storage.ChainedSeriesMerge)
	}
	w.Header().Set("Content-Type", "application/stream+json; charset=utf-8")
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, exportFlushBytes)
	lw := exportLineWriter{w: bw, maxRows: er.maxRows}
	var it chunkenc.Iterator
	for set.Next() {
		s := set.At()
		it = s.Iterator(it)
		lw.start(s.Labels())
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			if typ != chunkenc.ValFloat {
				continue // histograms: VictoriaMetrics has none to import them into
			}
			t, v := it.At()
			if t < er.start || t > er.end || value.IsStaleNaN(v) {
				continue
			}
			if err := lw.add(t, v); err != nil {
				h.opts.Logger.Warn("export_write_failed", "err", err)
				return
			}
		}
		if err := it.Err(); err != nil {
			h.fail(w, bw, cw.n > 0, fmt.Errorf("read series %s: %w", s.Labels(), err))
			return
		}
		if err := lw.end(); err != nil {
			h.opts.Logger.Warn("export_write_failed", "err", err)
			return
		}
	}
	if err := set.Err(); err != nil {
		h.fail(w, bw, cw.n > 0, fmt.Errorf("select: %w", err))
		return
	}
	if err := bw.Flush(); err != nil {
		h.opts.Logger.Warn("export_write_failed", "err", err)
	}
}

// fail answers 500 if nothing was sent yet (what is buffered is dropped);
// otherwise the answer ends early (its last line may be cut) and the error
// is logged: a client of a streamed answer sees an incomplete body.
func (h *vmExportHandler) fail(w http.ResponseWriter, bw *bufio.Writer, started bool, err error) {
	h.opts.Logger.Error("export_failed", "err", err)
	if !started {
		bw.Reset(nil)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_ = bw.Flush()
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// exportLineWriter builds the JSON lines of one series at a time.
type exportLineWriter struct {
	w       *bufio.Writer
	maxRows int
	head    []byte // {"metric":{...},"values":[
	vals    []byte
	ts      []byte
	n       int // samples in the current line
}

func (l *exportLineWriter) start(ls labels.Labels) {
	b := append(l.head[:0], `{"metric":{`...)
	// __name__ first, as VictoriaMetrics writes it.
	first := true
	if name := ls.Get(labels.MetricName); name != "" {
		b = appendJSONString(append(b, `"__name__":`...), name)
		first = false
	}
	ls.Range(func(lb labels.Label) {
		if lb.Name == labels.MetricName {
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, lb.Name)
		b = appendJSONString(append(b, ':'), lb.Value)
	})
	l.head = append(b, `},"values":[`...)
	l.vals, l.ts, l.n = l.vals[:0], l.ts[:0], 0
}

func (l *exportLineWriter) add(t int64, v float64) error {
	if l.n > 0 {
		l.vals = append(l.vals, ',')
		l.ts = append(l.ts, ',')
	}
	switch {
	case math.IsNaN(v):
		l.vals = append(l.vals, "null"...)
	case math.IsInf(v, 1):
		l.vals = append(l.vals, `"Inf"`...)
	case math.IsInf(v, -1):
		l.vals = append(l.vals, `"-Inf"`...)
	default:
		l.vals = strconv.AppendFloat(l.vals, v, 'g', -1, 64)
	}
	l.ts = strconv.AppendInt(l.ts, t, 10)
	l.n++
	if l.maxRows > 0 && l.n >= l.maxRows {
		return l.end()
	}
	return nil
}

// end writes the current line, if it has samples.
func (l *exportLineWriter) end() error {
	if l.n == 0 {
		return nil
	}
	for _, b := range [][]byte{l.head, l.vals, []byte(`],"timestamps":[`), l.ts, []byte("]}\n")} {
		if _, err := l.w.Write(b); err != nil {
			return err
		}
	}
	l.vals, l.ts, l.n = l.vals[:0], l.ts[:0], 0
	return nil
}

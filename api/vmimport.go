package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/prompb"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest"
)

// VictoriaMetrics import limits. Each default says why.
const (
	// DefaultVMImportMaxLineBytes is the longest line accepted:
	// VictoriaMetrics' -import.maxLineLen default (10 MiB), so what
	// VictoriaMetrics exports, weft imports.
	DefaultVMImportMaxLineBytes = 10 << 20
	// vmImportBatchSamples is how many samples are appended per storage
	// transaction: a request of any size is imported with bounded memory,
	// in the batches a remote-write sender would send.
	vmImportBatchSamples = 50_000
	// vmImportMaxLineErrors bounds the line errors quoted in an answer.
	vmImportMaxLineErrors = 10
)

// VMImportOptions configure NewVMImportHandler. Zero fields take the
// defaults of DefaultVMImportOptions.
type VMImportOptions struct {
	// Ingest validates the samples as remote write does (labels, future
	// skew, storage refusals). Share the remote-write receiver's options.
	Ingest ingest.Options
	// MaxLineBytes rejects the request at a longer line (413).
	MaxLineBytes int
	// Logger receives storage failures; nil discards them.
	Logger *slog.Logger
	// Registerer receives the weft_ingest_* counters (path vm_import); nil
	// registers none.
	Registerer prometheus.Registerer
}

// DefaultVMImportOptions returns the documented defaults.
func DefaultVMImportOptions() VMImportOptions {
	return VMImportOptions{Ingest: ingest.DefaultOptions(), MaxLineBytes: DefaultVMImportMaxLineBytes}
}

// NewVMImportHandler serves VictoriaMetrics' POST /api/v1/import: JSON lines
// as /api/v1/export writes them (values may also be null, "NaN", "Inf",
// "-Inf"), optionally gzip-encoded, streamed into storage in batches. Every
// sample is validated and stored as a remote-write sample would be (the same
// code: ingest's decoder and appender), and extra_label=name=value adds a
// label to every series (replacing one of that name). The answer is 204
// when everything was stored; otherwise 400 with one line per reason (the
// first few bad lines by number, the remote-write rejection messages) and
// the counts. What was valid is stored either way, as with remote write;
// a storage failure answers 503 and stores nothing after the failed batch.
// Safe for concurrent use.
func NewVMImportHandler(app promstorage.AppendableV2, opts VMImportOptions) http.Handler {
	d := DefaultVMImportOptions()
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = d.MaxLineBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &vmImportHandler{app: app, opts: opts, dec: ingest.NewDecoder(opts.Ingest), counters: newIngestCounters(opts.Registerer)}
}

type vmImportHandler struct {
	app      promstorage.AppendableV2
	opts     VMImportOptions
	dec      *ingest.Decoder
	counters *ingestCounters
}

// vmLine is one import line.
type vmLine struct {
	Metric     map[string]string `json:"metric"`
	Values     []vmValue         `json:"values"`
	Timestamps []int64           `json:"timestamps"`
}

// vmValue reads what VictoriaMetrics reads as a value: a number, null (NaN)
// or one of the strings NaN, Inf, +Inf, -Inf, Infinity (any case it
// accepts).
type vmValue float64

func (v *vmValue) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*v = vmValue(math.NaN())
		return nil
	}
	if len(s) > 1 && s[0] == '"' {
		u, err := strconv.Unquote(s)
		if err != nil {
			return fmt.Errorf("value %s: %w", s, err)
		}
		neg := strings.HasPrefix(u, "-")
		switch strings.TrimLeft(u, "+-") {
		case "inf", "Inf", "infinity", "Infinity":
			if neg {
				*v = vmValue(math.Inf(-1))
			} else {
				*v = vmValue(math.Inf(1))
			}
			return nil
		case "nan", "NaN", "null", "Null":
			*v = vmValue(math.NaN())
			return nil
		}
		return fmt.Errorf("unsupported value string %s", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("value %s is not a number", s)
	}
	*v = vmValue(f)
	return nil
}

// importState is what one request accumulated.
type importState struct {
	req      prompb.WriteRequest
	samples  int // in req
	res      ingest.Result
	lineErrs []string
	badLines int
	rejects  []string // remote-write rejection messages, first few
	moreRej  int
}

func (h *vmImportHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := io.Reader(r.Body)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, "read gzip body: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	default:
		http.Error(w, fmt.Sprintf("unsupported Content-Encoding %q, want gzip or none", enc), http.StatusUnsupportedMediaType)
		return
	}
	extra, err := extraLabels(r.URL.Query()["extra_label"])
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	st := &importState{}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), h.opts.MaxLineBytes)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		if err := st.addLine(line, extra); err != nil {
			st.badLines++
			if len(st.lineErrs) < vmImportMaxLineErrors {
				st.lineErrs = append(st.lineErrs, fmt.Sprintf("line %d: %v", lineNo, err))
			}
			continue
		}
		if st.samples >= vmImportBatchSamples {
			if err := h.flush(r.Context(), st); err != nil {
				h.unavailable(w, st, err)
				return
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			h.counters.observeRemoteWrite(ingestPathVMImport, &st.res)
			http.Error(w, fmt.Sprintf("line %d is longer than %d bytes (the import's max line length); %d samples before it were imported", lineNo+1, h.opts.MaxLineBytes, st.res.Samples), http.StatusRequestEntityTooLarge)
			return
		}
		h.counters.observeRemoteWrite(ingestPathVMImport, &st.res)
		http.Error(w, fmt.Sprintf("read body at line %d: %v", lineNo+1, err), http.StatusBadRequest)
		return
	}
	if err := h.flush(r.Context(), st); err != nil {
		h.unavailable(w, st, err)
		return
	}
	h.counters.observeRemoteWrite(ingestPathVMImport, &st.res)
	h.counters.reject(ingestPathVMImport, ingestTypeFloat, "invalid_line", int64(st.badLines))
	rejected := st.res.RejectedTotal()
	if st.badLines == 0 && rejected == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "imported %d samples; %d invalid lines skipped; %d samples rejected\n", st.res.Samples, st.badLines, rejected)
	for _, e := range st.lineErrs {
		b.WriteString(e + "\n")
	}
	if more := st.badLines - len(st.lineErrs); more > 0 {
		fmt.Fprintf(&b, "(and %d more invalid lines)\n", more)
	}
	for _, e := range st.rejects {
		b.WriteString(e + "\n")
	}
	if st.moreRej > 0 {
		fmt.Fprintf(&b, "(and %d more rejections)\n", st.moreRej)
	}
	http.Error(w, strings.TrimSuffix(b.String(), "\n"), http.StatusBadRequest)
}

func (h *vmImportHandler) unavailable(w http.ResponseWriter, st *importState, err error) {
	h.opts.Logger.Error("vm_import_append_failed", "err", err)
	h.counters.observeRemoteWrite(ingestPathVMImport, &st.res)
	h.counters.reject(ingestPathVMImport, ingestTypeFloat, reasonUnavailable, int64(st.samples))
	w.Header().Set("Retry-After", "1")
	http.Error(w, fmt.Sprintf("store import batch: %v (%d samples before it were imported)", err, st.res.Samples), http.StatusServiceUnavailable)
}

// extraLabels parses extra_label values ("name=value").
func extraLabels(vs []string) ([]prompb.Label, error) {
	var out []prompb.Label
	for _, v := range vs {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("extra_label %q: want name=value", v)
		}
		out = append(out, prompb.Label{Name: name, Value: value})
	}
	return out, nil
}

// addLine parses one line into the pending request.
func (st *importState) addLine(line []byte, extra []prompb.Label) error {
	var l vmLine
	if err := json.Unmarshal(line, &l); err != nil {
		return fmt.Errorf("cannot parse json line: %w", err)
	}
	switch {
	case l.Metric == nil:
		return errors.New("missing `metric` object")
	case len(l.Metric) == 0:
		return errors.New("missing tags")
	case len(l.Values) == 0:
		return errors.New("missing `values` array")
	case len(l.Timestamps) == 0:
		return errors.New("missing `timestamps` array")
	case len(l.Values) != len(l.Timestamps):
		return fmt.Errorf("`timestamps` array size must match `values` array size; got %d; want %d", len(l.Timestamps), len(l.Values))
	}
	ts := prompb.TimeSeries{Labels: make([]prompb.Label, 0, len(l.Metric)+len(extra))}
	for name, value := range l.Metric {
		if slices.ContainsFunc(extra, func(e prompb.Label) bool { return e.Name == name }) {
			continue
		}
		ts.Labels = append(ts.Labels, prompb.Label{Name: name, Value: value})
	}
	ts.Labels = append(ts.Labels, extra...)
	slices.SortFunc(ts.Labels, func(a, b prompb.Label) int { return strings.Compare(a.Name, b.Name) })
	ts.Samples = make([]prompb.Sample, len(l.Values))
	for i, v := range l.Values {
		ts.Samples[i] = prompb.Sample{Value: float64(v), Timestamp: l.Timestamps[i]}
	}
	st.req.Timeseries = append(st.req.Timeseries, ts)
	st.samples += len(ts.Samples)
	return nil
}

// flush validates and appends the pending series as one remote-write 1.0
// batch, in one transaction.
func (h *vmImportHandler) flush(ctx context.Context, st *importState) error {
	if len(st.req.Timeseries) == 0 {
		return nil
	}
	buf, err := st.req.Marshal()
	if err != nil {
		return fmt.Errorf("encode batch: %w", err)
	}
	batch, err := h.dec.Decode(ingest.ProtoV1, buf)
	if err != nil {
		return fmt.Errorf("BUG: decode the import's own batch: %w", err)
	}
	defer batch.Release()
	app := h.app.AppenderV2(ctx)
	res, err := batch.Append(ctx, app)
	if err != nil && !errors.Is(err, ingest.ErrRejected) {
		return errors.Join(err, app.Rollback())
	}
	if cerr := app.Commit(); cerr != nil {
		return fmt.Errorf("commit: %w", cerr)
	}
	st.res.Samples += res.Samples
	for i, n := range res.Rejected {
		st.res.Rejected[i] += n
	}
	var rerr *ingest.RejectError
	if errors.As(err, &rerr) {
		for _, m := range rerr.Messages {
			if len(st.rejects) < vmImportMaxLineErrors {
				st.rejects = append(st.rejects, m.Error())
			} else {
				st.moreRej++
			}
		}
		st.moreRej += rerr.Total - len(rerr.Messages)
	}
	st.req.Timeseries = st.req.Timeseries[:0]
	st.samples = 0
	return nil
}

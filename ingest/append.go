package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest/workload"
	weftstorage "github.com/weftdb/weft/storage"
)

// ctxCheckEvery is how many series Append handles between context checks:
// often enough to stop a 32 MiB batch promptly, rare enough to cost nothing.
const ctxCheckEvery = 256

// Result counts what one Append wrote and rejected.
type Result struct {
	Samples    int // float samples appended
	Histograms int // native histogram samples appended
	Exemplars  int // exemplars appended

	// Rejected counts samples, histograms and exemplars refused per reason.
	// Series-level reasons count every sample of the series.
	Rejected [NumReasons]int
}

// RejectedTotal sums Rejected.
func (r *Result) RejectedTotal() int {
	n := 0
	for _, v := range r.Rejected {
		n += v
	}
	return n
}

// labelCopier is implemented by appenders that keep nothing of the labels
// given to Append and AppendExemplars once the call returns (weft's storage
// interns copies; Prometheus' TSDB head keeps the labels of a new series).
// For them, every series' labels are built in one reused buffer instead of
// a new allocation each.
type labelCopier interface{ CopiesLabels() bool }

// CopiesLabels reports whether app says it keeps nothing of the labels it
// is given (labelCopier). An appender that wraps another and keeps no
// labels itself answers CopiesLabels with this of the one it wraps, so the
// decoder can still lend it labels in its reused buffer.
func CopiesLabels(app storage.AppenderV2) bool {
	c, ok := app.(labelCopier)
	return ok && c.CopiesLabels()
}

// Append validates every series and appends the valid ones to app, in
// request order. It neither commits nor rolls back: that is the caller's.
//
// Errors:
//   - nil: everything was appended; commit.
//   - a *RejectError (errors.Is ErrRejected): some data was a client error
//     (invalid labels, out of window, ...) and was skipped, the rest was
//     appended and counted in Result; commit, then answer 4xx.
//   - anything else: storage failed in a way a retry may fix (or ctx ended);
//     roll back and answer 5xx. Result is then meaningless.
func (b *Batch) Append(ctx context.Context, app storage.AppenderV2) (Result, error) {
	var (
		res       Result
		o         = &b.d.opts
		maxT      = int64(1<<63 - 1)
		exApp, ok = app.(storage.ExemplarAppenderV2)
	)
	if !ok {
		exApp = nil
	}
	if o.MaxFutureSkew >= 0 {
		maxT = timestamp.FromTime(o.Now().Add(o.MaxFutureSkew))
	}
	b.borrow = CopiesLabels(app)
	b.rej.reset()
	for i := range b.series {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return res, fmt.Errorf("append remote write batch: %w", err)
			}
		}
		if err := b.appendSeries(app, exApp, &b.series[i], maxT, &res); err != nil {
			return res, fmt.Errorf("append remote write batch: %w", err)
		}
	}
	return res, b.rej.err()
}

// reject records one rejection of n data points. msg is called only when the
// message is kept.
func (b *Batch) reject(res *Result, reason Reason, n int, msg func() *rejection) {
	res.Rejected[reason] += n
	var e *rejection
	if b.rej.wantMessage(b.d.opts.MaxErrorMessages) {
		e = msg()
		e.reason = reason
	}
	b.rej.add(b.d.opts.MaxErrorMessages, e)
}

// appendSeries appends one series; it returns only retryable errors.
func (b *Batch) appendSeries(app storage.AppenderV2, exApp storage.ExemplarAppenderV2, s *seriesEntry, maxT int64, res *Result) error {
	points := s.samples.len() + s.hists.len()
	ls, reason, detail := b.seriesLabels(s.labels)
	if detail != "" {
		b.reject(res, reason, points+s.exemplars.len(), func() *rejection { return &rejection{detail: detail} })
		return nil
	}
	var opts storage.AOptions
	if b.proto == ProtoV2 {
		if points == 0 {
			b.reject(res, ReasonEmptySeries, s.exemplars.len(), func() *rejection {
				return &rejection{detail: "series " + ls.String() + " has no samples or histograms"}
			})
			return nil
		}
		m, err := b.metadata(s.meta)
		if err != nil {
			b.reject(res, ReasonInvalidMetadata, points+s.exemplars.len(), func() *rejection {
				return &rejection{detail: "series " + ls.String(), cause: err}
			})
			return nil
		}
		opts.Metadata = m
		opts.MetricFamilyName = familyName(ls.Get(labels.MetricName), m.Type)
	}

	exs := b.exemplarsOf(s, ls, maxT, res)
	inline := exApp == nil && len(exs) > 0
	var (
		ref      storage.SeriesRef
		err      error
		appended bool
		attached bool // inline exemplars were handed to an Append
		last     = points - 1
	)
	for i, smp := range b.samples[s.samples.lo:s.samples.hi] {
		if smp.t > maxT {
			b.rejectSample(res, ReasonTooFarInFuture, ls, smp.t, nil)
			continue
		}
		o := opts
		if inline && i == last {
			o.Exemplars, attached = exs, true
		}
		ref, err = app.Append(ref, ls, smp.st, smp.t, smp.v, nil, nil, o)
		written, err := b.appendErr(err, ls, smp.t, res, len(o.Exemplars))
		if err != nil {
			return err
		}
		if written {
			res.Samples++
			appended = true
		}
	}
	for i, he := range b.hists[s.hists.lo:s.hists.hi] {
		if he.t > maxT {
			b.rejectSample(res, ReasonTooFarInFuture, ls, he.t, nil)
			continue
		}
		if err := prepareHistogram(he.h, he.fh); err != nil {
			b.rejectSample(res, ReasonInvalidHistogram, ls, he.t, err)
			continue
		}
		o := opts
		if inline && s.samples.len()+i == last {
			o.Exemplars, attached = exs, true
		}
		ref, err = app.Append(ref, ls, he.st, he.t, 0, he.h, he.fh, o)
		written, err := b.appendErr(err, ls, he.t, res, len(o.Exemplars))
		if err != nil {
			return err
		}
		if written {
			res.Histograms++
			appended = true
		}
	}
	if inline && !attached {
		res.Rejected[ReasonInvalidExemplar] += len(exs)
	}
	if len(exs) == 0 || inline {
		return nil
	}
	if !appended {
		// Storage must not create a series for exemplars alone.
		res.Rejected[ReasonInvalidExemplar] += len(exs)
		return nil
	}
	_, err = exApp.AppendExemplars(ref, ls, exs)
	failed, err := b.exemplarErr(err, ls, res)
	if err != nil {
		// Exemplar storage is best effort, as in Prometheus: log, do not fail.
		b.d.opts.Logger.Debug("append_exemplars_failed", "series", ls.String(), "err", err)
		res.Rejected[ReasonInvalidExemplar] += len(exs)
		return nil
	}
	res.Exemplars += len(exs) - failed
	return nil
}

// appendErr classifies an Append error and reports whether the sample was
// written: client errors are recorded and cleared, partial (exemplar)
// errors are recorded, anything else is returned (retryable).
func (b *Batch) appendErr(err error, ls labels.Labels, t int64, res *Result, inlineExemplars int) (bool, error) {
	if err == nil {
		res.Exemplars += inlineExemplars
		return true, nil
	}
	if errors.Is(err, (*storage.AppendPartialError)(nil)) {
		failed, _ := b.exemplarErr(err, ls, res)
		res.Exemplars += max(0, inlineExemplars-failed)
		return true, nil
	}
	if reason, ok := clientReason(err); ok {
		b.rejectSample(res, reason, ls, t, err)
		res.Rejected[ReasonInvalidExemplar] += inlineExemplars
		return false, nil
	}
	return false, err
}

// exemplarErr handles an AppendPartialError: it returns how many exemplars
// failed, recording out-of-order ones as client errors like Prometheus does.
// Other errors are returned unchanged.
func (b *Batch) exemplarErr(err error, ls labels.Labels, res *Result) (int, error) {
	if err == nil {
		return 0, nil
	}
	var pErr *storage.AppendPartialError
	if !errors.As(err, &pErr) {
		return 0, err
	}
	for _, e := range pErr.ExemplarErrors {
		res.Rejected[ReasonInvalidExemplar]++
		if errors.Is(e.Err, storage.ErrOutOfOrderExemplar) {
			cause := e.Err
			// Counted above; this records the client error (a 4xx) only.
			b.reject(res, ReasonInvalidExemplar, 0, func() *rejection {
				return &rejection{detail: "series " + ls.String(), cause: cause}
			})
		}
	}
	return len(pErr.ExemplarErrors), nil
}

// clientReason maps storage errors that a retry cannot fix to a Reason.
func clientReason(err error) (Reason, bool) {
	switch {
	case errors.Is(err, storage.ErrOutOfOrderSample):
		return ReasonOutOfOrder, true
	case errors.Is(err, storage.ErrTooOldSample), errors.Is(err, storage.ErrOutOfBounds):
		return ReasonOutOfWindow, true
	case errors.Is(err, storage.ErrDuplicateSampleForTimestamp):
		return ReasonDuplicate, true
	case errors.Is(err, weftstorage.ErrInvalidLabels):
		return ReasonInvalidLabels, true
	}
	var he histogram.Error
	if errors.As(err, &he) {
		return ReasonInvalidHistogram, true
	}
	return 0, false
}

func (b *Batch) rejectSample(res *Result, reason Reason, ls labels.Labels, t int64, cause error) {
	b.reject(res, reason, 1, func() *rejection {
		return &rejection{detail: fmt.Sprintf("series %s timestamp %d", ls.String(), t), cause: cause}
	})
}

// prepareHistogram reduces reserved exponential schemas (9..52) to the
// highest supported one, as Prometheus' receiver does, then validates.
func prepareHistogram(h *histogram.Histogram, fh *histogram.FloatHistogram) error {
	if h != nil {
		if histogram.IsExponentialSchemaReserved(h.Schema) && h.Schema > histogram.ExponentialSchemaMax {
			if err := h.ReduceResolution(histogram.ExponentialSchemaMax); err != nil {
				return err
			}
		}
		return h.Validate()
	}
	if histogram.IsExponentialSchemaReserved(fh.Schema) && fh.Schema > histogram.ExponentialSchemaMax {
		if err := fh.ReduceResolution(histogram.ExponentialSchemaMax); err != nil {
			return err
		}
	}
	return fh.Validate()
}

// exemplarsOf builds the series' exemplars, sorted by timestamp, in b.exBuf.
// Invalid and too-far-in-future exemplars are recorded and left out.
func (b *Batch) exemplarsOf(s *seriesEntry, ls labels.Labels, maxT int64, res *Result) []exemplar.Exemplar {
	b.exBuf = b.exBuf[:0]
	for _, e := range b.exemplars[s.exemplars.lo:s.exemplars.hi] {
		els, detail := b.exemplarLabels(e.labels)
		if detail == "" && e.t > maxT {
			detail = fmt.Sprintf("timestamp %d is too far in the future", e.t)
		}
		if detail != "" {
			b.reject(res, ReasonInvalidExemplar, 1, func() *rejection {
				return &rejection{detail: "series " + ls.String() + ": " + detail}
			})
			continue
		}
		b.exBuf = append(b.exBuf, exemplar.Exemplar{Labels: els, Value: e.v, Ts: e.t, HasTs: e.t != 0})
	}
	if len(b.exBuf) > 1 {
		slices.SortFunc(b.exBuf, exemplar.Compare)
	}
	return b.exBuf
}

// metadata resolves RW2 metadata; help and unit strings are cloned once per
// request because storage may keep them.
func (b *Batch) metadata(m metaRefs) (metadata.Metadata, error) {
	n := uint32(len(b.symbols))
	if m.unit >= n {
		return metadata.Metadata{}, fmt.Errorf("unit_ref %d outside of symbols table (size %d)", m.unit, n)
	}
	if m.help >= n {
		return metadata.Metadata{}, fmt.Errorf("help_ref %d outside of symbols table (size %d)", m.help, n)
	}
	return metadata.Metadata{Type: metricType(m.typ), Unit: b.symbolClone(m.unit), Help: b.symbolClone(m.help)}, nil
}

func (b *Batch) symbolClone(ref uint32) string {
	s := b.sym(ref)
	if s == "" {
		return ""
	}
	if len(b.symClones) < len(b.symbols) {
		b.symClones = append(b.symClones, make([]string, len(b.symbols)-len(b.symClones))...)
	}
	if c := b.symClones[ref]; c != "" {
		return c
	}
	c := strings.Clone(s)
	b.symClones[ref] = c
	return c
}

func metricType(t int32) model.MetricType {
	switch t {
	case 1:
		return model.MetricTypeCounter
	case 2:
		return model.MetricTypeGauge
	case 3:
		return model.MetricTypeHistogram
	case 4:
		return model.MetricTypeGaugeHistogram
	case 5:
		return model.MetricTypeSummary
	case 6:
		return model.MetricTypeInfo
	case 7:
		return model.MetricTypeStateset
	}
	return model.MetricTypeUnknown
}

// labelState validates labels while they are added to the scratch builder,
// so that the common case (valid, sorted) costs one pass and one allocation.
type labelState struct {
	prev             string
	unsorted, noName bool
	bad              string // first problem found, "" if none
}

func (st *labelState) add(sb *labels.ScratchBuilder, name, value string) {
	st.addChecked(sb, name, value, utf8.ValidString(name), utf8.ValidString(value))
}

// addChecked is add with the UTF-8 validity of name and value known.
func (st *labelState) addChecked(sb *labels.ScratchBuilder, name, value string, nameOK, valueOK bool) {
	if value == "" {
		// A label with an empty value is the same as no label (PromQL and
		// weft's storage treat it so); drop it rather than reject.
		return
	}
	sb.Add(name, value)
	if st.bad == "" {
		switch {
		case name == "":
			st.bad = "empty label name"
		case !nameOK:
			st.bad = fmt.Sprintf("label name %q is not valid UTF-8", name)
		case !valueOK:
			st.bad = fmt.Sprintf("value of label %q is not valid UTF-8", name)
		case name == model.MetricNameLabel:
			st.noName = false
		}
	}
	if name <= st.prev && st.prev != "" {
		st.unsorted = true
	}
	st.prev = name
}

// finish sorts if needed and returns the labels, or a non-empty problem.
func (st *labelState) finish(sb *labels.ScratchBuilder) (labels.Labels, string) {
	if st.unsorted {
		sb.Sort()
	}
	ls := sb.Labels()
	if st.bad != "" {
		return ls, st.bad + " in series " + ls.String()
	}
	if st.unsorted {
		if dup, ok := ls.HasDuplicateLabelNames(); ok {
			return ls, fmt.Sprintf("duplicate label name %q in series %s", dup, ls.String())
		}
	}
	return ls, ""
}

// seriesLabels builds and validates a series' labels. A non-empty detail
// means the series is rejected for reason.
func (b *Batch) seriesLabels(sp span) (labels.Labels, Reason, string) {
	n := sp.len()
	if b.proto == ProtoV2 {
		if n%2 != 0 {
			return labels.EmptyLabels(), ReasonInvalidLabels, fmt.Sprintf("odd number of label references (%d)", n)
		}
		n /= 2
	}
	if n == 0 {
		return labels.EmptyLabels(), ReasonInvalidLabels, "empty label set"
	}
	if n > b.d.opts.MaxLabelsPerSeries {
		return labels.EmptyLabels(), ReasonTooManyLabels, fmt.Sprintf("series %s has %d labels, more than the limit of %d",
			b.metricNameOf(sp), n, b.d.opts.MaxLabelsPerSeries)
	}
	if ls, ok := b.encodeLabels(sp); ok {
		return ls, ReasonInvalidLabels, ""
	}
	// The general path: out-of-order names, invalid strings, a missing
	// name; it sorts what can be sorted and names the problem.
	b.sb.Reset()
	st := labelState{noName: true}
	if b.proto == ProtoV2 {
		refs, nsyms := b.refs[sp.lo:sp.hi], len(b.symbols)
		for i := 0; i < len(refs); i += 2 {
			nr, vr := refs[i], refs[i+1]
			if int(nr) >= nsyms || int(vr) >= nsyms {
				return labels.EmptyLabels(), ReasonInvalidLabels, fmt.Sprintf("label references %d=%d outside of symbols table (size %d)", nr, vr, nsyms)
			}
			name, value := b.sym(nr), b.sym(vr)
			if detail := tooLong(name, value); detail != "" {
				return labels.EmptyLabels(), ReasonInvalidLabels, detail
			}
			st.addChecked(&b.sb, name, value, b.symValid(nr), b.symValid(vr))
		}
	} else {
		for _, p := range b.pairs[sp.lo:sp.hi] {
			name, value := b.str(p.name), b.str(p.value)
			if detail := tooLong(name, value); detail != "" {
				return labels.EmptyLabels(), ReasonInvalidLabels, detail
			}
			st.add(&b.sb, name, value)
		}
	}
	ls, detail := st.finish(&b.sb)
	if detail == "" && ls.IsEmpty() {
		detail = "empty label set (every label value is empty)"
	}
	if detail == "" && st.noName {
		detail = "missing metric name (__name__) in series " + ls.String()
	}
	if detail == "" {
		ls, _ = b.d.opts.Workload.AddCanonical(ls)
	}
	return ls, ReasonInvalidLabels, detail
}

// encodeLabels builds the labels of a series in the common case (see
// labelEncoder), with the workload-context labels the series lacks
// (workload.Mapping.AddCanonical) merged in at their places, so that a
// dcgm-exporter series with UUID and Hostname costs no second label set;
// false sends the caller to the general path.
func (b *Batch) encodeLabels(sp span) (labels.Labels, bool) {
	var e labelEncoder
	add := b.canonicalLabels(sp)
	buf := b.leBuf[:0]
	// put adds the pair name=value after the canonical labels that sort
	// before it.
	put := func(buf []byte, name, value string) []byte {
		for len(add) > 0 && add[0].Name < name {
			buf = e.add(buf, add[0].Name, add[0].Value)
			add = add[1:]
		}
		return e.add(buf, name, value)
	}
	if b.proto == ProtoV2 {
		refs, nsyms, allValid := b.refs[sp.lo:sp.hi], uint32(len(b.symbols)), b.allSymbolsValid()
		for i := 0; i < len(refs) && !e.failed; i += 2 {
			nr, vr := refs[i], refs[i+1]
			if nr >= nsyms || vr >= nsyms || (!allValid && (!b.symValid(nr) || !b.symValid(vr))) {
				e.failed = true
				break
			}
			buf = put(buf, b.sym(nr), b.sym(vr))
		}
	} else {
		for _, p := range b.pairs[sp.lo:sp.hi] {
			buf = put(buf, b.str(p.name), b.str(p.value))
		}
	}
	for _, l := range add {
		buf = e.add(buf, l.Name, l.Value)
	}
	ls, ok := e.finish(buf, b.proto != ProtoV2, b.borrow)
	b.leBuf = buf
	return ls, ok
}

// canonicalLabels returns the workload-context labels the series at sp
// lacks, sorted by name, in b's scratch: nil, after one quick check per
// name, when no name of the series may be an alias (the common case).
func (b *Batch) canonicalLabels(sp span) []workload.Label {
	m := b.d.opts.Workload
	maybe := false
	if b.proto == ProtoV2 {
		refs, nsyms := b.refs[sp.lo:sp.hi], uint32(len(b.symbols))
		for i := 0; i+1 < len(refs) && !maybe; i += 2 {
			maybe = refs[i] < nsyms && m.MaybeAlias(b.sym(refs[i]))
		}
	} else {
		for _, p := range b.pairs[sp.lo:sp.hi] {
			if maybe = m.MaybeAlias(b.str(p.name)); maybe {
				break
			}
		}
	}
	if !maybe {
		return nil
	}
	var sc workload.Scan
	m.StartScan(&sc)
	if b.proto == ProtoV2 {
		refs, nsyms := b.refs[sp.lo:sp.hi], uint32(len(b.symbols))
		for i := 0; i+1 < len(refs); i += 2 {
			if refs[i] < nsyms && refs[i+1] < nsyms {
				sc.Observe(b.sym(refs[i]), b.sym(refs[i+1]))
			}
		}
	} else {
		for _, p := range b.pairs[sp.lo:sp.hi] {
			sc.Observe(b.str(p.name), b.str(p.value))
		}
	}
	b.canon = sc.AppendMissing(b.canon[:0])
	slices.SortFunc(b.canon, func(x, y workload.Label) int { return strings.Compare(x.Name, y.Name) })
	return b.canon
}

// tooLong describes a label name or value too long for a label set.
func tooLong(name, value string) string {
	switch {
	case len(name) > maxLabelBytes:
		return fmt.Sprintf("label name of %d bytes is longer than the limit of %d", len(name), maxLabelBytes)
	case len(value) > maxLabelBytes:
		return fmt.Sprintf("value of label %q is %d bytes, longer than the limit of %d", name, len(value), maxLabelBytes)
	}
	return ""
}

// metricNameOf describes an oversized series by its metric name only.
func (b *Batch) metricNameOf(sp span) string {
	name := ""
	if b.proto == ProtoV2 {
		refs := b.refs[sp.lo:sp.hi]
		for i := 0; i+1 < len(refs); i += 2 {
			if int(refs[i]) < len(b.symbols) && int(refs[i+1]) < len(b.symbols) && b.sym(refs[i]) == model.MetricNameLabel {
				name = b.sym(refs[i+1])
				break
			}
		}
	} else {
		for _, p := range b.pairs[sp.lo:sp.hi] {
			if b.str(p.name) == model.MetricNameLabel {
				name = b.str(p.value)
				break
			}
		}
	}
	return fmt.Sprintf("{__name__=%q, ...}", name)
}

// exemplarLabels builds an exemplar's labels (may be empty).
func (b *Batch) exemplarLabels(sp span) (labels.Labels, string) {
	n := sp.len()
	if b.proto == ProtoV2 {
		if n%2 != 0 {
			return labels.EmptyLabels(), fmt.Sprintf("odd number of exemplar label references (%d)", n)
		}
		n /= 2
	}
	if n == 0 {
		return labels.EmptyLabels(), ""
	}
	if n > b.d.opts.MaxLabelsPerSeries {
		return labels.EmptyLabels(), fmt.Sprintf("exemplar has %d labels, more than the limit of %d", n, b.d.opts.MaxLabelsPerSeries)
	}
	b.sb.Reset()
	var st labelState
	if b.proto == ProtoV2 {
		refs, nsyms := b.exRefs[sp.lo:sp.hi], len(b.symbols)
		for i := 0; i < len(refs); i += 2 {
			nr, vr := refs[i], refs[i+1]
			if int(nr) >= nsyms || int(vr) >= nsyms {
				return labels.EmptyLabels(), fmt.Sprintf("exemplar label references %d=%d outside of symbols table (size %d)", nr, vr, nsyms)
			}
			st.addChecked(&b.sb, b.sym(nr), b.sym(vr), b.symValid(nr), b.symValid(vr))
		}
	} else {
		for _, p := range b.exPairs[sp.lo:sp.hi] {
			st.add(&b.sb, b.str(p.name), b.str(p.value))
		}
	}
	return st.finish(&b.sb)
}

// familyName is the metric family a series belongs to, which is what
// metadata is kept under (as Prometheus' scrape metadata is): a classic
// histogram's or summary's _bucket, _sum and _count series share their
// family's name without the suffix.
func familyName(name string, typ model.MetricType) string {
	var suffixes []string
	switch typ {
	case model.MetricTypeHistogram, model.MetricTypeGaugeHistogram:
		suffixes = []string{"_bucket", "_sum", "_count"}
	case model.MetricTypeSummary:
		suffixes = []string{"_sum", "_count"}
	}
	for _, suf := range suffixes {
		if base, ok := strings.CutSuffix(name, suf); ok && base != "" {
			return base
		}
	}
	return name
}

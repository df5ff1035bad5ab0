package loki

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// ErrInvalid is wrapped by *ValidationError: the request had invalid
// streams or entries (a client error; the valid rest was written).
var ErrInvalid = errors.New("invalid push request")

// ValidationError lists why streams or entries were rejected.
type ValidationError struct {
	Reasons  []string // the first maxReasons reasons
	Rejected int      // entries rejected in all
	// ByReason counts the rejected entries by reason.
	ByReason [NumReasons]int
}

// maxReasons bounds the reasons kept for the response body.
const maxReasons = 10

func (e *ValidationError) Error() string {
	msg := strings.Join(e.Reasons, "\n")
	if e.Rejected > 0 {
		msg += fmt.Sprintf("\n%d entries rejected", e.Rejected)
	}
	return msg
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Add counts entries rejected for r with err, as the Ingester does: for a
// Pusher that validates too (per-tenant limits) and returns the
// ValidationError of what it did not push with the rest pushed.
func (e *ValidationError) Add(r Reason, entries int, err error) { e.add(r, entries, err) }

// merge adds o's rejections to e.
func (e *ValidationError) merge(o *ValidationError) {
	e.Rejected += o.Rejected
	for r, n := range o.ByReason {
		e.ByReason[r] += n
	}
	e.Reasons = append(e.Reasons, o.Reasons[:min(len(o.Reasons), maxReasons-min(len(e.Reasons), maxReasons))]...)
}

func (e *ValidationError) add(r Reason, entries int, err error) {
	e.Rejected += entries
	e.ByReason[r] += entries
	if len(e.Reasons) < maxReasons {
		e.Reasons = append(e.Reasons, err.Error())
	}
}

// Pusher is where an Ingester writes: *logstore.Store.
type Pusher interface {
	Push(ctx context.Context, streams []logstore.PushStream) error
}

// Ingester validates decoded requests, adds service_name and
// detected_level, and writes them. Safe for concurrent use.
type Ingester struct {
	p    Pusher
	opts Options
}

// NewIngester returns an Ingester writing to p.
func NewIngester(p Pusher, opts Options) *Ingester {
	return &Ingester{p: p, opts: opts.WithDefaults()}
}

// Stats count what a Push wrote.
type Stats struct {
	Streams, Entries int
	Bytes            int // line bytes accepted
}

// Push validates req and writes its valid streams and entries. It returns a
// *ValidationError when something was rejected (the rest is written): by
// its own checks or by the Pusher's, when the Pusher's error is a
// *ValidationError too; any other error is the Pusher's (retryable;
// nothing of this request may be stored).
func (in *Ingester) Push(ctx context.Context, req *Request) (Stats, error) {
	var st Stats
	verr := &ValidationError{}
	out := make([]logstore.PushStream, 0, len(req.Streams))
	now := in.opts.Now()
	maxT := now.Add(in.opts.CreationGracePeriod).UnixNano()
	minT := int64(math.MinInt64)
	if in.opts.RejectOlderThan > 0 {
		minT = now.Add(-in.opts.RejectOlderThan).UnixNano()
	}
	sb := labels.NewScratchBuilder(16)
	for _, s := range req.Streams {
		ls, reason, err := in.streamLabels(&sb, s)
		if err != nil {
			verr.add(reason, len(s.Entries), err)
			continue
		}
		ps := logstore.PushStream{Labels: ls, Entries: make([]logentry.Entry, 0, len(s.Entries))}
		streamLevel := ""
		if !in.opts.DisableLevelDetection {
			for _, k := range levelKeys {
				if v := ls.Get(k); v != "" {
					streamLevel = normalizeLevel(v)
					break
				}
			}
		}
		for _, e := range s.Entries {
			md, reason, err := in.entry(&sb, ls, e, minT, maxT, streamLevel)
			if err != nil {
				verr.add(reason, 1, err)
				continue
			}
			ps.Entries = append(ps.Entries, logentry.Entry{Timestamp: e.Timestamp, Line: e.Line, Metadata: md})
			st.Bytes += len(e.Line)
		}
		if len(ps.Entries) > 0 {
			out = append(out, ps)
			st.Streams++
			st.Entries += len(ps.Entries)
		}
	}
	if len(out) > 0 {
		if err := in.p.Push(ctx, out); err != nil {
			var perr *ValidationError
			if !errors.As(err, &perr) {
				return Stats{}, fmt.Errorf("push logs: %w", err)
			}
			// The Pusher validates too (per-tenant limits) and wrote the rest.
			st.Entries -= perr.Rejected
			verr.merge(perr)
		}
	}
	if len(verr.Reasons) > 0 {
		return st, verr
	}
	return st, nil
}

// streamLabels validates a stream's labels and adds service_name. Like
// Loki, it does not count service_name against MaxLabelNamesPerStream.
func (in *Ingester) streamLabels(sb *labels.ScratchBuilder, s Stream) (labels.Labels, Reason, error) {
	if s.LabelsErr != nil {
		return labels.EmptyLabels(), ReasonInvalidLabels, fmt.Errorf("error parsing labels: %w", s.LabelsErr)
	}
	if len(s.Labels) == 0 {
		return labels.EmptyLabels(), ReasonMissingLabels, errors.New("error at least one label pair is required per stream")
	}
	sb.Reset()
	for _, p := range s.Labels {
		if r, err := in.checkLabel(p); err != nil {
			return labels.EmptyLabels(), r, fmt.Errorf("stream %s: %w", pairsString(s.Labels), err)
		}
		sb.Add(p.Name, p.Value)
	}
	sb.Sort()
	ls := sb.Labels()
	if dup := duplicateName(ls); dup != "" {
		return labels.EmptyLabels(), ReasonDuplicateLabelNames, fmt.Errorf("stream %s: duplicate label name %q", pairsString(s.Labels), dup)
	}
	if !ls.Has(ServiceName) {
		svc := UnknownService
		for _, k := range in.opts.DiscoverServiceName {
			if v := ls.Get(k); v != "" {
				svc = v
				break
			}
		}
		b := labels.NewBuilder(ls)
		b.Set(ServiceName, svc)
		ls = b.Labels()
	}
	if n := ls.Len() - 1; n > in.opts.MaxLabelNamesPerStream {
		return labels.EmptyLabels(), ReasonMaxLabelNames, fmt.Errorf("entry for stream '%s' has %d label names; limit %d (limits.logs.max_label_names_per_stream; service_name is not counted)",
			ls, n, in.opts.MaxLabelNamesPerStream)
	}
	// The canonical context labels the stream's aliases provide (not
	// counted against the limit: they copy labels already counted).
	ls, _ = in.opts.Workload.AddCanonical(ls)
	return ls, 0, nil
}

// duplicateName returns a name that sorted ls has twice, or "".
func duplicateName(ls labels.Labels) string {
	var prev, dup string
	ls.Range(func(l labels.Label) {
		if l.Name == prev {
			dup = l.Name
		}
		prev = l.Name
	})
	return dup
}

// checkLabel validates a stream label pair.
func (in *Ingester) checkLabel(p Pair) (Reason, error) {
	switch {
	case !model.LabelName(p.Name).IsValidLegacy():
		return ReasonInvalidLabels, fmt.Errorf("invalid label name %q", truncate(p.Name))
	case strings.HasPrefix(p.Name, index.ReservedPrefix):
		return ReasonInvalidLabels, fmt.Errorf("label name %q: the prefix %s is reserved for weft's own streams", truncate(p.Name), index.ReservedPrefix)
	case len(p.Name) > in.opts.MaxLabelNameLength:
		return ReasonLabelNameTooLong, fmt.Errorf("label name %q longer than %d bytes", truncate(p.Name), in.opts.MaxLabelNameLength)
	case len(p.Value) > in.opts.MaxLabelValueLength:
		return ReasonLabelValueTooLong, fmt.Errorf("label %s value longer than %d bytes", p.Name, in.opts.MaxLabelValueLength)
	case !utf8.ValidString(p.Value):
		return ReasonInvalidLabels, fmt.Errorf("label %s value is not valid UTF-8", p.Name)
	}
	return 0, nil
}

// checkMetadata validates a structured-metadata pair: its name must be a
// label name (queries filter on it like on a label), its value UTF-8.
// Lengths are bounded by MaxStructuredMetadataSize as a whole, as in Loki.
func checkMetadata(p Pair) error {
	switch {
	case !model.LabelName(p.Name).IsValidLegacy():
		return fmt.Errorf("invalid structured metadata name %q", truncate(p.Name))
	case !utf8.ValidString(p.Value):
		return fmt.Errorf("structured metadata %s value is not valid UTF-8", p.Name)
	}
	return nil
}

// entry validates one entry and returns its metadata with detected_level.
func (in *Ingester) entry(sb *labels.ScratchBuilder, ls labels.Labels, e Entry, minT, maxT int64, streamLevel string) (labels.Labels, Reason, error) {
	if len(e.Line) > in.opts.MaxLineSize {
		return labels.EmptyLabels(), ReasonLineTooLong, fmt.Errorf("max entry size '%d' bytes exceeded for stream '%s' while adding an entry with length '%d' bytes",
			in.opts.MaxLineSize, ls, len(e.Line))
	}
	if e.Timestamp > maxT {
		return labels.EmptyLabels(), ReasonTooFarInFuture, fmt.Errorf("entry for stream '%s' has timestamp too new: %s", ls, time.Unix(0, e.Timestamp).UTC().Format(time.RFC3339Nano))
	}
	if e.Timestamp < minT {
		return labels.EmptyLabels(), ReasonTooOld, fmt.Errorf("entry for stream '%s' has timestamp too old: %s, oldest acceptable timestamp is: %s",
			ls, time.Unix(0, e.Timestamp).UTC().Format(time.RFC3339Nano), time.Unix(0, minT).UTC().Format(time.RFC3339Nano))
	}
	size := 0
	for _, p := range e.Metadata {
		size += len(p.Name) + len(p.Value)
	}
	if size > in.opts.MaxStructuredMetadataSize {
		return labels.EmptyLabels(), ReasonMetadataTooLarge, fmt.Errorf("structured metadata size %d bytes exceeds the limit of %d bytes for stream '%s'",
			size, in.opts.MaxStructuredMetadataSize, ls)
	}
	if len(e.Metadata) > in.opts.MaxStructuredMetadataPairs {
		return labels.EmptyLabels(), ReasonMetadataTooMany, fmt.Errorf("structured metadata has %d pairs; limit %d for stream '%s'",
			len(e.Metadata), in.opts.MaxStructuredMetadataPairs, ls)
	}
	sb.Reset()
	level, hasDetected := "", false
	for _, p := range e.Metadata {
		if err := checkMetadata(p); err != nil {
			return labels.EmptyLabels(), ReasonInvalidMetadata, fmt.Errorf("stream '%s': %w", ls, err)
		}
		sb.Add(p.Name, p.Value)
		if p.Name == DetectedLevel {
			hasDetected = true
		} else if level == "" && isLevelKey(p.Name) && p.Value != "" {
			level = normalizeLevel(p.Value)
		}
	}
	if !in.opts.DisableLevelDetection && !hasDetected {
		switch {
		case streamLevel != "":
			level = streamLevel
		case level == "":
			level = detectLevel(e.Line)
		}
		sb.Add(DetectedLevel, level)
	}
	sb.Sort()
	md := sb.Labels()
	if dup := duplicateName(md); dup != "" {
		return labels.EmptyLabels(), ReasonInvalidMetadata, fmt.Errorf("stream '%s': duplicate structured metadata name %q", ls, dup)
	}
	return md, 0, nil
}

func pairsString(ps []Pair) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", truncate(p.Name), truncate(p.Value))
	}
	b.WriteByte('}')
	return b.String()
}

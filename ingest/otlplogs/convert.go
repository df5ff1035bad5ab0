package otlplogs

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/workload"
)

// Structured-metadata names written for record fields (Loki's).
const (
	mdTraceID           = "trace_id"
	mdSpanID            = "span_id"
	mdSeverityText      = "severity_text"
	mdSeverityNumber    = "severity_number"
	mdFlags             = "flags"
	mdObservedTimestamp = "observed_timestamp"
	mdScopeName         = "scope_name"
	mdScopeVersion      = "scope_version"
)

// converter turns plog.Logs into a loki.Request. Immutable; safe for
// concurrent use.
type converter struct {
	mapping *workload.Mapping
	index   []indexLabel // in priority order
	namer   otlptranslator.LabelNamer
	// maxLabels is the stream label limit (not counting service_name, as in
	// Loki): label candidates past it become structured metadata instead. maxValue is
	// the label value length limit: a longer value is kept as metadata.
	maxLabels, maxValue int
	// maxPairs is the structured-metadata pair limit: past it an entry is
	// rejected anyway, so pairs are appended without the duplicate scan
	// (which would be quadratic in a hostile record's attributes).
	maxPairs int
}

// indexLabel is a resource attribute stored as a stream label.
type indexLabel struct{ attr, label string }

func newConverter(m *workload.Mapping, indexLabels []string, maxLabels, maxValue, maxPairs int) *converter {
	c := &converter{mapping: m, maxLabels: maxLabels, maxValue: maxValue, maxPairs: maxPairs}
	for _, a := range indexLabels {
		if n, err := c.namer.Build(a); err == nil {
			c.index = append(c.index, indexLabel{a, n})
		}
	}
	return c
}

// normalize returns the Prometheus-normalized name of an attribute, or ""
// when it has none (empty name).
func (c *converter) normalize(name string) string {
	n, err := c.namer.Build(name)
	if err != nil {
		return ""
	}
	return n
}

// convert maps ld to a request with one stream per resource. now is the
// timestamp of records without one.
func (c *converter) convert(ld plog.Logs, now time.Time) *loki.Request {
	rls := ld.ResourceLogs()
	req := &loki.Request{Streams: make([]loki.Stream, 0, rls.Len())}
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		s, resMD := c.resource(rl.Resource().Attributes())
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			scopeMD := append([]loki.Pair(nil), resMD...)
			scope := sl.Scope()
			if scope.Name() != "" {
				scopeMD = c.setPair(scopeMD, mdScopeName, scope.Name())
			}
			if scope.Version() != "" {
				scopeMD = c.setPair(scopeMD, mdScopeVersion, scope.Version())
			}
			scopeMD = c.appendAttrs(scopeMD, scope.Attributes())
			lrs := sl.LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				s.Entries = append(s.Entries, c.record(lrs.At(k), scopeMD, now))
			}
		}
		req.Streams = append(req.Streams, s)
	}
	return req
}

// resource returns the stream (labels, no entries) of a resource and the
// structured metadata of its attributes that are not labels.
//
// The label candidates are, in this order, service_name, job (as the
// resource's metrics have it: service.namespace/service.name), the workload
// context labels (rule order) and the index labels (list order), each name
// once (the first wins). service_name and the next maxLabels of them are
// the stream's labels; the rest, and any candidate whose value is longer than a label
// value may be, are kept as structured metadata under the same name (as
// Loki keeps attributes it does not index), so that a resource with more
// attributes than the limit is stored, never refused.
func (c *converter) resource(attrs pcommon.Map) (loki.Stream, []loki.Pair) {
	used := map[string]bool{}
	cands := make([]loki.Pair, 1, 16)
	cands[0] = loki.Pair{Name: loki.ServiceName, Value: loki.UnknownService}
	has := func(n string) bool {
		for _, p := range cands {
			if p.Name == n {
				return true
			}
		}
		return false
	}
	// The service's job, as its metrics have it (workload.ServiceJob).
	if job := workload.ServiceJob(func(name string) (string, bool) {
		v, ok := attrs.Get(name)
		if !ok {
			return "", false
		}
		return v.AsString(), true
	}); job != "" {
		cands = append(cands, loki.Pair{Name: workload.JobLabel, Value: job})
	}
	if c.mapping != nil {
		var ctx []workload.Label
		ctx = c.mapping.AppendLabels(ctx, func(name string) (string, bool) {
			v, ok := attrs.Get(name)
			if !ok {
				return "", false
			}
			str := v.AsString()
			if str != "" {
				used[name] = true // AppendLabels stops at the first non-empty hit
			}
			return str, true
		})
		for _, l := range ctx {
			if l.Name == loki.ServiceName {
				cands[0].Value = l.Value
				continue
			}
			if !has(l.Name) {
				cands = append(cands, loki.Pair{Name: l.Name, Value: l.Value})
			}
		}
	}
	for _, il := range c.index {
		v, ok := attrs.Get(il.attr)
		if !ok || used[il.attr] {
			continue
		}
		used[il.attr] = true
		str := v.AsString()
		switch {
		case str == "":
		case il.label == loki.ServiceName:
			if cands[0].Value == loki.UnknownService {
				cands[0].Value = str
			}
		case !has(il.label):
			cands = append(cands, loki.Pair{Name: il.label, Value: str})
		}
	}
	var s loki.Stream
	var md []loki.Pair
	for _, p := range cands {
		if len(s.Labels) <= c.maxLabels && len(p.Value) <= c.maxValue {
			s.Labels = append(s.Labels, p)
		} else {
			md = append(md, p)
		}
	}
	attrs.Range(func(k string, v pcommon.Value) bool {
		if !used[k] {
			if n := c.normalize(k); n != "" {
				md = c.appendValue(md, n, v, 0)
			}
		}
		return true
	})
	return s, md
}

func (c *converter) appendAttrs(md []loki.Pair, attrs pcommon.Map) []loki.Pair {
	attrs.Range(func(k string, v pcommon.Value) bool {
		if n := c.normalize(k); n != "" {
			md = c.appendValue(md, n, v, 0)
		}
		return true
	})
	return md
}

// maxFlattenDepth bounds the recursion into nested maps (a hostile request
// can nest deeper than any real attribute); deeper maps are stored as JSON.
const maxFlattenDepth = 8

// appendValue sets name to v; a map is flattened into one pair per leaf,
// names joined with "_", as Loki does (like LogQL's json parser).
func (c *converter) appendValue(md []loki.Pair, name string, v pcommon.Value, depth int) []loki.Pair {
	if v.Type() != pcommon.ValueTypeMap || depth >= maxFlattenDepth || v.Map().Len() == 0 {
		return c.setPair(md, name, v.AsString())
	}
	v.Map().Range(func(k string, cv pcommon.Value) bool {
		if n := c.normalize(k); n != "" {
			md = c.appendValue(md, name+"_"+n, cv, depth+1)
		}
		return true
	})
	return md
}

// record maps one log record to an entry; base is the resource and scope
// metadata (copied, not modified).
func (c *converter) record(lr plog.LogRecord, base []loki.Pair, now time.Time) loki.Entry {
	md := make([]loki.Pair, len(base), len(base)+lr.Attributes().Len()+6)
	copy(md, base)
	md = c.appendAttrs(md, lr.Attributes())
	if tid := lr.TraceID(); !tid.IsEmpty() {
		md = c.setPair(md, mdTraceID, hex.EncodeToString(tid[:]))
	}
	if sid := lr.SpanID(); !sid.IsEmpty() {
		md = c.setPair(md, mdSpanID, hex.EncodeToString(sid[:]))
	}
	if st := lr.SeverityText(); st != "" {
		md = c.setPair(md, mdSeverityText, st)
	}
	sn := lr.SeverityNumber()
	if sn != plog.SeverityNumberUnspecified {
		md = c.setPair(md, mdSeverityNumber, strconv.Itoa(int(sn)))
	}
	if f := lr.Flags(); f != 0 {
		md = c.setPair(md, mdFlags, strconv.FormatUint(uint64(f), 10))
	}
	// The record's severity gives the level before any level-like
	// attribute does; without one, ingest/loki detects it.
	if st := lr.SeverityText(); st != "" {
		md = c.setPair(md, loki.DetectedLevel, loki.NormalizeLevel(st))
	} else if lvl := severityLevel(sn); lvl != "" {
		md = c.setPair(md, loki.DetectedLevel, lvl)
	}
	ts, obs := int64(lr.Timestamp()), int64(lr.ObservedTimestamp())
	switch {
	case ts == 0:
		ts = obs
	case obs != 0:
		// Both set: the observed time is kept as metadata, as Loki does.
		md = c.setPair(md, mdObservedTimestamp, strconv.FormatInt(obs, 10))
	}
	if ts == 0 {
		ts = now.UnixNano()
	}
	return loki.Entry{Timestamp: ts, Line: bodyLine(lr.Body()), Metadata: md}
}

// bodyLine is the log line of a body: a string as is, other values
// JSON-encoded, an empty body empty.
func bodyLine(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeEmpty:
		return ""
	case pcommon.ValueTypeStr:
		return v.Str()
	}
	return v.AsString()
}

// severityLevel maps an OTLP severity number to a Loki level name; "" when
// unspecified or out of range.
func severityLevel(n plog.SeverityNumber) string {
	switch {
	case n >= 1 && n <= 4:
		return "trace"
	case n >= 5 && n <= 8:
		return "debug"
	case n >= 9 && n <= 12:
		return "info"
	case n >= 13 && n <= 16:
		return "warn"
	case n >= 17 && n <= 20:
		return "error"
	case n >= 21 && n <= 24:
		return "fatal"
	}
	return ""
}

// setPair sets name to value in md, replacing an earlier pair of that name.
func (c *converter) setPair(md []loki.Pair, name, value string) []loki.Pair {
	if len(md) > c.maxPairs {
		return append(md, loki.Pair{Name: name, Value: value})
	}
	for i := range md {
		if md[i].Name == name {
			md[i].Value = value
			return md
		}
	}
	return append(md, loki.Pair{Name: name, Value: value})
}

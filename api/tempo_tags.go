package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftdb/weft/proto/tempopb"
	"github.com/weftdb/weft/query/traceql"
	"github.com/weftdb/weft/storage/traceentry"
)

// intrinsicTags are the intrinsics /api/v2/search/tags lists (Tempo's
// list; Grafana's search form offers them).
var intrinsicTags = []string{"duration", "kind", "name", "rootName", "rootServiceName", "status", "statusMessage", "traceDuration"}

// tagScopes are the scopes of /api/v2/search/tags in answer order.
var tagScopes = []string{"resource", "span", "intrinsic"}

// tagRange is the optional start and end of the tag endpoints: without
// them every block header is read (names only, cheap).
func (t *tempoAPI) tagRange(r *http.Request) (start, end int64, err error) {
	q := r.URL.Query()
	if q.Get("start") == "" && q.Get("end") == "" {
		return 0, 0, nil
	}
	return t.searchRange(r)
}

func tagLimit(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, badRequest("invalid limit %q: must be a non-negative integer", s)
	}
	return n, nil
}

func (t *tempoAPI) tagNames(r *http.Request) (span, resource []string, limit int, err error) {
	start, end, err := t.tagRange(r)
	if err != nil {
		return nil, nil, 0, err
	}
	if limit, err = tagLimit(r); err != nil {
		return nil, nil, 0, err
	}
	span, resource, err = t.tr.TagNames(r.Context(), start, end)
	return span, resource, limit, err
}

func (t *tempoAPI) tagsV2(w http.ResponseWriter, r *http.Request) {
	scope := r.URL.Query().Get("scope")
	if scope != "" && !slices.Contains([]string{"resource", "span", "intrinsic", "event", "link", "instrumentation"}, scope) {
		t.error(w, r, http.StatusBadRequest, fmt.Errorf("invalid scope %q: want resource, span, intrinsic, event, link, instrumentation or none", scope))
		return
	}
	span, resource, limit, err := t.tagNames(r)
	if err != nil {
		t.error(w, r, statusOf(r, err), err)
		return
	}
	lists := map[string][]string{"resource": resource, "span": span, "intrinsic": intrinsicTags}
	resp := &tempopb.SearchTagsV2Response{Metrics: &tempopb.MetadataMetrics{}}
	for _, name := range tagScopes {
		if scope != "" && scope != name {
			continue
		}
		tags := lists[name]
		if limit > 0 && len(tags) > limit {
			tags = tags[:limit]
		}
		resp.Scopes = append(resp.Scopes, &tempopb.SearchTagsV2Scope{Name: name, Tags: tags})
	}
	if scope != "" && len(resp.Scopes) == 0 {
		resp.Scopes = []*tempopb.SearchTagsV2Scope{{Name: scope}}
	}
	b, err := tempoJSON(resp)
	if err != nil {
		t.error(w, r, http.StatusInternalServerError, err)
		return
	}
	writeBody(w, "application/json", b)
}

func (t *tempoAPI) tagsV1(w http.ResponseWriter, r *http.Request) {
	span, resource, limit, err := t.tagNames(r)
	if err != nil {
		t.error(w, r, statusOf(r, err), err)
		return
	}
	names := slices.Compact(slices.Sorted(slices.Values(append(span, resource...))))
	if limit > 0 && len(names) > limit {
		names = names[:limit]
	}
	b, _ := json.Marshal(map[string]any{"tagNames": names, "metrics": map[string]any{}})
	writeBody(w, "application/json", b)
}

// tagField is the field a tag-values request names.
type tagField struct {
	scope traceentry.Scope
	name  string
	intr  traceentry.Intrinsic
}

var intrinsicsByName = func() map[string]traceentry.Intrinsic {
	m := map[string]traceentry.Intrinsic{
		"span:name": traceentry.IntrinsicName, "span:status": traceentry.IntrinsicStatus,
		"span:statusMessage": traceentry.IntrinsicStatusMessage, "span:kind": traceentry.IntrinsicKind,
		"span:duration": traceentry.IntrinsicDuration, "trace:rootName": traceentry.IntrinsicTraceRootName,
		"trace:rootService": traceentry.IntrinsicTraceRootService, "trace:duration": traceentry.IntrinsicTraceDuration,
	}
	for i := traceentry.IntrinsicName; i <= traceentry.IntrinsicInstrumentationVersion; i++ {
		m[i.String()] = i
	}
	return m
}()

// parseTag reads "resource.x", "span.x", ".x", "event.x", "link.x",
// "instrumentation.x" or an intrinsic name.
func parseTag(s string) (tagField, error) {
	if i, ok := intrinsicsByName[s]; ok {
		return tagField{scope: traceentry.ScopeIntrinsic, intr: i}, nil
	}
	for _, p := range []struct {
		prefix string
		scope  traceentry.Scope
	}{{"resource.", traceentry.ScopeResource}, {"span.", traceentry.ScopeSpan}, {"event.", traceentry.ScopeEvent},
		{"link.", traceentry.ScopeLink}, {"instrumentation.", traceentry.ScopeInstrumentation}, {".", traceentry.ScopeUnscoped}} {
		if name, ok := strings.CutPrefix(s, p.prefix); ok && name != "" {
			return tagField{scope: p.scope, name: name}, nil
		}
	}
	return tagField{}, badRequest("invalid tag %q: want a scoped attribute (resource.x, span.x, .x) or an intrinsic", s)
}

// values returns the typed values (Tempo's type names) of f on sp.
func (f tagField) values(tr *traceentry.Trace, sp *traceentry.Span, add func(typ, v string)) {
	attr := func(as traceentry.Attributes) bool {
		v, ok := as.Get(f.name)
		if !ok {
			return false
		}
		addValue(v, add)
		return true
	}
	switch f.scope {
	case traceentry.ScopeResource:
		if sp.Resource != nil {
			attr(sp.Resource.Attributes)
		}
		return
	case traceentry.ScopeSpan:
		attr(sp.Attributes)
		return
	case traceentry.ScopeUnscoped:
		if !attr(sp.Attributes) && sp.Resource != nil {
			attr(sp.Resource.Attributes)
		}
		return
	case traceentry.ScopeEvent:
		for _, e := range sp.Events {
			attr(e.Attributes)
		}
		return
	case traceentry.ScopeLink:
		for _, l := range sp.Links {
			attr(l.Attributes)
		}
		return
	case traceentry.ScopeInstrumentation:
		if sp.Scope != nil {
			attr(sp.Scope.Attributes)
		}
		return
	}
	switch f.intr {
	case traceentry.IntrinsicName:
		add("string", sp.Name)
	case traceentry.IntrinsicStatus:
		add("keyword", sp.StatusCode.String())
	case traceentry.IntrinsicKind:
		add("keyword", sp.Kind.String())
	case traceentry.IntrinsicStatusMessage:
		add("string", sp.StatusMessage)
	case traceentry.IntrinsicDuration:
		add("duration", time.Duration(sp.DurationNanos()).String())
	case traceentry.IntrinsicTraceRootName, traceentry.IntrinsicTraceRootService:
		if root := tr.Root(); root != nil {
			if f.intr == traceentry.IntrinsicTraceRootName {
				add("string", root.Name)
			} else {
				add("string", root.Resource.ServiceName())
			}
		}
	case traceentry.IntrinsicTraceDuration:
		start, end := tr.TimeRange()
		add("duration", time.Duration(end-start).String())
	case traceentry.IntrinsicEventName:
		for _, e := range sp.Events {
			add("string", e.Name)
		}
	case traceentry.IntrinsicInstrumentationName, traceentry.IntrinsicInstrumentationVersion:
		if sp.Scope != nil {
			if f.intr == traceentry.IntrinsicInstrumentationName {
				add("string", sp.Scope.Name)
			} else {
				add("string", sp.Scope.Version)
			}
		}
	}
}

func addValue(v traceentry.Value, add func(typ, v string)) {
	switch v.Type() {
	case traceentry.ValueString:
		add("string", v.Str())
	case traceentry.ValueInt:
		add("int", strconv.FormatInt(v.Int(), 10))
	case traceentry.ValueFloat:
		add("float", strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case traceentry.ValueBool:
		add("bool", strconv.FormatBool(v.Bool()))
	case traceentry.ValueArray:
		for _, e := range v.Array() {
			addValue(e, add)
		}
	}
}

// errEnough stops a tag-value scan at its limit.
var errEnough = errors.New("enough values")

// tagValues collects the distinct values of the request's tag on the spans
// that match its q (lenient: an incomplete query keeps the filters that
// parse), most recent traces first, at most MaxTagValueTraces traces.
func (t *tempoAPI) tagValues(r *http.Request) ([]*tempopb.TagValue, error) {
	f, err := parseTag(r.PathValue("tag"))
	if err != nil {
		return nil, err
	}
	limit, err := tagLimit(r)
	if err != nil {
		return nil, err
	}
	start, end, err := t.searchRange(r)
	if err != nil {
		return nil, err
	}
	query := traceql.ParseLenient(r.URL.Query().Get("q"))
	it, err := t.tr.Fetch(r.Context(), traceentry.FetchRequest{Start: start, End: end, Hints: query.Hints()})
	if err != nil {
		return nil, fmt.Errorf("tag values: %w", err)
	}
	defer it.Close()
	ev := query.NewEvaluator()
	type key struct{ typ, v string }
	seen := map[key]bool{}
	var out []*tempopb.TagValue
	add := func(typ, v string) {
		k := key{typ, v}
		if v == "" || seen[k] || (limit > 0 && len(out) >= limit) {
			return
		}
		seen[k] = true
		out = append(out, &tempopb.TagValue{Type: typ, Value: v})
	}
	n := 0
	for it.Next() && n < t.opts.MaxTagValueTraces && (limit == 0 || len(out) < limit) {
		n++
		tr := it.At()
		for _, m := range ev.Eval(tr) {
			for _, sp := range m.Spans {
				f.values(tr, sp, add)
			}
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("tag values: %w", err)
	}
	slices.SortFunc(out, func(a, b *tempopb.TagValue) int {
		if c := strings.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	return out, nil
}

func (t *tempoAPI) tagValuesV2(w http.ResponseWriter, r *http.Request) {
	vals, err := t.tagValues(r)
	if err != nil {
		t.error(w, r, statusOf(r, err), err)
		return
	}
	b, err := tempoJSON(&tempopb.SearchTagValuesV2Response{TagValues: vals, Metrics: &tempopb.MetadataMetrics{}})
	if err != nil {
		t.error(w, r, http.StatusInternalServerError, err)
		return
	}
	writeBody(w, "application/json", b)
}

func (t *tempoAPI) tagValuesV1(w http.ResponseWriter, r *http.Request) {
	tag := r.PathValue("tag")
	if _, err := parseTag(tag); err != nil {
		r.SetPathValue("tag", "."+tag) // v1 names attributes without scope
	}
	vals, err := t.tagValues(r)
	if err != nil {
		t.error(w, r, statusOf(r, err), err)
		return
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		out = append(out, v.Value)
	}
	out = slices.Compact(out)
	b, _ := json.Marshal(map[string]any{"tagValues": out, "metrics": map[string]any{}})
	writeBody(w, "application/json", b)
}

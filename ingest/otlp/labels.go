package otlp

import (
	"cmp"
	"slices"
	"strings"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Label names the OTLP → Prometheus translation gives resource and scope
// information (as Prometheus' prometheusremotewrite converter names them).
const (
	jobLabel             = "job"
	instanceLabel        = "instance"
	scopeNameLabel       = "otel_scope_name"
	scopeVersionLabel    = "otel_scope_version"
	scopeSchemaURLLabel  = "otel_scope_schema_url"
	scopeAttrLabelPrefix = "otel_scope_"

	attrServiceName       = "service.name"
	attrServiceNamespace  = "service.namespace"
	attrServiceInstanceID = "service.instance.id"
)

// identifyingAttrs are the resource attributes that become job and instance;
// target_info leaves them out unless KeepIdentifyingResourceAttributes.
var identifyingAttrs = []string{attrServiceNamespace, attrServiceName, attrServiceInstanceID}

// reservedAttrs are the data point attributes the converter ignores: the
// metric name is set from the metric.
var reservedAttrs = []string{labels.MetricName}

// labelBuilder builds the labels of the series of OTLP data points and of
// target_info the way Prometheus' prometheusremotewrite converter does
// (its createAttributes), in O(n log n) for n attributes where the converter
// takes O(n²) (it merges through a labels.Builder, whose Set and Get scan
// every label set so far). The rules, in the order the converter applies
// them:
//
//  1. the attributes, ignored ones left out, sorted by key; without UTF-8
//     names, each key is sanitized and the values of keys that sanitize to
//     the same name are joined with ";" in key order (a value joins only
//     once the name has a non-empty value); with UTF-8 names, kept as sent;
//     empty values dropped;
//  2. promoted resource attributes, where the name has no value yet;
//  3. job and instance from service.namespace/service.name and
//     service.instance.id, overriding;
//  4. scope attributes as otel_scope_<key>, then otel_scope_name, _version
//     and _schema_url, overriding (with PromoteScopeMetadata and a named
//     scope);
//  5. __name__, overriding.
//
// An empty value deletes a label, as in labels.Builder. Keys that appear
// twice in one attribute map (possible on the wire, not through pdata's
// API) are outside the equivalence: the converter's unstable sort makes its
// answer depend on the sort, weft's sort is stable.
//
// TestLabelsMatchConverter and FuzzLabelsMatchConverter hold it to the
// converter. Not safe for concurrent use; its name cache lives for one
// request.
type labelBuilder struct {
	namer           otlptranslator.LabelNamer
	utf8            bool
	promoteAll      bool
	promote         map[string]struct{} // promoted attributes; with promoteAll, the ignored ones
	keepIdentifying bool
	scopeMetadata   bool

	names map[string]string // attribute key → sanitized label name, this request
	pairs []attrPair
	over  overlay
	sb    labels.ScratchBuilder
}

// attrPair is one attribute being turned into a label.
type attrPair struct {
	key, name, value string
	idx              int // position in the attribute map: keeps the sort stable
}

// resourceContext is what a resource gives every series of its points.
type resourceContext struct {
	job, instance string
	promoted      []labels.Label // sorted by name, unique, no empty value
}

// scopeContext is what a scope gives every series of its points with
// PromoteScopeMetadata; nil without it or for an unnamed scope.
type scopeContext struct {
	attrs                    []labels.Label // otel_scope_<key>, sorted, unique, no empty value
	name, version, schemaURL string
}

// sanitize returns the label name of an attribute key, cached.
func (b *labelBuilder) sanitize(key string) (string, error) {
	if n, ok := b.names[key]; ok {
		return n, nil
	}
	n, err := b.namer.Build(key)
	if err != nil {
		return "", err
	}
	if b.names == nil {
		b.names = make(map[string]string)
	}
	b.names[key] = n
	return n, nil
}

// reset forgets the names of the last request.
func (b *labelBuilder) reset() {
	if len(b.names) > maxCachedNames {
		b.names = nil
	}
	clear(b.names)
}

// maxCachedNames bounds the sanitized names kept between requests (the
// builder is pooled): a request with 100,000 distinct keys must not pin them.
const maxCachedNames = 1024

// lastWins turns attributes into labels where a later key of the same label
// name replaces an earlier one and an empty value deletes it (a sequence of
// labels.Builder.Set), sorted by name.
func (b *labelBuilder) lastWins(attrs pcommon.Map, include func(string) bool, prefix string) ([]labels.Label, error) {
	pairs := b.pairs[:0]
	var err error
	attrs.Range(func(k string, v pcommon.Value) bool {
		if !include(k) {
			return true
		}
		var n string
		if n, err = b.sanitize(prefix + k); err != nil {
			return false
		}
		pairs = append(pairs, attrPair{name: n, value: v.AsString(), idx: len(pairs)})
		return true
	})
	b.pairs = pairs[:0]
	if err != nil {
		return nil, err
	}
	slices.SortFunc(pairs, func(x, y attrPair) int { return cmp.Or(strings.Compare(x.name, y.name), cmp.Compare(x.idx, y.idx)) })
	var out []labels.Label
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && pairs[j].name == pairs[i].name {
			j++
		}
		if v := pairs[j-1].value; v != "" {
			out = append(out, labels.Label{Name: pairs[i].name, Value: v})
		}
		i = j
	}
	return out, nil
}

// resource returns the context a resource gives its points' series.
func (b *labelBuilder) resource(attrs pcommon.Map) (resourceContext, error) {
	var rc resourceContext
	if v, ok := attrs.Get(attrServiceName); ok {
		rc.job = v.AsString()
		if ns, ok := attrs.Get(attrServiceNamespace); ok {
			rc.job = ns.AsString() + "/" + rc.job
		}
	}
	if v, ok := attrs.Get(attrServiceInstanceID); ok {
		rc.instance = v.AsString()
	}
	var err error
	rc.promoted, err = b.lastWins(attrs, func(k string) bool {
		_, listed := b.promote[k]
		return listed != b.promoteAll
	}, "")
	return rc, err
}

// scope returns the context a scope gives its points' series; nil when scope
// metadata is not promoted or the scope has no name.
func (b *labelBuilder) scope(name, version, schemaURL string, attrs pcommon.Map) (*scopeContext, error) {
	if !b.scopeMetadata || name == "" {
		return nil, nil
	}
	la, err := b.lastWins(attrs, func(string) bool { return true }, scopeAttrLabelPrefix)
	if err != nil {
		return nil, err
	}
	return &scopeContext{attrs: la, name: name, version: version, schemaURL: schemaURL}, nil
}

// series returns the labels of a data point's series named name (the metric
// family name) with attributes attrs.
func (b *labelBuilder) series(attrs pcommon.Map, rc *resourceContext, sc *scopeContext, name string) (labels.Labels, error) {
	return b.build(attrs, reservedAttrs, rc, true, sc, name)
}

// targetInfo returns the labels of the resource's target_info series named
// name and whether the converter would write one: only for a resource with
// attributes besides the identifying ones and with a job or instance.
func (b *labelBuilder) targetInfo(attrs pcommon.Map, rc *resourceContext, name string) (labels.Labels, bool, error) {
	nonIdentifying := attrs.Len()
	for _, a := range identifyingAttrs {
		if _, ok := attrs.Get(a); ok {
			nonIdentifying--
		}
	}
	if nonIdentifying == 0 {
		return labels.EmptyLabels(), false, nil
	}
	ignore := identifyingAttrs
	if b.keepIdentifying {
		ignore = nil
	}
	ls, err := b.build(attrs, ignore, rc, false, nil, name)
	if err != nil {
		return labels.EmptyLabels(), false, err
	}
	return ls, ls.Has(jobLabel) || ls.Has(instanceLabel), nil
}

// build is createAttributes: the rules of labelBuilder over attrs.
func (b *labelBuilder) build(attrs pcommon.Map, ignore []string, rc *resourceContext, promote bool, sc *scopeContext, name string) (labels.Labels, error) {
	// Rule 1: the attribute labels, sorted (base).
	pairs := b.pairs[:0]
	var err error
	attrs.Range(func(k string, v pcommon.Value) bool {
		if slices.Contains(ignore, k) {
			return true
		}
		n := k
		if !b.utf8 {
			if n, err = b.sanitize(k); err != nil {
				return false
			}
		}
		pairs = append(pairs, attrPair{key: k, name: n, value: v.AsString(), idx: len(pairs)})
		return true
	})
	defer func() { b.pairs = pairs[:0] }()
	if err != nil {
		return labels.EmptyLabels(), err
	}
	var base []attrPair
	if b.utf8 {
		// Kept as sent: no name is rewritten, so none collide; empty values
		// are dropped (labels.Builder.Reset does so).
		slices.SortFunc(pairs, func(x, y attrPair) int { return cmp.Or(strings.Compare(x.key, y.key), cmp.Compare(x.idx, y.idx)) })
		base = slices.DeleteFunc(pairs, func(p attrPair) bool { return p.value == "" })
	} else {
		slices.SortFunc(pairs, func(x, y attrPair) int {
			return cmp.Or(strings.Compare(x.name, y.name), strings.Compare(x.key, y.key), cmp.Compare(x.idx, y.idx))
		})
		base = foldCollisions(pairs)
	}

	// Rules 2-5: a few labels over the base.
	o := &b.over
	o.reset(base)
	if promote {
		for _, l := range rc.promoted {
			o.setIfAbsent(l.Name, l.Value)
		}
	}
	if rc.job != "" {
		o.set(jobLabel, rc.job)
	}
	if rc.instance != "" {
		o.set(instanceLabel, rc.instance)
	}
	if sc != nil {
		for _, l := range sc.attrs {
			o.set(l.Name, l.Value)
		}
		o.set(scopeNameLabel, sc.name)
		o.set(scopeVersionLabel, sc.version)
		o.set(scopeSchemaURLLabel, sc.schemaURL)
	}
	o.set(labels.MetricName, name)
	return o.labels(&b.sb), nil
}

// foldCollisions folds pairs sorted by (name, key) into one pair per name,
// joining the values of a name with ";" from its first non-empty value on
// and dropping names without one. It reuses pairs' array.
func foldCollisions(pairs []attrPair) []attrPair {
	out := pairs[:0]
	var sb strings.Builder
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && pairs[j].name == pairs[i].name {
			j++
		}
		p := pairs[i]
		if j-i > 1 {
			first := i
			for first < j && pairs[first].value == "" {
				first++
			}
			sb.Reset()
			for k := first; k < j; k++ {
				if k > first {
					sb.WriteByte(';')
				}
				sb.WriteString(pairs[k].value)
			}
			p.value = sb.String()
		}
		if p.value != "" {
			out = append(out, p)
		}
		i = j
	}
	return out
}

// overlay is a few label operations over a sorted base: the sets win, an
// empty value deletes, and setIfAbsent sets only where neither the base nor
// an earlier operation gave the name a value.
type overlay struct {
	base []attrPair
	ops  map[string]string
	keys []string
}

func (o *overlay) reset(base []attrPair) {
	o.base = base
	if o.ops == nil {
		o.ops = make(map[string]string)
	}
	clear(o.ops)
	o.keys = o.keys[:0]
}

func (o *overlay) set(name, value string) {
	if _, ok := o.ops[name]; !ok {
		o.keys = append(o.keys, name)
	}
	o.ops[name] = value
}

func (o *overlay) setIfAbsent(name, value string) {
	if o.get(name) == "" {
		o.set(name, value)
	}
}

func (o *overlay) get(name string) string {
	if v, ok := o.ops[name]; ok {
		return v
	}
	i, found := slices.BinarySearchFunc(o.base, name, func(p attrPair, n string) int { return strings.Compare(p.name, n) })
	if !found {
		return ""
	}
	return o.base[i].value
}

// labels merges base and the operations into sorted labels.
func (o *overlay) labels(sb *labels.ScratchBuilder) labels.Labels {
	slices.Sort(o.keys)
	sb.Reset()
	k := 0
	for _, p := range o.base {
		for k < len(o.keys) && o.keys[k] < p.name {
			if v := o.ops[o.keys[k]]; v != "" {
				sb.Add(o.keys[k], v)
			}
			k++
		}
		if k < len(o.keys) && o.keys[k] == p.name {
			continue // replaced or deleted; the key is added when the base moves past it
		}
		sb.Add(p.name, p.value)
	}
	for ; k < len(o.keys); k++ {
		if v := o.ops[o.keys[k]]; v != "" {
			sb.Add(o.keys[k], v)
		}
	}
	return sb.Labels()
}

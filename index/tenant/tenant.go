// Package tenant is weft's tenant identity as the index and the stores see
// it: the rules of a tenant ID, the reserved label that carries it in the
// index and the context value that names the tenants a request acts as.
//
// A tenant's streams carry the reserved label LabelName with the tenant ID
// as value; the index intersects every lookup made with a tenant context
// with that label's postings, so isolation is a bitmap intersection inside
// the index, not a filter on the way out. The tenant Anonymous (everything
// when multi-tenancy is off) carries no label at all: single-tenant data
// and its cost are unchanged. The stores add the label on the way in (Add)
// and remove it on the way out (Strip); clients never see it.
//
// It imports nothing of weft but the leaf internal/tenantid.
package tenant

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/regexp"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/internal/tenantid"
)

// LabelName is the reserved label that carries a stream's tenant in the
// index. Ingest never accepts it from a client (it is a reserved "__"
// name) and the label APIs never list it.
const LabelName = "__tenant__"

// Anonymous is the tenant of every request when multi-tenancy is off, as
// in Mimir, Loki and Tempo. Its streams carry no LabelName.
const Anonymous = "anonymous"

// MaxIDLength is the longest tenant ID accepted (dskit's limit, so weft and
// Mimir, Loki and Tempo accept the same IDs).
const MaxIDLength = tenantid.MaxLength

// Separator joins the tenants of a federated (cross-tenant) request:
// "tenantA|tenantB", as in Mimir.
const Separator = "|"

// ErrInvalidID is wrapped by every error about a malformed tenant ID.
var ErrInvalidID = tenantid.ErrInvalid

// ValidateID checks one tenant ID against the rules of Mimir, Loki and Tempo:
// 1 to 150 characters among letters, digits and !-_.*'(), and not "." or
// "..". The rule lives in the leaf internal/tenantid, which weft-agent
// shares.
func ValidateID(id string) error { return tenantid.Validate(id) }

// ParseIDs splits a tenant header value ("a" or "a|b|c") into sorted,
// distinct, valid tenant IDs.
func ParseIDs(header string) ([]string, error) {
	ids := strings.Split(header, Separator)
	for _, id := range ids {
		if err := ValidateID(id); err != nil {
			return nil, err
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Set is the tenants one request acts as: one, or several for a federated
// query. The zero Set is no restriction (multi-tenancy off).
type Set struct {
	ids     []string
	matcher *labels.Matcher
}

// NewSet returns the set of ids (already validated, see ParseIDs).
func NewSet(ids ...string) Set {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return Set{ids: ids, matcher: matcherOf(ids)}
}

// IDs returns the tenants of the set, sorted; nil for the zero Set.
func (s Set) IDs() []string { return s.ids }

// Matcher returns the matcher on LabelName that selects the set's streams;
// nil for the zero Set.
func (s Set) Matcher() *labels.Matcher { return s.matcher }

// Single returns the set's tenant when it has exactly one.
func (s Set) Single() (string, bool) {
	if len(s.ids) != 1 {
		return "", false
	}
	return s.ids[0], true
}

// matcherOf builds the LabelName matcher of ids: Anonymous is the label's
// absence (the empty value).
func matcherOf(ids []string) *labels.Matcher {
	if len(ids) == 0 {
		return nil
	}
	vals := make([]string, len(ids))
	for i, id := range ids {
		if id != Anonymous {
			vals[i] = id
		}
	}
	if len(vals) == 1 {
		return labels.MustNewMatcher(labels.MatchEqual, LabelName, vals[0])
	}
	quoted := make([]string, len(vals))
	for i, v := range vals {
		quoted[i] = regexp.QuoteMeta(v)
	}
	return labels.MustNewMatcher(labels.MatchRegexp, LabelName, strings.Join(quoted, "|"))
}

type ctxKey struct{}

// WithSet returns ctx carrying s; the zero Set removes any restriction.
func WithSet(ctx context.Context, s Set) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// With returns ctx acting as the one tenant id.
func With(ctx context.Context, id string) context.Context { return WithSet(ctx, NewSet(id)) }

// FromContext returns the tenants ctx acts as and whether it is restricted
// to them (false: multi-tenancy off, every stream is visible).
func FromContext(ctx context.Context) (Set, bool) {
	s, ok := ctx.Value(ctxKey{}).(Set)
	return s, ok && s.matcher != nil
}

// Restrict returns ms with the tenant matcher of ctx appended, or ms itself
// when ctx is not restricted.
func Restrict(ctx context.Context, ms []*labels.Matcher) []*labels.Matcher {
	s, ok := FromContext(ctx)
	if !ok {
		return ms
	}
	return append(slices.Clip(ms), s.matcher)
}

// WriteID returns the tenant that data written with ctx belongs to: "" for
// none (Anonymous or multi-tenancy off), an error for a federated set, which
// may read but never write.
func WriteID(ctx context.Context) (string, error) {
	s, ok := FromContext(ctx)
	if !ok {
		return "", nil
	}
	id, one := s.Single()
	if !one {
		return "", fmt.Errorf("%w: a write names %d tenants (%s); it must name one", ErrInvalidID, len(s.ids), strings.Join(s.ids, Separator))
	}
	if id == Anonymous {
		return "", nil
	}
	return id, nil
}

// SortsAfter reports whether the label name sorts after LabelName, where
// the tenant's label goes in a sorted label set. It decides on the first
// byte for every name that does not start with '_' (most names start with
// a lowercase letter): it runs per label on the write path of every tenant
// sample.
func SortsAfter(name string) bool {
	if name != "" && name[0] != '_' {
		return name[0] > '_'
	}
	return name > LabelName
}

// Add returns ls with LabelName set to id; ls itself when id is "". ls must
// not have LabelName (see Reserved). It builds the label set in one pass:
// it is on the write path of every sample of a tenant.
func Add(ls labels.Labels, id string) labels.Labels {
	if id == "" {
		return ls
	}
	b := labels.NewScratchBuilder(ls.Len() + 1)
	added := false
	ls.Range(func(l labels.Label) {
		if !added && SortsAfter(l.Name) {
			b.Add(LabelName, id)
			added = true
		}
		b.Add(l.Name, l.Value)
	})
	if !added {
		b.Add(LabelName, id)
	}
	return b.Labels()
}

// Strip returns ls without LabelName; ls itself when it has none.
func Strip(ls labels.Labels) labels.Labels {
	if !ls.Has(LabelName) {
		return ls
	}
	return labels.NewBuilder(ls).Del(LabelName).Labels()
}

// Of returns the tenant of a stream's labels: Anonymous when it carries no
// LabelName.
func Of(ls labels.Labels) string {
	if id := ls.Get(LabelName); id != "" {
		return id
	}
	return Anonymous
}

// FederatedLabelName names a series' tenant in the answers of a federated
// query (Mimir's name), so that equal label sets of two tenants stay apart.
const FederatedLabelName = "__tenant_id__"

// Output returns a stream's labels as a reader acting with ctx sees them:
// without LabelName, and for a federated read with FederatedLabelName set
// to the stream's tenant.
func Output(ctx context.Context, ls labels.Labels) labels.Labels {
	if s, ok := FromContext(ctx); ok && len(s.ids) > 1 {
		b := labels.NewBuilder(ls)
		b.Del(LabelName)
		b.Set(FederatedLabelName, Of(ls))
		return b.Labels()
	}
	return Strip(ls)
}

// keySep separates a tenant from a name in ScopedKey: 0xff never occurs in
// valid UTF-8, so no metric or label name contains it.
const keySep = "\xff"

// ScopedKey returns name scoped to tenant id (from WriteID; "" for none)
// for stores keyed by name rather than by stream (metric metadata): name
// itself for no tenant, so single-tenant keys are unchanged.
func ScopedKey(id, name string) string {
	if id == "" {
		return name
	}
	return id + keySep + name
}

// SplitKey undoes ScopedKey: the tenant (Anonymous for none) and the name.
func SplitKey(key string) (id, name string) {
	if id, name, ok := strings.Cut(key, keySep); ok {
		return id, name
	}
	return Anonymous, key
}

// Visible reports whether a reader acting with ctx may see the data of
// tenant id (Anonymous for none).
func Visible(ctx context.Context, id string) bool {
	s, ok := FromContext(ctx)
	return !ok || slices.Contains(s.ids, id)
}

package logstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/grafana/regexp"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/logentry"
)

// Delete requests (Loki's log deletion): a request names a stream selector,
// optional line filters and a time range. From the moment AddDeleteRequest
// returns, queries (Select, SelectTimestamps, EachEntry, Stats and
// EachStreamTotal) skip the entries it covers; a request can be cancelled
// until it is processed. After Options.DeleteCancelPeriod the maintenance
// loop processes it: the heads of the matching streams are sealed and every
// chunk holding covered entries is rewritten without them, in one batch per
// stream, and the request is marked processed. Requests are kept (as Loki
// keeps them) under 03 'X' id.

// tagDelete keys delete requests: X id → the request (deleteRecord).
const tagDelete byte = 'X'

// deleteRecordVersion is the first byte of a stored request.
const deleteRecordVersion = 1

// Line filter operators of a DeleteFilter, LogQL's.
const (
	DeleteLineContains    = "|="
	DeleteLineNotContains = "!="
	DeleteLineMatches     = "|~"
	DeleteLineNotMatches  = "!~"
)

// DeleteFilter is one LogQL line filter of a delete request: Op with one or
// more Values joined by "or" (|= "a" or "b" keeps lines containing either;
// != "a" or "b" keeps lines containing neither). Regular expressions are
// Go's (RE2), unanchored, as in LogQL.
type DeleteFilter struct {
	Op     string
	Values []string
	res    []*regexp.Regexp
}

// DeleteRequest is a request to delete the entries of the streams matching
// Matchers, in [Start, End] (unix ns, both inclusive, as in Loki), whose
// lines pass every Filters entry.
type DeleteRequest struct {
	ID        string // assigned by AddDeleteRequest when empty
	Query     string // the request as the client wrote it (listed back)
	Matchers  []*labels.Matcher
	Filters   []DeleteFilter
	Start     int64
	End       int64
	CreatedAt int64 // unix ns, set by AddDeleteRequest
	Processed bool  // the covered entries are reclaimed from storage
}

// Tenant returns the tenant whose streams r deletes: the value of its
// tenant matcher (package tenant), tenant.Anonymous when it has none (a
// request made with multi-tenancy off).
func (r *DeleteRequest) Tenant() string {
	for _, m := range r.Matchers {
		if m.Name == tenant.LabelName && m.Type == labels.MatchEqual && m.Value != "" {
			return m.Value
		}
	}
	return tenant.Anonymous
}

// covers reports whether r deletes entry e of a stream r's matchers match.
func (r *DeleteRequest) covers(e logentry.Entry) bool {
	if e.Timestamp < r.Start || e.Timestamp > r.End {
		return false
	}
	for i := range r.Filters {
		if !r.Filters[i].keeps(e.Line) {
			return false
		}
	}
	return true
}

func (f *DeleteFilter) keeps(line string) bool {
	hit := false
	switch f.Op {
	case DeleteLineContains, DeleteLineNotContains:
		for _, v := range f.Values {
			if strings.Contains(line, v) {
				hit = true
				break
			}
		}
	default:
		for _, re := range f.res {
			if re.MatchString(line) {
				hit = true
				break
			}
		}
	}
	return hit == (f.Op == DeleteLineContains || f.Op == DeleteLineMatches)
}

// compile checks r and compiles its regular expressions.
func (r *DeleteRequest) compile() error {
	if len(r.Matchers) == 0 {
		return fmt.Errorf("%w: no stream selector", ErrInvalidDelete)
	}
	if r.End < r.Start {
		return fmt.Errorf("%w: end before start", ErrInvalidDelete)
	}
	for i := range r.Filters {
		f := &r.Filters[i]
		if len(f.Values) == 0 {
			return fmt.Errorf("%w: line filter %s without a value", ErrInvalidDelete, f.Op)
		}
		f.res = f.res[:0]
		switch f.Op {
		case DeleteLineContains, DeleteLineNotContains:
		case DeleteLineMatches, DeleteLineNotMatches:
			for _, v := range f.Values {
				re, err := regexp.Compile(v)
				if err != nil {
					return fmt.Errorf("%w: line filter %s %q: %w", ErrInvalidDelete, f.Op, v, err)
				}
				f.res = append(f.res, re)
			}
		default:
			return fmt.Errorf("%w: unsupported line filter %q", ErrInvalidDelete, f.Op)
		}
	}
	return nil
}

// matchesStream reports whether r's selector matches ls.
func (r *DeleteRequest) matchesStream(ls labels.Labels) bool {
	for _, m := range r.Matchers {
		if !m.Matches(ls.Get(m.Name)) {
			return false
		}
	}
	return true
}

// deleteSet holds the requests in memory, sorted by creation. Requests are
// never modified in place: a change replaces the pointer, so readers may
// keep what they got.
type deleteSet struct {
	mu   sync.RWMutex
	reqs []*DeleteRequest
}

// active returns the requests that match ls and overlap [start, end) (ns),
// or nil. Processed requests stay active: their entries are gone from the
// chunks, and lines pushed into their range later stay hidden as well.
func (d *deleteSet) active(ls labels.Labels, start, end int64) []*DeleteRequest {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []*DeleteRequest
	for _, r := range d.reqs {
		if r.Start < end && r.End >= start && r.matchesStream(ls) {
			out = append(out, r)
		}
	}
	return out
}

// deleted reports whether any of rs covers e.
func deleted(rs []*DeleteRequest, e logentry.Entry) bool {
	for _, r := range rs {
		if r.covers(e) {
			return true
		}
	}
	return false
}

// AddDeleteRequest validates r, gives it an ID (unless it has one) and its
// creation time, and stores it durably; queries skip what it covers from
// the moment it returns. It returns the stored request. Safe for
// concurrent use.
func (s *Store) AddDeleteRequest(ctx context.Context, r DeleteRequest) (DeleteRequest, error) {
	if s.closed.Load() {
		return DeleteRequest{}, ErrClosed
	}
	r.Filters = slices.Clone(r.Filters)
	if err := r.compile(); err != nil {
		return DeleteRequest{}, err
	}
	if _, err := tenant.WriteID(ctx); err != nil {
		return DeleteRequest{}, fmt.Errorf("%w: %w", ErrInvalidDelete, err)
	}
	// A tenant's request deletes its streams only (package tenant).
	r.Matchers = tenant.Restrict(ctx, slices.Clone(r.Matchers))
	if err := ctx.Err(); err != nil {
		return DeleteRequest{}, err
	}
	r.CreatedAt = s.opts.Now().UnixNano()
	r.Processed = false
	s.deletes.mu.Lock()
	defer s.deletes.mu.Unlock()
	if r.ID == "" {
		r.ID = newDeleteID(s.deletes.reqs)
	} else if slices.ContainsFunc(s.deletes.reqs, func(o *DeleteRequest) bool { return o.ID == r.ID }) {
		return DeleteRequest{}, fmt.Errorf("%w: request %q exists", ErrInvalidDelete, r.ID)
	}
	if err := s.putDeleteRecord(&r); err != nil {
		return DeleteRequest{}, fmt.Errorf("store delete request: %w", err)
	}
	s.deletes.reqs = append(s.deletes.reqs, &r)
	return r, nil
}

// DeleteRequests returns every request, oldest first. Safe for concurrent
// use.
func (s *Store) DeleteRequests() []DeleteRequest {
	s.deletes.mu.RLock()
	defer s.deletes.mu.RUnlock()
	out := make([]DeleteRequest, len(s.deletes.reqs))
	for i, r := range s.deletes.reqs {
		out[i] = *r
	}
	return out
}

// CancelDeleteRequest removes a request that is not processed yet (the
// entries it covered are visible again). It fails with ErrDeleteNotFound or
// ErrDeleteProcessed. Safe for concurrent use.
func (s *Store) CancelDeleteRequest(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.deletes.mu.Lock()
	defer s.deletes.mu.Unlock()
	i := slices.IndexFunc(s.deletes.reqs, func(r *DeleteRequest) bool { return r.ID == id && tenant.Visible(ctx, r.Tenant()) })
	switch {
	case i < 0:
		return ErrDeleteNotFound
	case s.deletes.reqs[i].Processed:
		return ErrDeleteProcessed
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Delete(deleteKey(id), nil); err != nil {
		return fmt.Errorf("cancel delete request: %w", err)
	}
	if err := s.ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("cancel delete request: %w", err)
	}
	s.deletes.reqs = slices.Delete(slices.Clone(s.deletes.reqs), i, i+1)
	return nil
}

// markProcessed records that r's entries are reclaimed.
func (s *Store) markProcessed(id string) error {
	s.deletes.mu.Lock()
	defer s.deletes.mu.Unlock()
	i := slices.IndexFunc(s.deletes.reqs, func(r *DeleteRequest) bool { return r.ID == id })
	if i < 0 {
		return nil // cancelled meanwhile: its entries are gone anyway
	}
	r := *s.deletes.reqs[i]
	r.Processed = true
	if err := s.putDeleteRecord(&r); err != nil {
		return fmt.Errorf("mark delete request processed: %w", err)
	}
	reqs := slices.Clone(s.deletes.reqs)
	reqs[i] = &r
	s.deletes.reqs = reqs
	return nil
}

// loadDeletes reads the stored requests.
func (s *Store) loadDeletes() error {
	lo, hi := tagBound(tagDelete)
	var reqs []*DeleteRequest
	if err := s.scan(lo, hi, func(k, v []byte) error {
		r, err := decodeDeleteRecord(v)
		if err != nil {
			return fmt.Errorf("delete request %q: %w", k[2:], err)
		}
		reqs = append(reqs, r)
		return nil
	}); err != nil {
		return err
	}
	slices.SortStableFunc(reqs, func(a, b *DeleteRequest) int { return cmp.Compare(a.CreatedAt, b.CreatedAt) })
	s.deletes.reqs = reqs
	return nil
}

func deleteKey(id string) []byte {
	return append([]byte{keyspaceLogs, tagDelete}, id...)
}

// newDeleteID returns an ID no request in reqs has: 8 random bytes in hex.
func newDeleteID(reqs []*DeleteRequest) string {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
		id := hex.EncodeToString(b[:])
		if !slices.ContainsFunc(reqs, func(r *DeleteRequest) bool { return r.ID == id }) {
			return id
		}
	}
}

// appendDeleteRecord encodes r (docs/format/logs.md): version, ID, query,
// start, end, created, processed, matchers, filters.
func appendDeleteRecord(dst []byte, r *DeleteRequest) []byte {
	dst = append(dst, deleteRecordVersion)
	dst = appendString(dst, r.ID)
	dst = appendString(dst, r.Query)
	dst = binary.AppendVarint(dst, r.Start)
	dst = binary.AppendVarint(dst, r.End)
	dst = binary.AppendVarint(dst, r.CreatedAt)
	p := byte(0)
	if r.Processed {
		p = 1
	}
	dst = append(dst, p)
	dst = binary.AppendUvarint(dst, uint64(len(r.Matchers)))
	for _, m := range r.Matchers {
		dst = append(dst, byte(m.Type))
		dst = appendString(dst, m.Name)
		dst = appendString(dst, m.Value)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Filters)))
	for _, f := range r.Filters {
		dst = appendString(dst, f.Op)
		dst = binary.AppendUvarint(dst, uint64(len(f.Values)))
		for _, v := range f.Values {
			dst = appendString(dst, v)
		}
	}
	return dst
}

func decodeDeleteRecord(src []byte) (*DeleteRequest, error) {
	if len(src) == 0 || src[0] != deleteRecordVersion {
		return nil, fmt.Errorf("delete record version: %w", ErrCorrupt)
	}
	src = src[1:]
	var (
		r   DeleteRequest
		err error
	)
	if r.ID, src, err = readString(src); err != nil {
		return nil, err
	}
	if r.Query, src, err = readString(src); err != nil {
		return nil, err
	}
	for _, dst := range []*int64{&r.Start, &r.End, &r.CreatedAt} {
		v, n := binary.Varint(src)
		if n <= 0 {
			return nil, fmt.Errorf("delete record time: %w", ErrCorrupt)
		}
		*dst, src = v, src[n:]
	}
	if len(src) == 0 || src[0] > 1 {
		return nil, fmt.Errorf("delete record flags: %w", ErrCorrupt)
	}
	r.Processed, src = src[0] == 1, src[1:]
	n, src, err := readUvarint(src)
	if err != nil || n > uint64(len(src)) {
		return nil, fmt.Errorf("delete record matchers: %w", ErrCorrupt)
	}
	for range n {
		if len(src) == 0 || src[0] > byte(labels.MatchNotRegexp) {
			return nil, fmt.Errorf("delete record matcher type: %w", ErrCorrupt)
		}
		typ := labels.MatchType(src[0])
		var name, value string
		if name, src, err = readString(src[1:]); err != nil {
			return nil, err
		}
		if value, src, err = readString(src); err != nil {
			return nil, err
		}
		m, err := labels.NewMatcher(typ, name, value)
		if err != nil {
			return nil, fmt.Errorf("delete record matcher: %w: %w", ErrCorrupt, err)
		}
		r.Matchers = append(r.Matchers, m)
	}
	if n, src, err = readUvarint(src); err != nil || n > uint64(len(src)) {
		return nil, fmt.Errorf("delete record filters: %w", ErrCorrupt)
	}
	for range n {
		var f DeleteFilter
		if f.Op, src, err = readString(src); err != nil {
			return nil, err
		}
		k, rest, err := readUvarint(src)
		if err != nil || k > uint64(len(rest)) {
			return nil, fmt.Errorf("delete record filter values: %w", ErrCorrupt)
		}
		src = rest
		for range k {
			var v string
			if v, src, err = readString(src); err != nil {
				return nil, err
			}
			f.Values = append(f.Values, v)
		}
		r.Filters = append(r.Filters, f)
	}
	if len(src) != 0 {
		return nil, fmt.Errorf("delete record: %d trailing bytes: %w", len(src), ErrCorrupt)
	}
	if err := r.compile(); err != nil {
		return nil, fmt.Errorf("delete record: %w: %w", ErrCorrupt, err)
	}
	return &r, nil
}

// sameKey reports whether two chunk keys are equal.
func sameKey(a, b []byte) bool { return bytes.Equal(a, b) }

// entryTotals adds to t the chunks, entries and line bytes of sel in the
// range, counted entry by entry (deleted ones skipped).
func (it *iterator) entryTotals(sel selStream, t *Stats) error {
	sub := &iterator{ctx: it.ctx, s: it.s, p: it.p, snap: it.snap, streams: []selStream{sel}}
	for sub.Next() {
		_, e := sub.At()
		t.Entries++
		t.Bytes += uint64(len(e.Line))
	}
	t.Chunks += uint64(sub.chunksRead)
	return sub.Err()
}

// putDeleteRecord writes r's record, synced.
func (s *Store) putDeleteRecord(r *DeleteRequest) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(deleteKey(r.ID), appendDeleteRecord(nil, r), nil); err != nil {
		return err
	}
	return s.ix.Commit(b, pebble.Sync)
}

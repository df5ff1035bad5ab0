package investigate

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// Incidents are kept as log lines in the log store, one JSON object
// (Incident) per line, on streams of the shared index that carry the
// reserved label KindLabel="incident" and the incident's single-valued
// context keys, so that LogQL opens them ({__weft_kind__="incident",
// host="node-6"}) and Incidents groups them. The investigator's own reads
// of logs and of the index skip every stream with a KindLabel: weft's
// records are not the workload's logs.
const (
	// KindLabel is the reserved label of the streams weft writes its own
	// records to.
	KindLabel = index.ReservedPrefix + "kind__"
	// IncidentKind is KindLabel's value on incident streams.
	IncidentKind = "incident"
)

// Incident sources.
const (
	SourceInvestigation = "investigation" // an investigation (the API, or a firing alert that opted in)
	SourceAlert         = "alert"         // a firing alert, recorded with its labels only
)

// IncidentKeys are the context keys incidents are grouped by, in the
// order groups of equal size are listed. host stands for host and node.
var IncidentKeys = []string{"gpu_uuid", "host", "model_version", "dependency", "model", "service", "run_id"}

// Bounds of incident records and answers; each keeps one answer small.
const (
	// maxIncidentCauses is how many of an investigation's causes an
	// incident keeps.
	maxIncidentCauses = 3
	// maxWorkloadValues: a workload key the symptom names (run_id,
	// service, model, model_version) with more values than this in its
	// context says nothing about the incident and is left out.
	maxWorkloadValues = 4
	// maxIncidentsRead bounds the incidents one Incidents call reads; the
	// answer says when it stopped there.
	maxIncidentsRead = 100_000
	// defaultIncidentGroups is how many groups an answer lists unless
	// asked for another number.
	defaultIncidentGroups = 100
	// incidentMergeWindow: the same symptom with the same top cause seen
	// again within this long of its last sighting is one incident, not
	// another: investigations are re-run while a problem lasts (a page
	// reloaded, the alert's investigation_url opened), and an alert that
	// flaps fires again within minutes. As long as an investigation's
	// window (Baseline and Lead, 30 minutes by default).
	incidentMergeWindow = 30 * time.Minute
)

// Incident is one incident as kept: what was seen, where and when, and
// the probable causes when it was investigated.
type Incident struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	// Time is when the incident was seen: the investigated time, or when
	// the alert started firing.
	Time time.Time `json:"time"`
	// Onset is the symptom's onset (investigations that found one).
	Onset time.Time `json:"onset,omitzero"`
	// Symptom is the workload selector and Query the symptom's
	// expression; Class how it behaved.
	Symptom string       `json:"symptom,omitempty"`
	Query   string       `json:"query,omitempty"`
	Class   SymptomClass `json:"class,omitempty"`
	// Alert holds the labels of the alert the incident came from.
	Alert map[string]string `json:"alert,omitempty"`
	// Context holds the values of IncidentKeys: where the top cause is
	// (its GPUs, hosts, version, dependency) and what suffered (the
	// symptom's run, service, model), or the alert's labels.
	Context map[string][]string `json:"context"`
	Causes  []IncidentCause     `json:"causes,omitempty"`
	// Recorded is when weft wrote the record; a later record of the same
	// ID replaces an earlier one.
	Recorded time.Time `json:"recorded"`
}

// IncidentCause is one of an incident's probable causes, as ranked.
type IncidentCause struct {
	Rank    int     `json:"rank"`
	Kind    Kind    `json:"kind"`
	Summary string  `json:"summary"`
	Score   float64 `json:"score"`
	Where   Where   `json:"where"`
}

// AlertIncident is a firing alert to record without an investigation.
type AlertIncident struct {
	Labels map[string]string
	// ActiveAt is when the alert became active (part of its identity),
	// FiredAt when it started firing (the incident's time).
	ActiveAt, FiredAt time.Time
	Query             string
}

// incidentOfReport is the incident an investigation found, or nil when it
// found neither a symptom nor a cause.
func (iv *Investigator) incidentOfReport(s Symptom, sel selector, rep *Report) *Incident {
	if len(rep.Causes) == 0 && !rep.Symptom.Found {
		return nil
	}
	inc := &Incident{
		Source: SourceInvestigation, Time: rep.End, Symptom: rep.Symptom.Selector, Query: rep.Symptom.Query,
		Class: rep.Symptom.Class, Alert: s.Alert, Context: map[string][]string{},
	}
	if rep.Symptom.Found {
		inc.Onset = rep.Symptom.Onset
	}
	for _, c := range rep.Causes[:min(len(rep.Causes), maxIncidentCauses)] {
		inc.Causes = append(inc.Causes, IncidentCause{Rank: c.Rank, Kind: c.Kind, Summary: c.Summary, Score: c.Score, Where: c.Where})
	}
	add := func(k string, vs ...string) {
		for _, v := range vs {
			if v != "" && !slices.Contains(inc.Context[k], v) {
				inc.Context[k] = append(inc.Context[k], v)
			}
		}
	}
	if len(rep.Causes) > 0 {
		w := rep.Causes[0].Where
		add("gpu_uuid", w.GPUUUIDs...)
		add("host", w.Nodes...)
		add("model_version", w.Version)
		add("dependency", w.Dependency)
		add("model", w.Model)
		add("service", w.Service)
		add("run_id", w.RunID)
	}
	// What suffered: the workload the symptom names (a few values at
	// most), and its model and version where it has one. A run's service
	// is its job's name ("trainer"), not a workload: only a symptom on a
	// service places the incident on one.
	named := func(k string) bool {
		return slices.ContainsFunc(sel.ms, func(m *labels.Matcher) bool {
			return iv.incidentKey(m.Name) == k || k == "service" && m.Name == "service_name"
		})
	}
	for _, k := range []string{"run_id", "service", "model", "model_version"} {
		vs := rep.Symptom.Context[k]
		if len(vs) == 0 || len(vs) > maxWorkloadValues || !named(k) && (len(vs) > 1 || k == "service") {
			continue
		}
		add(k, vs...)
	}
	inc.ID = incidentID(inc.Symptom, strconv.FormatInt(cmp.Or(inc.Onset, inc.Time).UnixMilli(), 10))
	return inc
}

// incidentID is a short stable hash of parts: investigating the same
// symptom again, or re-sending an alert, names the same incident.
func incidentID(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// RecordAlert keeps a firing alert as an incident with its labels as its
// context (aliases resolved: UUID → gpu_uuid, Hostname and node → host).
// It returns the incident's ID. Without Options.Incidents it keeps nothing
// and returns "".
func (iv *Investigator) RecordAlert(ctx context.Context, a AlertIncident) (string, error) {
	if iv.opts.Incidents == nil {
		return "", nil
	}
	if len(a.Labels) == 0 {
		return "", invalid("alert without labels")
	}
	at := cmp.Or(a.FiredAt, a.ActiveAt, iv.opts.Now()).UTC()
	inc := &Incident{Source: SourceAlert, Time: at, Query: a.Query, Alert: a.Labels, Context: map[string][]string{}}
	for _, k := range slices.Sorted(maps.Keys(a.Labels)) {
		c := iv.incidentKey(k)
		if v := a.Labels[k]; v != "" && slices.Contains(IncidentKeys, c) && !slices.Contains(inc.Context[c], v) {
			inc.Context[c] = append(inc.Context[c], v)
		}
	}
	inc.ID = incidentID(labels.FromMap(a.Labels).String(), strconv.FormatInt(cmp.Or(a.ActiveAt, at).UnixMilli(), 10))
	if err := iv.record(ctx, inc); err != nil {
		return "", err
	}
	return inc.ID, nil
}

// incidentKey is the incident key a label or selector name stands for.
func (iv *Investigator) incidentKey(name string) string {
	c, ok := iv.opts.Workload.Canonical(name)
	if !ok {
		c = name
	}
	if c == "node" {
		c = "host"
	}
	return c
}

// record writes inc to Options.Incidents.
func (iv *Investigator) record(ctx context.Context, inc *Incident) error {
	inc.Recorded = iv.opts.Now().UTC()
	line, err := json.Marshal(inc)
	if err != nil {
		return fmt.Errorf("encode incident: %w", err)
	}
	b := labels.NewScratchBuilder(len(IncidentKeys) + 3)
	b.Add(KindLabel, IncidentKind)
	b.Add("source", inc.Source)
	if n := inc.Alert["alertname"]; n != "" {
		b.Add("alertname", n)
	}
	for _, k := range IncidentKeys {
		if vs := inc.Context[k]; len(vs) == 1 {
			b.Add(k, vs[0])
		}
	}
	b.Sort()
	err = iv.opts.Incidents.Push(ctx, []logstore.PushStream{{Labels: b.Labels(), Entries: []logentry.Entry{{Timestamp: inc.Time.UnixNano(), Line: string(line)}}}})
	if err != nil {
		return fmt.Errorf("record incident: %w", err)
	}
	return nil
}

// IncidentsRequest asks for the incidents in [Start, End] that share a
// value of By (one of IncidentKeys, or node for host; empty: every key),
// among those matching any of Match (selectors over the incidents' context
// keys, source and alert labels; none: all).
type IncidentsRequest struct {
	By         string
	Start, End time.Time
	Match      []string
	// MinCount is the least number of incidents a group holds; default 2
	// (a value shared by two incidents or more).
	MinCount int
	// Limit bounds the groups answered; default 100.
	Limit int
}

// IncidentGroups is the answer of Incidents: groups of incidents that
// share a value, the largest first.
type IncidentGroups struct {
	By    string    `json:"by,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Incidents is how many incidents matched; Truncated that there were
	// more than could be read.
	Incidents int             `json:"incidents"`
	Truncated bool            `json:"truncated,omitempty"`
	Groups    []IncidentGroup `json:"groups"`
}

// IncidentGroup is the incidents that share one value of one key.
type IncidentGroup struct {
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	Count     int       `json:"count"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// Incidents are the IDs, oldest first; Runs the distinct runs that
	// suffered, Causes the distinct top causes with how often each was
	// the top one.
	Incidents []string     `json:"incidents"`
	Runs      []string     `json:"runs,omitempty"`
	Causes    []CauseCount `json:"causes,omitempty"`
}

// CauseCount is one top cause of a group and how many of its incidents
// it topped.
type CauseCount struct {
	Kind    Kind   `json:"kind"`
	Summary string `json:"summary"`
	Count   int    `json:"count"`
}

// Incidents groups the kept incidents of r's window by the values they
// share, most incidents first, then most distinct runs, then the most
// recent: the third failure of one GPU across different runs is the top
// group.
func (iv *Investigator) Incidents(ctx context.Context, r IncidentsRequest) (*IncidentGroups, error) {
	if r.End.Before(r.Start) {
		return nil, invalid("end before start")
	}
	keys := IncidentKeys
	if r.By != "" {
		k := iv.incidentKey(r.By)
		if !slices.Contains(IncidentKeys, k) {
			return nil, invalid("by %q: one of %v (or node)", r.By, IncidentKeys)
		}
		keys = []string{k}
	}
	var sels [][]*labels.Matcher
	for _, m := range r.Match {
		ms, err := query.NewParser().ParseMetricSelector(m)
		if err != nil {
			return nil, invalid("match[] %q: %v", m, err)
		}
		sels = append(sels, ms)
	}
	minCount := cmp.Or(max(r.MinCount, 0), 2)
	limit := cmp.Or(max(r.Limit, 0), defaultIncidentGroups)
	ans := &IncidentGroups{By: r.By, Start: r.Start.UTC(), End: r.End.UTC(), Groups: []IncidentGroup{}}
	if iv.rawLogs == nil {
		return nil, fmt.Errorf("incidents: %w: no log store", ErrUnavailable)
	}
	incs, truncated, err := iv.readIncidents(ctx, r.Start, r.End)
	if err != nil {
		return nil, err
	}
	ans.Truncated = truncated
	type group struct {
		IncidentGroup
		runs   map[string]struct{}
		causes map[[2]string]int
	}
	groups := map[[2]string]*group{}
	for _, inc := range incs {
		if len(sels) > 0 && !slices.ContainsFunc(sels, func(ms []*labels.Matcher) bool { return iv.incidentMatches(inc, ms) }) {
			continue
		}
		ans.Incidents++
		for _, k := range keys {
			for _, v := range inc.Context[k] {
				gk := [2]string{k, v}
				g := groups[gk]
				if g == nil {
					g = &group{IncidentGroup: IncidentGroup{Key: k, Value: v, FirstSeen: inc.Time}, runs: map[string]struct{}{}, causes: map[[2]string]int{}}
					groups[gk] = g
				}
				g.Count++
				g.Incidents = append(g.Incidents, inc.ID)
				g.LastSeen = inc.Time
				for _, run := range inc.Context["run_id"] {
					g.runs[run] = struct{}{}
				}
				if len(inc.Causes) > 0 {
					g.causes[[2]string{string(inc.Causes[0].Kind), inc.Causes[0].Summary}]++
				}
			}
		}
	}
	for _, g := range groups {
		if g.Count < minCount {
			continue
		}
		g.Runs = sortedKeys(g.runs)
		for kc, n := range g.causes {
			g.Causes = append(g.Causes, CauseCount{Kind: Kind(kc[0]), Summary: kc[1], Count: n})
		}
		slices.SortFunc(g.Causes, func(a, b CauseCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Summary, b.Summary))
		})
		ans.Groups = append(ans.Groups, g.IncidentGroup)
	}
	slices.SortFunc(ans.Groups, func(a, b IncidentGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(len(b.Runs), len(a.Runs)), b.LastSeen.Compare(a.LastSeen),
			cmp.Compare(slices.Index(IncidentKeys, a.Key), slices.Index(IncidentKeys, b.Key)), naturalCompare(a.Value, b.Value))
	})
	ans.Groups = ans.Groups[:min(len(ans.Groups), limit)]
	return ans, nil
}

// readIncidents reads the incidents of [start, end], each ID once (its
// latest record), oldest first.
func (iv *Investigator) readIncidents(ctx context.Context, start, end time.Time) ([]*Incident, bool, error) {
	it, err := iv.rawLogs.Select(ctx, logentry.SelectParams{
		Start: start.UnixNano(), End: end.UnixNano() + 1,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, KindLabel, IncidentKind)},
	})
	if err != nil {
		return nil, false, fmt.Errorf("read incidents: %w", err)
	}
	defer it.Close()
	byID := map[string]*Incident{}
	truncated := false
	for n := 0; it.Next(); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
		}
		if n >= maxIncidentsRead {
			truncated = true
			break
		}
		_, e := it.At()
		inc := &Incident{}
		if err := json.Unmarshal([]byte(e.Line), inc); err != nil || inc.ID == "" {
			iv.opts.Logger.Warn("skipping an undecodable incident record", "err", err)
			continue
		}
		if old := byID[inc.ID]; old == nil || old.Recorded.Before(inc.Recorded) {
			byID[inc.ID] = inc
		}
	}
	if err := it.Err(); err != nil {
		return nil, false, fmt.Errorf("read incidents: %w", err)
	}
	all := slices.Collect(maps.Values(byID))
	slices.SortFunc(all, func(a, b *Incident) int { return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID)) })
	// The same symptom with the same top cause, seen again within
	// incidentMergeWindow of its last sighting (a page reloaded, an alert
	// flapping), is the same incident.
	last := map[string]time.Time{}
	out := all[:0]
	for _, inc := range all {
		sig := inc.signature()
		if t, ok := last[sig]; ok && inc.Time.Sub(t) <= incidentMergeWindow {
			last[sig] = inc.Time
			continue
		}
		last[sig] = inc.Time
		out = append(out, inc)
	}
	return out, truncated, nil
}

// signature is what makes two records one incident when they are close
// in time: the symptom and its top cause, or the alert's labels.
func (inc *Incident) signature() string {
	if inc.Source == SourceAlert {
		return inc.Source + "\x00" + labels.FromMap(inc.Alert).String()
	}
	sig := inc.Source + "\x00" + inc.Symptom
	if len(inc.Causes) > 0 {
		// Kind and place, not the summary: it names the symptom's class,
		// which a later look may read differently (slowdown, then stall).
		c := inc.Causes[0]
		sig += fmt.Sprintf("\x00%s\x00%q\x00%q\x00%s\x00%s\x00%s", c.Kind, c.Where.Nodes, c.Where.GPUUUIDs, c.Where.Dependency, c.Where.Version, c.Where.Service)
	}
	return sig
}

// incidentMatches reports whether every matcher of ms matches one of
// inc's values of its name: a context key (aliases resolved), source, or
// an alert label. A name inc has no value of matches as the empty value.
func (iv *Investigator) incidentMatches(inc *Incident, ms []*labels.Matcher) bool {
	for _, m := range ms {
		var vs []string
		switch k := iv.incidentKey(m.Name); {
		case m.Name == KindLabel:
			continue
		case m.Name == "source":
			vs = []string{inc.Source}
		case slices.Contains(IncidentKeys, k):
			vs = inc.Context[k]
		default:
			if v := inc.Alert[m.Name]; v != "" {
				vs = []string{v}
			}
		}
		if len(vs) == 0 {
			if !m.Matches("") {
				return false
			}
			continue
		}
		if !slices.ContainsFunc(vs, m.Matches) {
			return false
		}
	}
	return true
}

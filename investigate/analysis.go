package investigate

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
)

// coLocated is the evidence family of a workload that started beside the
// symptom's.
const coLocated = "co-located workload"

// maxCauses bounds the causes a report lists.
const maxCauses = 20

// analysis is one investigation's state: the candidates found so far.
type analysis struct {
	iv    *Investigator
	g     grid
	from  int // first grid index of the cause window
	onset time.Time
	class SymptomClass
	wc    *WorkloadContext
	cands map[string]*candidate
	// depHosts maps the host of a dependency ("storage-01" of
	// "storage-01:/datasets") to the dependency.
	depHosts map[string]string
	versions map[string]*candidate // new model versions by value
}

// candidate is one probable cause being assembled: a kind at one place.
type candidate struct {
	kind      Kind
	lvl       level
	shared    bool
	onset     int // grid index
	z         float64
	m         float64 // magnitude score, log10(1 + |z|) or a log count's
	peer      float64
	families  map[string]struct{}
	primary   bool // some evidence is not a support family's
	nodes     map[string]struct{}
	gpus      map[string]struct{}
	gpuIdx    map[string]struct{}
	ranks     map[string]struct{}
	pods      map[string]struct{}
	runID     string
	team      string
	service   string
	model     string
	version   string
	prev      string
	dep       string
	evidence  []Evidence
	evidenceZ []float64
}

func (a *analysis) cand(kind Kind, lvl level, key string) *candidate {
	k := string(kind) + "\x00" + key
	c := a.cands[k]
	if c == nil {
		c = &candidate{kind: kind, lvl: lvl, onset: math.MaxInt, families: map[string]struct{}{}, nodes: map[string]struct{}{},
			gpus: map[string]struct{}{}, gpuIdx: map[string]struct{}{}, ranks: map[string]struct{}{}, pods: map[string]struct{}{}}
		a.cands[k] = c
	}
	return c
}

// add records one piece of evidence on c.
func (c *candidate) add(ls labels.Labels, family string, onset int, z, m, peer float64, ev Evidence) {
	c.addSupport(ls, family, onset, z, m, peer, ev)
	c.primary = true
}

// addSupport records evidence that corroborates c without making it.
func (c *candidate) addSupport(ls labels.Labels, family string, onset int, z, m, peer float64, ev Evidence) {
	c.families[family] = struct{}{}
	c.onset = min(c.onset, onset)
	c.z = max(c.z, math.Abs(z))
	c.m = max(c.m, m)
	c.peer = max(c.peer, peer)
	if n := cmp.Or(ls.Get("node"), ls.Get("host")); n != "" {
		c.nodes[n] = struct{}{}
	}
	if c.lvl <= levelNode && (c.kind != KindNoisyNeighbour || family == coLocated) {
		if g := ls.Get("gpu_uuid"); g != "" {
			c.gpus[g] = struct{}{}
			if i := ls.Get("gpu"); i != "" {
				c.gpuIdx[i] = struct{}{}
			}
		}
		if r := ls.Get("rank"); r != "" && c.kind != KindNoisyNeighbour {
			c.ranks[r] = struct{}{}
		}
	}
	if p := ls.Get("pod"); p != "" && c.lvl != levelDependency {
		c.pods[p] = struct{}{}
	}
	c.evidence = append(c.evidence, ev)
	c.evidenceZ = append(c.evidenceZ, m*(1+peer))
}

func (a *analysis) time(i int) time.Time { return time.UnixMilli(a.g.at(i)).UTC() }

func inSet(vs []string, v string) bool { return slices.Contains(vs, v) }

// series finds the changed series and files the catalog's as candidates.
func (a *analysis) series(ss []*series) {
	type result struct {
		s       *series
		c       change
		counter bool
	}
	baseVersions := map[string]struct{}{}
	var est []result
	byName := map[string][]int{}
	a.depHosts = map[string]string{}
	a.versions = map[string]*candidate{}
	for _, s := range ss {
		if f, ok := familyOf(s.ls); ok && f.dep != "" {
			if d := s.ls.Get(f.dep); d != "" {
				if h, _, ok := strings.Cut(d, ":"); ok && h != "" {
					a.depHosts[h] = d
				}
			}
		}
		if len(finite(s.v[:a.from])) < 4 {
			continue
		}
		if v := s.ls.Get("model_version"); v != "" {
			baseVersions[v] = struct{}{}
		}
		r := result{s: s, counter: isCounter(s, a.from)}
		v := s.v
		if r.counter {
			v = rates(s.v, a.g.Step)
		}
		minSigma := 1e-9
		if f, ok := familyOf(s.ls); ok && f.events && !r.counter {
			minSigma = 1 / f.severity
			if b := finite(s.v[:a.from]); b[len(b)-1] > b[0] {
				// Events already counting in the baseline: a change is a
				// change of their rate, not the climb going on.
				r.counter = true
				v = rates(s.v, a.g.Step)
				minSigma = 1 / f.severity / (float64(a.g.Step) / 1000)
			}
		}
		r.c = detect(v, a.from, minSigma)
		byName[s.ls.Get(labels.MetricName)] = append(byName[s.ls.Get(labels.MetricName)], len(est))
		est = append(est, r)
	}

	// The level each GPU's counters had before the window, under any
	// labels: a series that appears when a GPU changes workload carries
	// the GPU's lifetime count.
	prevLevel := map[string]float64{}
	for _, s := range ss {
		g := s.ls.Get("gpu_uuid")
		if g == "" {
			continue
		}
		if b := finite(s.v[:a.from]); len(b) > 0 {
			k := s.ls.Get(labels.MetricName) + "\x00" + g
			prevLevel[k] = max(prevLevel[k], b[len(b)-1])
		}
	}

	// Appeared series: events, co-located workloads, new versions.
	runs, teams := a.wc.Context["run_id"], a.wc.Context["team"]
	nodes := a.wc.Context["node"]
	for _, s := range ss {
		if len(finite(s.v[:a.from])) >= 4 || len(finite(s.v[a.from:])) == 0 {
			continue
		}
		first := a.from
		for i := a.from; i < len(s.v); i++ {
			if !math.IsNaN(s.v[i]) {
				first = i
				break
			}
		}
		name := s.ls.Get(labels.MetricName)
		if f, ok := familyOf(s.ls); ok && f.events && f.dir > 0 && s.last-prevLevel[name+"\x00"+s.ls.Get("gpu_uuid")] > 0 {
			z := min(zCap, (s.last-prevLevel[name+"\x00"+s.ls.Get("gpu_uuid")])*f.severity)
			c := a.cand(f.kind, f.level, a.entity(f, s.ls))
			c.add(s.ls, f.what, first, z, math.Log10(1+z), z, Evidence{Signal: "metrics", What: f.what + " appeared",
				Query: selectorOf(name, s.ls, entityKeys(f, s.ls)...), Onset: a.time(first), Value: s.last, Z: z})
		}
		node := cmp.Or(s.ls.Get("node"), s.ls.Get("host"))
		run, team := s.ls.Get("run_id"), s.ls.Get("team")
		if node != "" && inSet(nodes, node) && (run != "" && !inSet(runs, run) || team != "" && !inSet(teams, team)) {
			c := a.cand(KindNoisyNeighbour, levelNode, node)
			c.runID, c.team = cmp.Or(c.runID, run), cmp.Or(c.team, team)
			if g := s.ls.Get("gpu_uuid"); g != "" {
				c.gpus[g] = struct{}{}
				if i := s.ls.Get("gpu"); i != "" {
					c.gpuIdx[i] = struct{}{}
				}
			}
			if len(c.evidence) < 4*maxEvidencePerCause {
				c.add(s.ls, coLocated, first, 100, 2, 4, Evidence{Signal: "metrics",
					What:  fmt.Sprintf("workload %s of team %s started on %s", cmp.Or(run, s.ls.Get("pod")), team, node),
					Query: selectorOf(name, s.ls, "run_id", "team", "host", "node"), Onset: a.time(first), Value: s.last})
			}
		}
		if v := s.ls.Get("model_version"); v != "" && len(baseVersions) > 0 {
			if _, old := baseVersions[v]; !old {
				c := a.cand(KindModelVersion, levelWorkload, v)
				a.versions[v] = c
				c.version, c.prev = v, strings.Join(sortedKeys(baseVersions), ",")
				c.service = cmp.Or(c.service, s.ls.Get("service"), s.ls.Get("service_name"))
				c.model = cmp.Or(c.model, s.ls.Get("model"))
				if len(c.evidence) < maxEvidencePerCause {
					c.add(s.ls, "new version", first, 100, 2, 4, Evidence{Signal: "metrics", What: "series of model_version " + v + " appeared",
						Query: selectorOf(name, s.ls, "model_version", "pod"), Onset: a.time(first), Value: s.last})
				}
			}
		}
	}

	// Established series: the catalog's changes, weighed against peers.
	for name, idx := range byName {
		zs := make([]float64, 0, len(idx))
		var onsets []float64
		for _, i := range idx {
			zs = append(zs, est[i].c.z)
			if est[i].c.onset >= 0 {
				onsets = append(onsets, float64(est[i].c.onset))
			}
		}
		med := median(zs)
		spread := max(1.4826*mad(zs, med), 1)
		medOnset := median(onsets)
		onsetSpread := max(1.4826*mad(onsets, medOnset), 1)
		for _, i := range idx {
			r := est[i]
			f, ok := familyOf(r.s.ls)
			if !ok || r.c.onset < a.from || float64(f.dir)*r.c.z <= 0 {
				continue
			}
			peer := math.Abs(r.c.z-med) / spread
			if len(onsets) >= 3 {
				peer = max(peer, min(4, (medOnset-float64(r.c.onset))/onsetSpread))
			}
			q := selectorOf(name, r.s.ls, entityKeys(f, r.s.ls)...)
			if r.counter {
				q = "rate(" + q + "[1m])"
			}
			c := a.cand(f.kind, f.level, a.entity(f, r.s.ls))
			if f.level == levelDependency {
				c.shared, c.dep = true, r.s.ls.Get(f.dep)
			}
			if len(c.evidence) >= 4*maxEvidencePerCause {
				c.families[f.what] = struct{}{}
				continue
			}
			ev := Evidence{Signal: "metrics", What: f.what, Query: q, Onset: a.time(r.c.onset), Baseline: r.c.base, Value: r.c.post, Z: r.c.z}
			if f.support {
				c.addSupport(r.s.ls, f.what, r.c.onset, r.c.z, math.Log10(1+math.Abs(r.c.z)), peer, ev)
			} else {
				c.add(r.s.ls, f.what, r.c.onset, r.c.z, math.Log10(1+math.Abs(r.c.z)), peer, ev)
			}
		}
	}
}

func (c *candidate) hasFamily(f string) bool { _, ok := c.families[f]; return ok }

// entity is the candidate key of a series of family f.
func (a *analysis) entity(f family, ls labels.Labels) string {
	switch f.level {
	case levelGPU:
		return cmp.Or(ls.Get("gpu_uuid"), cmp.Or(ls.Get("node"), ls.Get("host"))+"/"+ls.Get("gpu"))
	case levelDependency:
		return ls.Get(f.dep)
	}
	return cmp.Or(ls.Get("node"), ls.Get("host"))
}

func entityKeys(f family, ls labels.Labels) []string {
	switch f.level {
	case levelGPU:
		return []string{"gpu_uuid", "reason", "xid"}
	case levelDependency:
		return []string{f.dep, "node"}
	}
	if ls.Get("host") != "" {
		return []string{"host", "gpu"}
	}
	return []string{"node", "gpu"}
}

// logs reads the scope's log lines and files new patterns as candidates:
// the lines of the workload, of its nodes and namespaces, and of the
// hosts of its dependencies.
func (a *analysis) logs(ctx context.Context, sel selector, start, from, at time.Time, sc *Scope) error {
	if a.iv.opts.Logs == nil {
		return nil
	}
	var alts [][]*labels.Matcher
	for _, alt := range sel.alts {
		if selectsStreams(alt) {
			alts = append(alts, alt)
		}
	}
	if ns := a.wc.Context["node"]; len(ns) > 0 {
		alts = append(alts, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "node", regexOf(ns))},
			[]*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "host", regexOf(ns))})
	}
	if ns := a.wc.Context["namespace"]; len(ns) > 0 {
		alts = append(alts, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "namespace", regexOf(ns))})
	}
	if len(a.depHosts) > 0 {
		hosts := make([]string, 0, len(a.depHosts))
		for h := range a.depHosts {
			hosts = append(hosts, h)
		}
		slices.Sort(hosts)
		alts = append(alts, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "host", regexOf(hosts))})
	}
	type streamPatterns struct {
		ls     labels.Labels
		job    string
		counts map[string][2]int // pattern → lines in the baseline, in the window
		sample map[string]string
		first  map[string]int64 // pattern → first line in the window (ns)
	}
	streams := map[uint64]*streamPatterns{}
	fromNs := from.UnixNano()
	for _, alt := range alts {
		it, err := a.iv.opts.Logs.Select(ctx, logentry.SelectParams{Start: start.UnixNano(), End: at.UnixNano() + 1, Matchers: alt})
		if err != nil {
			return fmt.Errorf("log lines: %w", err)
		}
		var cur *streamPatterns
		var curHash uint64
		done := map[uint64]bool{}
		for it.Next() {
			ls, e := it.At()
			h := ls.Hash()
			if cur == nil || h != curHash {
				curHash = h
				if sp, ok := streams[h]; ok && !done[h] {
					cur = nil // read by an earlier selector
					_ = sp
					continue
				}
				if _, ok := streams[h]; ok {
					cur = streams[h]
				} else {
					cur = &streamPatterns{ls: ls.Copy(), job: cmp.Or(ls.Get("job"), ls.Get("service_name"), ls.Get("source")), counts: map[string][2]int{}, sample: map[string]string{}, first: map[string]int64{}}
					streams[h] = cur
					done[h] = true
				}
			}
			if cur == nil {
				continue
			}
			p := pattern(e.Line)
			n := cur.counts[p]
			if e.Timestamp < fromNs {
				n[0]++
			} else {
				n[1]++
				if _, ok := cur.sample[p]; !ok {
					cur.sample[p] = e.Line
					cur.first[p] = e.Timestamp
				}
			}
			cur.counts[p] = n
			sc.Lines++
		}
		err = it.Err()
		_ = it.Close()
		if err != nil {
			return fmt.Errorf("log lines: %w", err)
		}
	}
	sc.Streams = len(streams)

	// How many streams of each job show each new pattern: a pattern on
	// every stream of its job is shared, one on a few stands out.
	jobStreams := map[string]int{}
	newOn := map[string]int{}
	isNew := func(n [2]int) bool {
		base := float64(n[0]) / max(1, float64(a.from))
		win := float64(n[1]) / max(1, float64(a.g.N-a.from))
		return n[1] > 0 && (n[0] == 0 || n[1] >= 3 && win >= 5*base)
	}
	for _, sp := range streams {
		jobStreams[sp.job]++
		for p, n := range sp.counts {
			if isNew(n) {
				newOn[sp.job+"\x00"+p]++
			}
		}
	}
	for _, sp := range streams {
		for p, n := range sp.counts {
			if !isNew(n) {
				continue
			}
			peer := 0.0
			if k := newOn[sp.job+"\x00"+p]; jobStreams[sp.job] >= 2 && k*2 < jobStreams[sp.job] {
				peer = 4
			}
			line := sp.sample[p]
			m := min(3, math.Log10(1+10*float64(n[1])))
			ev := Evidence{Signal: "logs", What: "new log pattern: " + truncate(p, 160), Query: logQuery(sp.ls, line), Value: float64(n[1]), Baseline: float64(n[0])}
			onset := min(a.g.N-1, max(a.from, int((sp.first[p]/1e6-a.g.Start+a.g.Step-1)/a.g.Step)))
			ev.Onset = time.Unix(0, sp.first[p]).UTC()
			node := cmp.Or(sp.ls.Get("node"), sp.ls.Get("host"))
			lower := strings.ToLower(line)
			var c *candidate
			switch {
			case a.depHosts[sp.ls.Get("host")] != "":
				d := a.depHosts[sp.ls.Get("host")]
				c = a.cand(KindStorage, levelDependency, d)
				c.shared, c.dep = true, d
			case a.versionIn(line) != nil:
				c = a.versionIn(line)
			case strings.Contains(lower, "xid"):
				c = a.cand(KindGPUMemory, levelGPU, cmp.Or(sp.ls.Get("gpu_uuid"), "node:"+node))
			case strings.Contains(lower, "nvlink"):
				c = a.cand(KindNVLink, levelNode, node)
			case strings.Contains(lower, "thermal"):
				c = a.cand(KindThermal, levelGPU, cmp.Or(sp.ls.Get("gpu_uuid"), "node:"+node))
			default:
				c = a.cand(KindLogPattern, levelWorkload, sp.job+"\x00"+p)
			}
			if len(c.evidence) < 4*maxEvidencePerCause {
				c.add(sp.ls, "log: "+p, onset, 0, m, peer, ev)
			}
		}
	}
	return nil
}

// versionIn is the new-version candidate whose version the line names.
func (a *analysis) versionIn(line string) *candidate {
	for v, c := range a.versions {
		if strings.Contains(line, v) {
			return c
		}
	}
	return nil
}

// pattern masks the variable parts of a log line: every token with a
// digit.
func pattern(line string) string {
	fs := strings.Fields(line)
	for i, f := range fs {
		if strings.ContainsAny(f, "0123456789") {
			fs[i] = "<_>"
		}
	}
	return strings.Join(fs, " ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// logQuery is the LogQL query of a pattern's lines in a stream: its
// identifying labels and its longest literal word.
func logQuery(ls labels.Labels, line string) string {
	var parts []string
	for _, k := range []string{"job", "node", "host", "gpu_uuid", "rank", "service_name", "namespace"} {
		if v := ls.Get(k); v != "" {
			parts = append(parts, k+"="+strconv.Quote(v))
		}
	}
	word := ""
	for _, f := range strings.Fields(line) {
		f = strings.Trim(f, `"',:;()[]{}`)
		if len(f) > len(word) && !strings.ContainsAny(f, "0123456789\"\\`") {
			word = f
		}
	}
	q := "{" + strings.Join(parts, ", ") + "}"
	if word != "" {
		q += " |= " + strconv.Quote(word)
	}
	return q
}

// rank merges, scores and orders the candidates.
func (a *analysis) rank() []Cause {
	// A log line that names only a node joins the same kind's candidate
	// of a GPU on that node.
	for k, c := range a.cands {
		if c.lvl != levelGPU || len(c.gpus) > 0 {
			continue
		}
		var best *candidate
		for _, o := range a.cands {
			if o != c && o.kind == c.kind && len(o.gpus) > 0 && overlaps(o.nodes, c.nodes) && (best == nil || o.m*(1+o.peer) > best.m*(1+best.peer)) {
				best = o
			}
		}
		if best != nil {
			for f := range c.families {
				best.families[f] = struct{}{}
			}
			best.evidence = append(best.evidence, c.evidence...)
			best.evidenceZ = append(best.evidenceZ, c.evidenceZ...)
			best.m, best.peer, best.onset = max(best.m, c.m), max(best.peer, c.peer), min(best.onset, c.onset)
			delete(a.cands, k)
		}
	}
	stepS := float64(a.g.Step) / 1000
	var out []Cause
	for _, c := range a.cands {
		if !c.primary {
			continue
		}
		g := 0.1 + 0.9*min(c.peer, 4)/4
		if c.shared {
			g = 1
		}
		on := a.time(min(c.onset, a.g.N-1))
		d := on.Sub(a.onset).Seconds()
		// Causes precede their symptoms, closely: a change long before
		// the symptom, or after it, is less likely its cause.
		h := 1.0
		switch {
		case d > stepS:
			h = math.Exp(-(d - stepS) / 120)
		case d < -300:
			h = math.Exp((d + 300) / 300)
		}
		breadth := 1 + 0.1*float64(min(len(c.families)-1, 5))
		score := c.m * g * h * relationFactor(a.class, c.kind) * breadth
		if c.kind == KindLogPattern {
			score *= 0.5 // an unknown line is a lead, not a cause
		}
		cs := Cause{Kind: c.kind, Where: c.where(), Onset: on, OnsetOffset: d, Magnitude: round(c.z), PeerDeviation: round(c.peer), Shared: c.shared, Score: round(score)}
		cs.Summary = c.summary(a.class)
		order := make([]int, len(c.evidence))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(c.evidenceZ[y], c.evidenceZ[x]) })
		for _, i := range order[:min(len(order), maxEvidencePerCause)] {
			cs.Evidence = append(cs.Evidence, c.evidence[i])
		}
		out = append(out, cs)
	}
	slices.SortFunc(out, cmpCause)
	out = out[:min(len(out), maxCauses)]
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}

func overlaps(a, b map[string]struct{}) bool {
	for k := range b {
		if _, ok := a[k]; ok {
			return true
		}
	}
	return false
}

func round(f float64) float64 { return math.Round(f*1000) / 1000 }

func (c *candidate) where() Where {
	w := Where{Nodes: sortedKeys(c.nodes), GPUUUIDs: sortedKeys(c.gpus), Ranks: sortedKeys(c.ranks), Pods: sortedKeys(c.pods),
		RunID: c.runID, Team: c.team, Service: c.service, Model: c.model, Version: c.version, PreviousVersion: c.prev, Dependency: c.dep}
	if c.lvl == levelWorkload || c.lvl == levelDependency {
		w.GPUUUIDs, w.Ranks = nil, nil
	}
	if h, _, ok := strings.Cut(c.dep, ":"); ok {
		// The nodes of a dependency are its consumers, not its server.
		w.Nodes = slices.DeleteFunc(w.Nodes, func(n string) bool { return n == h })
	}
	return w
}

// summary is the cause in one sentence, as an alert annotation reads it.
func (c *candidate) summary(class SymptomClass) string {
	var at string
	switch {
	case c.dep != "":
		at = c.dep
	case c.version != "":
		at = cmp.Or(c.service, c.model) + " " + c.version
		if c.prev != "" {
			at += " (was " + c.prev + ")"
		}
	default:
		at = strings.Join(sortedKeys(c.nodes), ", ")
		if c.lvl == levelGPU && len(c.gpuIdx) > 0 {
			at += " GPU " + strings.Join(sortedKeys(c.gpuIdx), ", ")
		}
		if c.kind == KindNoisyNeighbour && c.runID != "" {
			at += " (" + c.runID + ")"
		}
	}
	s := strings.TrimSpace(at + " " + c.kind.words())
	if class != SymptomNone {
		s += " — probable cause of " + string(class)
	}
	return s
}

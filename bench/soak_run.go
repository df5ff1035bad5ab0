package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftdb/weft/bench/internal/push"
	"github.com/weftdb/weft/bench/scenario"
)

// SoakReport is what RunSoak measured (the JSON file's content).
type SoakReport struct {
	Started         string       `json:"started"`
	DurationS       float64      `json:"duration_s"`
	RatePerPath     float64      `json:"rate_per_path"`
	ItemsPerRequest int          `json:"items_per_request"`
	Signals         []SoakSignal `json:"signals"`
	// PeakRSS is the highest resident set size sampled (VmHWM included);
	// MemoryBudget weft's -memory-budget.
	PeakRSS      int64       `json:"peak_rss_bytes"`
	MemoryBudget int64       `json:"memory_budget_bytes"`
	Cgroup       SoakCgroup  `json:"cgroup"`
	Stalled      SoakStalled `json:"stalled"`
	Queries      SoakQueries `json:"queries"`
	// Exited is set when weft ended during the soak (killed, crashed).
	Exited  string `json:"exited,omitempty"`
	LogTail string `json:"log_tail,omitempty"`
}

// SoakCgroup says whether weft ran in a memory cgroup and what it saw.
type SoakCgroup struct {
	Path       string `json:"path,omitempty"`
	Limit      int64  `json:"limit_bytes,omitempty"`
	MaxUsage   int64  `json:"max_usage_bytes,omitempty"`
	OOMKills   int64  `json:"oom_kills"`
	NotUsedWhy string `json:"not_used,omitempty"`
}

// SoakStalled counts the stalled client connections.
type SoakStalled struct {
	Target         int     `json:"target"`
	Opened         int64   `json:"opened"`
	ClosedByServer int64   `json:"closed_by_server"`
	OpenAtEnd      int64   `json:"open_at_end"`
	MaxHeldS       float64 `json:"max_held_s"`
}

// SoakQueries counts the queries run during the soak.
type SoakQueries struct {
	Run     int     `json:"run"`
	Failed  int     `json:"failed"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	LastErr string  `json:"last_error,omitempty"`
}

// KeptAnswering reports whether every query during the soak answered.
func (q SoakQueries) KeptAnswering() bool { return q.Run > 0 && q.Failed == 0 }

// RunSoak starts weft and drives the soak. A failure to start is an error;
// everything after is in the report.
func RunSoak(ctx context.Context, o SoakOptions) (*SoakReport, error) {
	o = o.withDefaults()
	dir, err := os.MkdirTemp(o.WorkDir, "weft-soak-")
	if err != nil {
		return nil, fmt.Errorf("work dir: %w", err)
	}
	defer os.RemoveAll(dir)
	spec := WeftSpec(o.WeftBin, o.WeftArgs+" -memory-budget "+strconv.FormatInt(o.MemoryBudget, 10))
	p, err := Start(ctx, spec, dir, time.Minute)
	if err != nil {
		return nil, err
	}
	defer p.Kill()
	rep := &SoakReport{Started: time.Now().UTC().Format(time.RFC3339), RatePerPath: o.Rate, ItemsPerRequest: o.ItemsPerRequest, MemoryBudget: o.MemoryBudget}
	cg := joinMemoryCgroup(p.Pid(), o.CgroupLimit)
	defer cg.remove()
	rep.Cgroup = cg.info

	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	t0 := time.Now()
	paths := soakPaths(o, t0)
	counters := make([]*soakCounter, len(paths))
	loadCtx, stopLoad := context.WithTimeout(ctx, o.Duration)
	defer stopLoad()
	var wg sync.WaitGroup
	for i, sp := range paths {
		counters[i] = &soakCounter{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			driveSoakPath(loadCtx, client, p.Base, sp, counters[i], o)
		}()
	}
	stalled := &stallStats{}
	wg.Add(2)
	go func() {
		defer wg.Done()
		holdStalled(loadCtx, strings.TrimPrefix(p.Base, "http://"), o.Stalled, stalled)
	}()
	var queries SoakQueries
	go func() {
		defer wg.Done()
		queries = querySoak(loadCtx, client, p.Base, o.QueryEvery)
	}()
	o.Logger.Info("soak running", "duration", o.Duration, "rate_per_path", o.Rate, "stalled", o.Stalled, "budget", o.MemoryBudget)
	wg.Wait()
	rep.DurationS = time.Since(t0).Seconds()
	rep.Stalled = stalled.result(o.Stalled)
	rep.Queries = queries

	select {
	case <-p.done:
		rep.Exited = fmt.Sprint(p.waitErr)
		rep.LogTail = p.LogTail(2000)
	default:
		// Query back what was acknowledged.
		qctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		for i, sp := range paths {
			n, err := soakStored(qctx, client, p.Base, sp.name, t0, counters[i])
			rep.Signals = append(rep.Signals, counters[i].result(sp.name, n, err))
		}
		cancel()
	}
	if rep.Signals == nil {
		for i, sp := range paths {
			rep.Signals = append(rep.Signals, counters[i].result(sp.name, -1, errors.New("weft exited")))
		}
	}
	rep.PeakRSS = p.PeakRSS()
	cg.finish(&rep.Cgroup)
	p.Stop(time.Minute)
	return rep, nil
}

// driveSoakPath sends sp's requests at o.Rate until ctx ends; every
// o.BadEvery-th is a bad one, sent once.
func driveSoakPath(ctx context.Context, client *http.Client, base string, sp *soakPath, c *soakCounter, o SoakOptions) {
	good := &push.Sender{Client: client, URL: base + sp.path, Header: sp.header,
		Policy: push.Policy{RetryFor: 30 * time.Second, MinBackoff: 50 * time.Millisecond, MaxBackoff: 2 * time.Second, MaxRetryAfter: 2 * time.Second}}
	slots := make(chan struct{}, o.MaxInFlight)
	tick := time.NewTicker(time.Duration(float64(time.Second) / o.Rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case slots <- struct{}{}:
		default:
			c.mu.Lock()
			c.backlog++
			c.mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			// Acknowledged requests are retried past the load's end: the
			// sender's queue drains before the count.
			sendCtx := context.WithoutCancel(ctx)
			if o.BadEvery > 0 && seq%o.BadEvery == o.BadEvery-1 {
				body, h := sp.bad(seq)
				bad := &push.Sender{Client: client, URL: good.URL, Header: h}
				code := 0
				bad.Send(sendCtx, body, func(a push.Attempt) { code = a.Code })
				c.badDone(code)
				return
			}
			body, items, id, err := sp.good(seq)
			if err != nil {
				c.done(false, items, id, 0, "encode: "+err.Error())
				return
			}
			t := time.Now()
			ok, last := good.Send(sendCtx, body, c.attempt)
			c.done(ok, items, id, time.Since(t), last)
		}()
	}
}

// soakStored queries back how many items of path weft holds.
func soakStored(ctx context.Context, client *http.Client, base, path string, t0 time.Time, c *soakCounter) (int64, error) {
	end := time.Now()
	rng := end.Sub(t0) + 10*time.Minute
	promCount := func(metric string) (int64, error) {
		qc := &QueryClient{Client: client, Base: base}
		r, err := qc.Do(ctx, Query{Kind: Instant, Expr: fmt.Sprintf("sum(count_over_time(%s[%dms]))", metric, rng.Milliseconds())}, end.UnixMilli())
		if err != nil {
			return -1, err
		}
		var n float64
		for _, pts := range r.Points {
			for _, p := range pts {
				n += p[1]
			}
		}
		return int64(n), nil
	}
	logCount := func(sel string) (int64, error) {
		m, err := weftVector(ctx, client, base, fmt.Sprintf("sum(count_over_time(%s[%dms]))", sel, rng.Milliseconds()), end.UnixNano())
		if err != nil {
			return -1, err
		}
		return int64(m[""]), nil
	}
	switch path {
	case "remote_write":
		return promCount("soak_rw")
	case "otlp_metrics":
		return promCount("soak_otlp")
	case "loki_push":
		return logCount(`{job="soak_loki"}`)
	case "otlp_logs":
		return logCount(`{service_name="soak-otlp-logs"}`)
	case "otlp_traces":
		c.mu.Lock()
		ids := append([]scenario.TraceID(nil), c.ids...)
		c.mu.Unlock()
		return traceSpansStored(ctx, client, base, ids)
	}
	return -1, fmt.Errorf("unknown path %q", path)
}

// traceSpansStored fetches every trace by ID and sums their spans.
func traceSpansStored(ctx context.Context, client *http.Client, base string, ids []scenario.TraceID) (int64, error) {
	var (
		total   atomic.Int64
		firstMu sync.Mutex
		first   error
		next    atomic.Int64
		wg      sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				n, err := (weftTraces{}).TraceSpans(ctx, client, base, ids[i])
				if err != nil {
					firstMu.Lock()
					if first == nil {
						first = fmt.Errorf("trace %x: %w", ids[i], err)
					}
					firstMu.Unlock()
					continue
				}
				total.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	return total.Load(), first
}

// querySoak runs a PromQL and a LogQL query every `every` until ctx ends.
func querySoak(ctx context.Context, client *http.Client, base string, every time.Duration) SoakQueries {
	var q SoakQueries
	var lat []time.Duration
	tick := time.NewTicker(every)
	defer tick.Stop()
	qc := &QueryClient{Client: client, Base: base}
	for {
		select {
		case <-ctx.Done():
			q.P99Ms = float64(Percentile(lat, 0.99)) / 1e6
			return q
		case <-tick.C:
		}
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		t := time.Now()
		_, err := qc.Do(qctx, Query{Kind: Instant, Expr: "count(soak_rw)"}, t.UnixMilli())
		if err == nil {
			_, err = weftVector(qctx, client, base, `sum(count_over_time({job="soak_loki"}[1m]))`, t.UnixNano())
		}
		cancel()
		if ctx.Err() != nil {
			continue // cut by the end of the soak, not an answer
		}
		d := time.Since(t)
		q.Run++
		lat = append(lat, d)
		q.MaxMs = max(q.MaxMs, float64(d)/1e6)
		if err != nil {
			q.Failed++
			q.LastErr = err.Error()
		}
	}
}

// stallStats counts stalled connections. Safe for concurrent use.
type stallStats struct {
	opened, closed, open atomic.Int64
	maxHeld              atomic.Int64 // ns
}

func (s *stallStats) result(target int) SoakStalled {
	return SoakStalled{Target: target, Opened: s.opened.Load(), ClosedByServer: s.closed.Load(), OpenAtEnd: s.open.Load(), MaxHeldS: time.Duration(s.maxHeld.Load()).Seconds()}
}

// holdStalled keeps n connections open that declared a 1 MB remote-write
// body and sent one byte of it, reopening those the server closes.
func holdStalled(ctx context.Context, addr string, n int, st *stallStats) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				if err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
					continue
				}
				st.opened.Add(1)
				st.open.Add(1)
				t := time.Now()
				_, _ = io.WriteString(conn, "POST /api/v1/write HTTP/1.1\r\nHost: weft\r\nContent-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\nContent-Length: 1000000\r\n\r\nx")
				closed := make(chan struct{})
				go func() {
					_, _ = io.Copy(io.Discard, conn) // returns when the server closes
					close(closed)
				}()
				select {
				case <-closed:
					st.closed.Add(1)
				case <-ctx.Done():
				}
				held := int64(time.Since(t))
				for {
					m := st.maxHeld.Load()
					if held <= m || st.maxHeld.CompareAndSwap(m, held) {
						break
					}
				}
				conn.Close()
				<-closed
				if ctx.Err() != nil {
					return // still open at the end: counted in open
				}
				st.open.Add(-1)
			}
		}()
	}
}

// soakCgroup is the memory cgroup weft was moved into, if any.
type soakCgroup struct {
	dir  string
	v2   bool
	info SoakCgroup
}

// joinMemoryCgroup creates a memory cgroup limited to limit bytes and moves
// pid into it, when /sys/fs/cgroup allows (cgroup v2, or v1's memory
// controller); info says why not otherwise.
func joinMemoryCgroup(pid int, limit int64) *soakCgroup {
	cg := &soakCgroup{}
	if limit < 0 {
		cg.info.NotUsedWhy = "disabled"
		return cg
	}
	name := "weft-soak-" + strconv.Itoa(os.Getpid())
	limitFile, procs := "memory.limit_in_bytes", "cgroup.procs"
	root := "/sys/fs/cgroup/memory"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		root, limitFile, cg.v2 = "/sys/fs/cgroup", "memory.max", true
	}
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		cg.info.NotUsedWhy = "create cgroup: " + err.Error()
		return cg
	}
	cg.dir = dir
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		cg.info.NotUsedWhy = "set limit: " + err.Error()
		return cg
	}
	if err := os.WriteFile(filepath.Join(dir, procs), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		cg.info.NotUsedWhy = "move weft: " + err.Error()
		return cg
	}
	cg.info.Path, cg.info.Limit = dir, limit
	return cg
}

// finish reads the cgroup's peak usage and OOM kills into info.
func (cg *soakCgroup) finish(info *SoakCgroup) {
	if cg.info.Path == "" {
		return
	}
	readInt := func(name string) int64 {
		b, _ := os.ReadFile(filepath.Join(cg.dir, name))
		n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n
	}
	field := func(name, key string) int64 {
		b, _ := os.ReadFile(filepath.Join(cg.dir, name))
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == key {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return n
			}
		}
		return 0
	}
	if cg.v2 {
		info.MaxUsage = readInt("memory.peak")
		info.OOMKills = field("memory.events", "oom_kill")
	} else {
		info.MaxUsage = readInt("memory.max_usage_in_bytes")
		info.OOMKills = field("memory.oom_control", "oom_kill")
	}
}

// remove deletes the cgroup once its processes are gone (bounded wait).
func (cg *soakCgroup) remove() {
	if cg.dir == "" {
		return
	}
	for range 50 {
		if err := os.Remove(cg.dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SoakMarkdown renders the report; short marks a try shorter than the
// default duration.
func SoakMarkdown(r *SoakReport) string {
	var b strings.Builder
	label := ""
	if r.DurationS < DefaultSoakOptions().Duration.Seconds() {
		label = " (short try)"
	}
	fmt.Fprintf(&b, "# weft soak%s\n\n%s, %.0f s, %.0f good requests/s per path, %d items per request.\n\n", label, r.Started, r.DurationS, r.RatePerPath, r.ItemsPerRequest)
	b.WriteString("| path | good req | acked | acked items | stored | lost | 429s | p50 ack ms | p99 ack ms | bad sent | bad not 4xx | backlog |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Signals {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %.1f | %.1f | %d | %d | %d |\n", s.Path, s.Requests, s.Acked, s.AckedItems, s.Stored, s.Lost, s.Status429, s.AckP50Ms, s.AckP99Ms, s.BadRequests, s.BadNot4xx, s.Backlog)
	}
	fmt.Fprintf(&b, "\nPeak RSS %.0f MiB against a budget of %.0f MiB", float64(r.PeakRSS)/(1<<20), float64(r.MemoryBudget)/(1<<20))
	if r.Cgroup.Path != "" {
		fmt.Fprintf(&b, "; memory cgroup limit %.0f MiB, max usage %.0f MiB, %d OOM kills", float64(r.Cgroup.Limit)/(1<<20), float64(r.Cgroup.MaxUsage)/(1<<20), r.Cgroup.OOMKills)
	} else {
		fmt.Fprintf(&b, "; no memory cgroup (%s)", r.Cgroup.NotUsedWhy)
	}
	fmt.Fprintf(&b, ".\nStalled connections: %d held (%d opened, %d closed by the server, longest %.0f s).\n", r.Stalled.Target, r.Stalled.Opened, r.Stalled.ClosedByServer, r.Stalled.MaxHeldS)
	fmt.Fprintf(&b, "Queries during the soak: %d, %d failed, p99 %.0f ms, max %.0f ms; kept answering: %v.\n", r.Queries.Run, r.Queries.Failed, r.Queries.P99Ms, r.Queries.MaxMs, r.Queries.KeptAnswering())
	if r.Exited != "" {
		fmt.Fprintf(&b, "\n**weft exited during the soak**: %s\n", r.Exited)
	}
	for _, s := range r.Signals {
		if s.StoredError != "" || s.LastError != "" {
			fmt.Fprintf(&b, "\n- %s: %s %s", s.Path, s.StoredError, s.LastError)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// WriteSoak writes dir/soak-<timestamp>.json and .md and returns the JSON
// file's path.
func WriteSoak(dir string, r *SoakReport, now time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create results dir: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode soak report: %w", err)
	}
	base := filepath.Join(dir, "soak-"+now.UTC().Format("20060102T150405Z"))
	if err := os.WriteFile(base+".json", append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write soak report: %w", err)
	}
	if err := os.WriteFile(base+".md", []byte(SoakMarkdown(r)), 0o644); err != nil {
		return "", fmt.Errorf("write soak report: %w", err)
	}
	return base + ".json", nil
}

package gpuagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// source is the GPU telemetry source: NVML with cgo, a stub without.
type source interface {
	Collect(ctx context.Context) Snapshot
	Events() <-chan Event
	Close() error
}

// windowed is implemented by a source with figures computed between two
// collections (NVML GPM's profiling metrics): -once then collects twice,
// onceWindow apart, and prints the second.
type windowed interface {
	NeedsWindow() bool
}

// onceWindow is the span between the two collections of -once on a GPU with
// GPM: well above NVML's 100 ms counter refresh, short enough for a check.
const onceWindow = time.Second

// Agent ties a source to the exporters. New → Start → Stop, or Run.
type Agent struct {
	opts   Options
	log    *slog.Logger
	src    source
	render *Renderer
	work   *Workloads
	reg    *Registry
	pods   *PodResources
	queue  *Queue
	sender *Sender
	loki   *LokiPusher

	lokiFailures atomic.Uint64
	lokiCh       chan EventLine

	mu   sync.Mutex // guards last
	last []Series

	// instance is the instance label of pushed series; set by newAgent and
	// by Start (the bound port), before the loops start.
	instance []Label

	// collectMu serialises the users of src and work (not safe for
	// concurrent use): collections and event rendering.
	collectMu sync.Mutex

	srv      *http.Server
	ln       net.Listener
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error

	// Stdout receives the Once output (default os.Stdout).
	Stdout io.Writer
	// onceWindow is the wait between the two collections of -once when the
	// source is windowed (tests shorten it).
	onceWindow time.Duration
}

func (o *Options) fill() {
	d := DefaultOptions()
	if o.Interval <= 0 {
		o.Interval = d.Interval
	}
	if o.Naming == "" {
		o.Naming = d.Naming
	}
	if o.QueueDir == "" {
		o.QueueDir = d.QueueDir
	}
	if o.QueueMaxBytes <= 0 {
		o.QueueMaxBytes = d.QueueMaxBytes
	}
	if o.Output == "" {
		o.Output = d.Output
	}
	if o.ProcRoot == "" {
		o.ProcRoot = d.ProcRoot
	}
	if o.RegistrationTTL <= 0 {
		o.RegistrationTTL = d.RegistrationTTL
	}
	if o.Hostname == "" {
		o.Hostname, _ = os.Hostname()
	}
}

// New builds an agent over the NVML source of this build.
func New(opts Options) (*Agent, error) {
	opts.fill()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return newAgent(opts, newDefaultSource(discardLogger(opts.Logger)))
}

func (o *Options) validate() error {
	if o.Naming != NamingDCGM && o.Naming != NamingOTel {
		return fmt.Errorf("unknown naming %q (want dcgm or otel)", o.Naming)
	}
	if o.Output != "text" && o.Output != "json" {
		return fmt.Errorf("unknown output %q (want text or json)", o.Output)
	}
	if err := o.Client.validate(); err != nil {
		return fmt.Errorf("client options: %w", err)
	}
	return nil
}

func newAgent(opts Options, src source) (*Agent, error) {
	opts.fill()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	log := discardLogger(opts.Logger)
	a := &Agent{opts: opts, log: log, src: src, Stdout: os.Stdout, onceWindow: onceWindow}
	a.setInstance(opts.ListenAddr)
	a.reg = NewRegistry(opts.RegistrationTTL, nil)
	a.pods = NewPodResources(opts.PodResourcesSocket)
	a.work = NewWorkloads(opts.ProcRoot, a.reg, a.pods, log)
	a.render = &Renderer{Naming: opts.Naming, Hostname: opts.Hostname, Attr: a.work}
	pushRW := opts.RemoteWriteURL != "" && !opts.Once
	if !pushRW && opts.LokiURL == "" {
		return a, nil
	}
	rt, err := newPushTransport(opts.Client)
	if err != nil {
		return nil, fmt.Errorf("client options: %w", err)
	}
	for _, u := range []string{opts.RemoteWriteURL, opts.LokiURL} {
		if opts.Client.credentials() && strings.HasPrefix(u, "http://") {
			log.Warn("credentials_sent_without_tls: use an https:// URL so they are not readable on the wire", "url", u)
		}
	}
	if pushRW {
		q, err := OpenQueue(opts.QueueDir, opts.QueueMaxBytes)
		if err != nil {
			return nil, fmt.Errorf("open queue: %w", err)
		}
		a.queue = q
		a.sender = NewSender(q, SenderOptions{URL: opts.RemoteWriteURL, Logger: log,
			Client: &http.Client{Transport: rt, Timeout: remoteWriteTimeout}})
	}
	if opts.LokiURL != "" {
		a.loki = NewLokiPusher(opts.LokiURL, &http.Client{Transport: rt, Timeout: lokiPushTimeout})
		a.lokiCh = make(chan EventLine, eventBufferLoki)
	}
	return a, nil
}

// Handler serves /metrics (text exposition of the latest collection plus the
// agent's own metrics) and /v1/register.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		series := append([]Series(nil), a.last...)
		a.mu.Unlock()
		series = append(series, a.selfSeries()...)
		SortSeries(series)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if err := WriteText(w, series); err != nil {
			a.log.Debug("write_metrics_failed", "err", err)
		}
	})
	mux.Handle("/v1/register", a.reg)
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	return mux
}

func (a *Agent) selfSeries() []Series {
	r := Renderer{Naming: a.opts.Naming}
	var out []Series
	if a.queue != nil {
		_, bytes, dseg, dbytes := a.queue.Stats()
		out = append(out,
			r.series(MetricQueueBytes, nil, nil, float64(bytes)),
			r.series(MetricQueueDroppedSegments, nil, nil, float64(dseg)),
			r.series(MetricQueueDropped, nil, nil, float64(dbytes)),
			r.series(MetricSendFailures, nil, nil, float64(a.sender.Failures())))
	}
	if a.loki != nil {
		out = append(out, r.series(MetricLokiFailures, nil, nil, float64(a.lokiFailures.Load())))
	}
	return out
}

// CollectOnce runs one collection and returns its series. Safe to call
// while the agent runs (tests, -once); calls are serialised.
func (a *Agent) CollectOnce(ctx context.Context) []Series {
	a.collectMu.Lock()
	defer a.collectMu.Unlock()
	if err := a.work.Refresh(ctx); err != nil {
		a.log.Warn("pod_resources_failed", "err", err)
	}
	snap := a.src.Collect(ctx)
	series := a.render.Render(snap)
	a.work.EndRound()
	a.mu.Lock()
	a.last = series
	a.mu.Unlock()
	if a.queue != nil {
		if data, err := EncodeRW2Labels(series, snap.Time, a.instance); err != nil {
			a.log.Error("encode_remote_write_failed", "err", err)
		} else if err := a.queue.Push(data); err != nil {
			a.log.Error("queue_push_failed", "err", err)
		}
	}
	return series
}

// Start opens the listener and starts the loops. It returns after the
// listener is bound.
func (a *Agent) Start(ctx context.Context) error {
	ctx, a.cancel = context.WithCancel(ctx)
	if a.opts.ListenAddr != "" {
		ln, err := net.Listen("tcp", a.opts.ListenAddr)
		if err != nil {
			a.cancel()
			return fmt.Errorf("listen %s: %w", a.opts.ListenAddr, err)
		}
		a.ln = ln
		a.setInstance(ln.Addr().String())
		a.srv = &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Error("http_serve_failed", "err", err)
			}
		}()
	}
	if a.loki != nil {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.pushEvents(ctx)
		}()
	}
	if a.sender != nil {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.sender.Run(ctx)
		}()
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.loop(ctx)
	}()
	return nil
}

// setInstance sets the instance label from Options.Instance or, when that
// is empty, from the address the listener is (to be) bound to.
func (a *Agent) setInstance(listenAddr string) {
	v := a.opts.Instance
	if v == "" {
		v = defaultInstance(listenAddr, a.opts.Hostname)
	}
	a.instance = []Label{{instanceLabel, v}}
}

// Addr returns the bound listener address, or "".
func (a *Agent) Addr() string {
	if a.ln == nil {
		return ""
	}
	return a.ln.Addr().String()
}

// loop owns the attributor: collections and event rendering both run here.
func (a *Agent) loop(ctx context.Context) {
	t := time.NewTicker(a.opts.Interval)
	defer t.Stop()
	a.CollectOnce(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.CollectOnce(ctx)
		case ev := <-a.src.Events():
			a.handleEvent(ctx, ev)
		}
	}
}

// EventLine renders ev with the labels of its GPU's series (workload context
// included), so the event lands in the log stream of the run that held it.
func (a *Agent) EventLine(ev Event) EventLine {
	var pids []uint32
	a.mu.Lock()
	for _, s := range a.last {
		if s.Name == MetricProcessMemory.Name(a.opts.Naming) && labelValue(s.Labels, KeyGPUUUID) == ev.GPU.UUID {
			if pid, ok := parsePID(labelValue(s.Labels, "pid")); ok {
				pids = append(pids, pid)
			}
		}
	}
	a.mu.Unlock()
	a.collectMu.Lock()
	gpuCtx, _ := a.work.Attribute(ev.GPU, pids)
	a.collectMu.Unlock()
	// The event's own labels first: past Loki's label limit the last ones
	// become structured metadata (lokiStreamOf).
	labels := []Label{{"source", "weft-agent"}, {"event", string(ev.Kind)}}
	if ev.Kind == EventXID {
		labels = append(labels, Label{"xid", fmt.Sprint(ev.Code)})
	}
	labels = append(labels, a.render.gpuLabels(ev.GPU, gpuCtx)...)
	return EventLine{Labels: labels, Time: ev.Time, Line: ev.Message()}
}

func (a *Agent) handleEvent(ctx context.Context, ev Event) {
	a.log.Warn("gpu_event", "kind", string(ev.Kind), "code", ev.Code, "gpu_uuid", ev.GPU.UUID)
	if a.loki == nil {
		return
	}
	select {
	case a.lokiCh <- a.EventLine(ev):
	default:
		a.lokiFailures.Add(1)
		a.log.Error("loki_event_dropped_buffer_full", "gpu_uuid", ev.GPU.UUID)
	}
}

// eventBufferLoki bounds the events waiting for Loki while it is slow or
// down, so an XID storm cannot grow memory without limit.
const eventBufferLoki = 1024

// pushEvents sends event lines to Loki off the collection loop, so a slow or
// absent Loki never delays a collection.
func (a *Agent) pushEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case l := <-a.lokiCh:
			if err := a.loki.Push(ctx, []EventLine{l}); err != nil {
				a.lokiFailures.Add(1)
				a.log.Error("loki_push_failed", "err", err)
			}
		}
	}
}

func labelValue(ls []Label, name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

func parsePID(s string) (uint32, bool) {
	var v uint32
	_, err := fmt.Sscan(s, &v)
	return v, err == nil && s != ""
}

// Stop shuts the listener down, stops the loops and closes NVML. Idempotent.
func (a *Agent) Stop(ctx context.Context) error {
	a.stopOnce.Do(func() {
		var errs []error
		if a.srv != nil {
			errs = append(errs, a.srv.Shutdown(ctx))
		}
		if a.cancel != nil {
			a.cancel()
		}
		a.wg.Wait()
		errs = append(errs, a.src.Close(), a.pods.Close())
		a.stopErr = errors.Join(errs...)
	})
	return a.stopErr
}

// Run runs the agent until ctx ends (or once with opts.Once).
func Run(ctx context.Context, opts Options) error {
	a, err := New(opts)
	if err != nil {
		return err
	}
	return a.run(ctx)
}

func (a *Agent) run(ctx context.Context) error {
	if a.opts.Once {
		defer a.src.Close()
		series := a.CollectOnce(ctx)
		if w, ok := a.src.(windowed); ok && w.NeedsWindow() {
			select {
			case <-ctx.Done():
			case <-time.After(a.onceWindow):
				series = a.CollectOnce(ctx)
			}
		}
		return writeOnce(a.Stdout, a.opts.Output, series)
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	a.log.Info("weft_agent_started", "listen", a.Addr(), "interval", a.opts.Interval, "naming", string(a.opts.Naming),
		"remote_write", a.opts.RemoteWriteURL != "", "loki", a.opts.LokiURL != "")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.Stop(stopCtx)
}

func writeOnce(w io.Writer, format string, series []Series) error {
	switch format {
	case "text", "":
		return WriteText(w, series)
	case "json":
		type js struct {
			Name   string            `json:"name"`
			Type   string            `json:"type"`
			Labels map[string]string `json:"labels"`
			Value  float64           `json:"value"`
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, s := range series {
			m := make(map[string]string, len(s.Labels))
			for _, l := range s.Labels {
				m[l.Name] = l.Value
			}
			if err := enc.Encode(js{s.Name, s.Type.String(), m, s.Value}); err != nil {
				return err
			}
		}
		_, err := w.Write(buf.Bytes())
		return err
	}
	return fmt.Errorf("unknown output %q (want text or json)", format)
}

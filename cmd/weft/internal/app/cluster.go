package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/cluster/blocks"
	"github.com/weftdb/weft/cluster/ingester"
	"github.com/weftdb/weft/cluster/kafkalog"
	"github.com/weftdb/weft/cluster/querier"
	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/investigate"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// readinessInterval is how often a role's readiness is copied to the API's
// (/-/ready and the query routes).
const readinessInterval = 500 * time.Millisecond

// partitionsTimeout bounds asking the brokers for the partition count.
const partitionsTimeout = 30 * time.Second

// role is what a scale-out target adds to the App: New builds it before
// the store (newRole), lets it configure the store and the API
// (configure), and the App runs start after its listeners open and stop
// before it drains them. TargetAll's role is empty.
type role struct {
	target Target
	// store is false for the stateless targets: no substrate is opened.
	store bool

	configure func(sub *storage.Substrate, aopts *api.Options, reg prometheus.Registerer) error
	// rules, set by configure on a querier that knows the brokers, is
	// what its rules read and write: the fan-out, and the ingest log for
	// the recorded series and alert state.
	rules *clusterRules
	// investigator, set by configure on a querier, investigates over the
	// fan-out (the App's own needs a store).
	investigator *investigate.Investigator
	wrap         func(http.Handler) http.Handler
	start        func(ctx context.Context) error
	ready        func() bool
	closers      []func()

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newRole prepares opts.Cluster.Target's role and adjusts opts for it.
func newRole(ctx context.Context, opts *Options, logger *slog.Logger) (*role, error) {
	c := opts.Cluster
	if c.Target == "" {
		c.Target = TargetAll
	}
	r := &role{target: c.Target, store: true}
	if c.Target == TargetAll {
		return r, nil
	}
	c.Kafka.Logger = logger.With("component", "kafka")
	if c.Kafka.ClientID == "" || c.Kafka.ClientID == kafkalog.DefaultOptions().ClientID {
		c.Kafka.ClientID = "weft-" + string(c.Target)
	}
	var err error
	switch c.Target {
	case TargetDistributor:
		err = r.distributor(ctx, c)
	case TargetIngester:
		// Offsets are recorded once the WAL has the data: fsync before
		// every commit (one per fetched batch), so a power loss cannot
		// lose what the offsets say was applied.
		opts.Storage.WALSyncInterval = -1
		err = r.ingester(ctx, c, opts.DataDir, logger)
	case TargetQuerier:
		err = r.querier(ctx, c, opts, logger)
	case TargetBlockBuilder:
		err = r.blockBuilder(ctx, c, opts, logger)
	default:
		err = fmt.Errorf("unknown target %q", c.Target)
	}
	if err != nil {
		r.close()
		return nil, fmt.Errorf("target %s: %w", c.Target, err)
	}
	return r, nil
}

// partitionCount is the configured partition count, else the brokers'.
func partitionCount(ctx context.Context, c ClusterOptions) (int32, *kafkalog.Producer, error) {
	p, err := kafkalog.NewProducer(c.Kafka)
	if err != nil {
		return 0, nil, err
	}
	if c.Partitions > 0 {
		return c.Partitions, p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, partitionsTimeout)
	defer cancel()
	n, err := p.Partitions(ctx)
	if err != nil {
		p.Close()
		return 0, nil, fmt.Errorf("partition count of %s (set -kafka.partitions to skip asking): %w", c.Kafka.Topic, err)
	}
	return n, p, nil
}

func (r *role) distributor(ctx context.Context, c ClusterOptions) error {
	r.store = false
	n, p, err := partitionCount(ctx, c)
	if err != nil {
		return err
	}
	r.closers = append(r.closers, p.Close)
	sink := kafkalog.NewSink(p, n, c.Kafka.MaxRecordBytes)
	r.configure = func(_ *storage.Substrate, aopts *api.Options, reg prometheus.Registerer) error {
		if err := reg.Register(p); err != nil {
			return err
		}
		noStore(aopts)
		aopts.Appendable = sink
		aopts.Logs = distributorLogs{sink}
		aopts.Traces = distributorTraces{sink}
		return nil
	}
	return nil
}

func (r *role) ingester(ctx context.Context, c ClusterOptions, dataDir string, logger *slog.Logger) error {
	ic := c.Ingester
	if len(ic.Partitions) == 0 {
		return errors.New("no partitions (-partitions)")
	}
	if ic.ID == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("ingester id: %w", err)
		}
		ic.ID = host
	}
	n, p, err := partitionCount(ctx, c)
	if err != nil {
		return err
	}
	p.Close()
	for _, part := range ic.Partitions {
		if part < 0 || part >= n {
			return fmt.Errorf("partition %d is not one of the topic's %d", part, n)
		}
	}
	group := "weft-ingester-" + ic.ID
	rd, err := kafkalog.NewReader(c.Kafka, group, ic.Partitions)
	if err != nil {
		return err
	}
	r.closers = append(r.closers, rd.Close)
	var in *ingester.Ingester
	r.configure = func(sub *storage.Substrate, aopts *api.Options, reg prometheus.Registerer) error {
		var err error
		// Lines applied from the log reach the Loki tail connections of
		// this ingester, as pushed lines reach a single node's.
		tail := api.NewLogBroadcaster()
		aopts.Tail = tail
		in, err = ingester.New(ingester.Options{Partitions: ic.Partitions, TotalPartitions: n, StateDir: dataDir, MaxLag: ic.MaxLag,
			Logger: logger.With("component", "ingester", "group", group), Registerer: reg},
			rd, &record.Applier{Metrics: sub.Metrics(), Logs: tail.Pusher(sub.Logs()), Traces: sub.Traces()})
		if err != nil {
			return err
		}
		if aopts.Handlers == nil {
			aopts.Handlers = map[string]http.Handler{}
		}
		rlog := logger.With("component", "internal read api")
		for p, h := range readapi.Handlers(sub.Logs(), sub.Traces(), in.Status, rlog) {
			aopts.Handlers[p] = h
		}
		// Queriers' tail connections stream what this ingester applies.
		for p, h := range readapi.TailHandlers(tail, rlog) {
			aopts.Handlers[p] = h
		}
		r.closers = append(r.closers, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := in.Stop(ctx); err != nil {
				logger.Warn("ingester_stop_failed", "err", err)
			}
		})
		return nil
	}
	r.wrap = func(h http.Handler) http.Handler { return in.Middleware(h) }
	r.start = func(ctx context.Context) error { return in.Start(ctx) }
	r.ready = func() bool { return in.Ready() }
	return nil
}

func (r *role) querier(ctx context.Context, c ClusterOptions, opts *Options, logger *slog.Logger) error {
	r.store = false
	dataDir := opts.DataDir
	if err := c.Querier.check(); err != nil {
		return err
	}
	bucket, err := newBucket(c.Blocks)
	if err != nil {
		return err
	}
	// Rules on a querier read the cluster through it and write what they
	// record (and ALERTS, ALERTS_FOR_STATE) to the ingest log, as a
	// distributor would: the ingesters store it like any other series. A
	// querier that knows the brokers runs a ruler (rule files may come
	// with a reload); one that does not refuses rule files.
	var sink *kafkalog.Sink
	var shard *ruleShard
	if hasRules(opts.Rules) && len(c.Kafka.Brokers) == 0 {
		return errors.New("rule files on a querier need -kafka.brokers: what rules record goes through the ingest log")
	}
	if c.Querier.RuleSharding && len(c.Kafka.Brokers) == 0 {
		return errors.New("-querier.rule-sharding needs -kafka.brokers: the queriers share the groups through a lease on the ingest topic")
	}
	if len(c.Kafka.Brokers) > 0 {
		n, p, err := partitionCount(ctx, c)
		if err != nil {
			return err
		}
		r.closers = append(r.closers, p.Close)
		sink = kafkalog.NewSink(p, n, c.Kafka.MaxRecordBytes)
		// Queriers with rule sharding share the groups through a lease on
		// the topic's partitions (ruleShard).
		if c.Querier.RuleSharding {
			shard = &ruleShard{total: n, logger: logger.With("component", "ruler shard")}
		}
	}
	var q *querier.Querier
	var br *blocks.Reader
	r.configure = func(_ *storage.Substrate, aopts *api.Options, reg prometheus.Registerer) error {
		if shard != nil {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "weft_ruler_shard_partitions",
				Help: "Partitions of the ingest topic whose rule groups this querier evaluates (-querier.rule-sharding).",
			}, func() float64 {
				if h := shard.held.Load(); h != nil {
					return float64(len(*h))
				}
				return 0
			}))
		}
		var qb querier.Blocks
		if bucket != nil {
			var err error
			br, err = blocks.NewReader(blocks.ReaderOptions{CacheDir: filepath.Join(dataDir, "blocks-cache"), SyncInterval: c.Blocks.SyncInterval,
				MaxCacheBytes: c.Blocks.CacheMaxBytes, Logger: logger.With("component", "blocks"), Registerer: reg}, bucket)
			if err != nil {
				return err
			}
			qb = br
			r.closers = append(r.closers, br.Stop)
		}
		var err error
		q, err = querier.New(querier.Options{Ingesters: c.Querier.Ingesters, TotalPartitions: c.Partitions,
			QueryIngestersWithin: c.Querier.QueryIngestersWithin, DenyPartialResponse: c.Querier.DenyPartialResponse,
			Blocks: qb, Logger: logger.With("component", "querier"), Registerer: reg})
		if err != nil {
			return err
		}
		noStore(aopts)
		aopts.Storage = q
		aopts.Metadata = q
		aopts.Logs = q.Logs()
		aopts.Loki.Tailer = q.Logs() // tail streams from the ingesters
		aopts.Cardinality, aopts.Churn = querierCardinality{q}, q
		aopts.Traces = q.Traces()
		if sink != nil {
			r.rules = &clusterRules{st: ruleStore{app: sink, q: q}, logs: q.Logs(), shard: shard}
		}
		// Investigations read the cluster through the querier and keep
		// their incidents in the cluster's logs through the ingest log.
		wl, err := workload.New(opts.Workload)
		if err != nil {
			return fmt.Errorf("investigate: workload context: %w", err)
		}
		iopts := investigate.Options{Index: q.Index(), Metrics: q, Engine: aopts.Engine, Logs: q.Logs(), Workload: wl,
			Logger: logger.With("component", "investigate")}
		if sink != nil {
			iopts.Incidents = sink
		}
		if r.investigator, err = investigate.New(iopts); err != nil {
			return err
		}
		aopts.Investigate = r.investigator
		r.closers = append(r.closers, q.Stop)
		return nil
	}
	r.wrap = querier.Middleware
	r.start = func(ctx context.Context) error {
		if br != nil {
			if err := br.Start(ctx); err != nil {
				return err
			}
		}
		q.Start(ctx)
		if shard != nil {
			lease, err := kafkalog.NewLease(c.Kafka, rulerLeaseGroup, 0, shard.update)
			if err != nil {
				return fmt.Errorf("ruler lease: %w", err)
			}
			r.closers = append(r.closers, lease.Close)
		}
		return nil
	}
	// Ready once it can plan (it knows the partitions); a missing
	// partition makes answers partial, not the querier unready.
	r.ready = func() bool { return q.Ready() || q.Planned() }
	return nil
}

func (r *role) blockBuilder(ctx context.Context, c ClusterOptions, opts *Options, logger *slog.Logger) error {
	r.store = false
	bucket, err := newBucket(c.Blocks)
	if err != nil {
		return err
	}
	if bucket == nil {
		return errors.New("no bucket (-blocks.backend)")
	}
	n, p, err := partitionCount(ctx, c)
	if err != nil {
		return err
	}
	p.Close()
	parts := c.Ingester.Partitions
	if len(parts) == 0 {
		for i := range n {
			parts = append(parts, i)
		}
	}
	rd, err := kafkalog.NewReader(c.Kafka, "weft-block-builder", parts)
	if err != nil {
		return err
	}
	r.closers = append(r.closers, rd.Close)
	var b *blocks.Builder
	var comp *blocks.Compactor
	r.configure = func(_ *storage.Substrate, aopts *api.Options, reg prometheus.Registerer) error {
		sopts := opts.Storage
		sopts.Logs = opts.LogStore
		var err error
		b, err = blocks.NewBuilder(blocks.BuilderOptions{Partitions: parts, Window: c.BlockBuilder.Window, Grace: c.BlockBuilder.Grace, Retention: c.BlockBuilder.Retention,
			ScratchDir: filepath.Join(opts.DataDir, "block-builder"), Storage: sopts,
			Logger: logger.With("component", "block builder"), Registerer: reg}, rd, bucket)
		if err != nil {
			return err
		}
		if rng := c.BlockBuilder.CompactionRange; rng > 0 {
			// A span's last window is closed by its end plus the
			// builder's grace (an idle partition) and uploaded soon
			// after: a window more is ample.
			grace := max(c.BlockBuilder.Grace, c.BlockBuilder.Window/10, time.Second) + c.BlockBuilder.Window
			comp, err = blocks.NewCompactor(blocks.CompactorOptions{Partitions: parts, Ranges: []time.Duration{rng}, Grace: grace,
				ScratchDir: filepath.Join(opts.DataDir, "block-compactor"), Storage: sopts,
				Logger: logger.With("component", "block compactor"), Registerer: reg}, bucket)
			if err != nil {
				return err
			}
			r.closers = append(r.closers, comp.Stop)
		}
		noStore(aopts)
		r.closers = append(r.closers, b.Stop)
		return nil
	}
	r.start = func(ctx context.Context) error {
		if err := b.Start(ctx); err != nil {
			return err
		}
		if comp != nil {
			return comp.Start(ctx)
		}
		return nil
	}
	r.ready = func() bool { return b.Ready() }
	return nil
}

// clusterRules is what a querier's rules read and write, and the share of
// the groups it evaluates (nil: every group).
type clusterRules struct {
	st    ruleStore
	logs  logql.Source
	shard *ruleShard
}

// rulerLeaseGroup is the consumer group through which ruling queriers
// share the rule groups.
const rulerLeaseGroup = "weft-ruler"

// ruleShard is a ruling querier's share of the rule groups: a group
// belongs to partition XXH64(file's base name, group name) mod the
// topic's partitions, and the querier evaluates the groups of the
// partitions its lease (kafkalog.Lease, group weft-ruler) holds. Every
// ruling querier loads the same files; the brokers give each partition to
// one live member, so each group runs on one querier, and the groups of a
// querier that stops move to the others (at once when it leaves, after
// the session timeout when it dies). Until its first assignment a querier
// evaluates nothing.
type ruleShard struct {
	total  int32
	logger *slog.Logger
	held   atomic.Pointer[map[int32]bool]
	// reshard applies a change of the held partitions (the ruler's
	// Reshard); set once the ruler exists, before the lease starts.
	reshard func() error
}

// sharding returns the querier's rule shard; nil for every group.
func (c *clusterRules) sharding() *ruleShard {
	if c == nil {
		return nil
	}
	return c.shard
}

func (s *ruleShard) owns(file, group string) bool {
	h := s.held.Load()
	if h == nil {
		return false
	}
	return (*h)[int32(xxhash.Sum64String(filepath.Base(file)+"\x00"+group)%uint64(s.total))]
}

// update is the lease's onChange.
func (s *ruleShard) update(held []int32) {
	m := make(map[int32]bool, len(held))
	for _, p := range held {
		m[p] = true
	}
	s.held.Store(&m)
	s.logger.Info("ruler_shard_changed", "partitions", held, "of", s.total)
	if s.reshard == nil {
		return
	}
	if err := s.reshard(); err != nil {
		s.logger.Warn("ruler_reshard_failed", "err", err)
	}
}

func hasRules(o RulesOptions) bool {
	return len(o.Config.RuleFiles)+len(o.Config.LogQLRuleFiles) > 0
}

// noRules refuses rule files on a target that neither stores nor queries:
// the distributor and the block builder (docs/scale-out.md).
func noRules(t Target, o RulesOptions) error {
	if hasRules(o) {
		return fmt.Errorf("target %s: rule files need a store or a querier; run them on a querier (or a single node)", t)
	}
	return nil
}

// noStore clears the API's store-backed options of a stateless role.
func noStore(aopts *api.Options) {
	aopts.Storage = emptyStorage{}
	aopts.Metadata = nil
	aopts.Admin = nil
	aopts.Cardinality = nil
	aopts.Churn = nil
	aopts.Appendable = nil
	aopts.Logs = nil
	aopts.Traces = nil
}

// run starts the role after the listeners opened and copies its readiness
// to setReady until stop.
func (r *role) run(ctx context.Context, setReady func(bool)) error {
	if r.start != nil {
		if err := r.start(ctx); err != nil {
			return err
		}
	}
	if r.ready == nil {
		setReady(true)
		return nil
	}
	setReady(r.ready())
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.wg.Go(func() {
		t := time.NewTicker(readinessInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				setReady(r.ready())
			}
		}
	})
	return nil
}

// halt stops the readiness loop (before the App marks itself not ready).
func (r *role) halt() {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
}

// close releases what the role holds, in reverse order. Idempotent.
func (r *role) close() {
	r.halt()
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
	r.closers = nil
}

// errNoStore answers reads of a role that stores nothing.
var errNoStore = errors.New("this weft process stores nothing (its -target is a distributor or block builder): query a querier")

// emptyStorage is the Prometheus API's storage on a role without a store:
// every read fails with errNoStore.
type emptyStorage struct{}

func (emptyStorage) Querier(int64, int64) (promstorage.Querier, error) { return nil, errNoStore }
func (emptyStorage) ChunkQuerier(int64, int64) (promstorage.ChunkQuerier, error) {
	return nil, errNoStore
}
func (emptyStorage) ExemplarQuerier(context.Context) (promstorage.ExemplarQuerier, error) {
	return nil, errNoStore
}

// distributorLogs is the distributor's log store: pushes produce to the
// ingest log; reads fail with errNoStore.
type distributorLogs struct{ sink *kafkalog.Sink }

func (d distributorLogs) Push(ctx context.Context, s []logstore.PushStream) error {
	return d.sink.Push(ctx, s)
}
func (distributorLogs) Select(context.Context, logentry.SelectParams) (logentry.Iterator, error) {
	return nil, errNoStore
}
func (distributorLogs) LabelNames(context.Context, int64, int64, ...*labels.Matcher) ([]string, error) {
	return nil, errNoStore
}
func (distributorLogs) LabelValues(context.Context, string, int64, int64, ...*labels.Matcher) ([]string, error) {
	return nil, errNoStore
}
func (distributorLogs) Series(context.Context, int64, int64, ...*labels.Matcher) ([]labels.Labels, error) {
	return nil, errNoStore
}
func (distributorLogs) Stats(context.Context, int64, int64, ...*labels.Matcher) (logstore.Stats, error) {
	return logstore.Stats{}, errNoStore
}
func (distributorLogs) EachStreamTotal(context.Context, int64, int64, []*labels.Matcher, func(labels.Labels, logstore.Stats)) error {
	return errNoStore
}
func (distributorLogs) EachEntry(context.Context, logentry.SelectParams, func(labels.Labels, bool, logentry.Entry), *uint64) error {
	return errNoStore
}

// distributorTraces is the distributor's trace store: OTLP traces produce
// to the ingest log; the Tempo API's reads fail with errNoStore.
type distributorTraces struct{ sink *kafkalog.Sink }

func (d distributorTraces) Push(ctx context.Context, batch []tracestore.ResourceSpans) (tracestore.PushResult, error) {
	return d.sink.PushTraces(ctx, batch)
}
func (distributorTraces) Fetch(context.Context, traceentry.FetchRequest) (traceentry.Iterator, error) {
	return nil, errNoStore
}
func (distributorTraces) FindTraceByID(context.Context, traceentry.TraceID, int64, int64) (*traceentry.Trace, error) {
	return nil, errNoStore
}
func (distributorTraces) TagNames(context.Context, int64, int64) (span, resource []string, err error) {
	return nil, nil, errNoStore
}

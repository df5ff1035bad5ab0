package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/weftdb/weft/cmd/weft/internal/app"
)

// clusterConfig is the cluster: block of the configuration file: the
// scale-out role and its engines (docs/scale-out.md). Flags given win.
type clusterConfig struct {
	Target *string `yaml:"target"`
	Kafka  struct {
		Brokers        *[]string `yaml:"brokers"`
		Topic          *string   `yaml:"topic"`
		Partitions     *int32    `yaml:"partitions"`
		ProduceTimeout *duration `yaml:"produce_timeout"`
		MaxRecordBytes *int      `yaml:"max_record_bytes"`
	} `yaml:"kafka"`
	Ingester struct {
		Partitions *[]int32  `yaml:"partitions"`
		ID         *string   `yaml:"id"`
		MaxLag     *duration `yaml:"max_lag"`
	} `yaml:"ingester"`
	Querier struct {
		Ingesters            *[]string `yaml:"ingesters"`
		QueryIngestersWithin *duration `yaml:"query_ingesters_within"`
		DenyPartialResponse  *bool     `yaml:"deny_partial_response"`
		RuleSharding         *bool     `yaml:"rule_sharding"`
	} `yaml:"querier"`
	Blocks struct {
		Backend       *string   `yaml:"backend"`
		Dir           *string   `yaml:"dir"`
		SyncInterval  *duration `yaml:"sync_interval"`
		CacheMaxBytes *int64    `yaml:"cache_max_bytes"`
		S3            struct {
			Endpoint  *string `yaml:"endpoint"`
			Bucket    *string `yaml:"bucket"`
			Region    *string `yaml:"region"`
			AccessKey *string `yaml:"access_key"`
			SecretKey *string `yaml:"secret_key"`
			Insecure  *bool   `yaml:"insecure"`
		} `yaml:"s3"`
	} `yaml:"blocks"`
	BlockBuilder struct {
		Window    *duration `yaml:"window"`
		Grace     *duration `yaml:"grace"`
		Retention *duration `yaml:"retention"`
		// CompactionRange: 0 turns compaction off.
		CompactionRange *duration `yaml:"compaction_range"`
	} `yaml:"block_builder"`
}

// secretPlaceholder stands for a secret in the effective configuration, as
// Prometheus writes its own.
const secretPlaceholder = "<secret>"

// bind moves the block's keys between the file and opts (binder: apply or
// export); the target and the backend are validated by apply.
func (c *clusterConfig) bind(b binder, co *app.ClusterOptions) {
	target := string(co.Target)
	bindVal(b, &target, &c.Target)
	co.Target = app.Target(target)
	bindVal(b, &co.Kafka.Brokers, &c.Kafka.Brokers)
	bindVal(b, &co.Kafka.Topic, &c.Kafka.Topic)
	bindVal(b, &co.Partitions, &c.Kafka.Partitions)
	bindDur(b, &co.Kafka.ProduceTimeout, &c.Kafka.ProduceTimeout)
	bindVal(b, &co.Kafka.MaxRecordBytes, &c.Kafka.MaxRecordBytes)
	bindVal(b, &co.Ingester.Partitions, &c.Ingester.Partitions)
	bindVal(b, &co.Ingester.ID, &c.Ingester.ID)
	bindDur(b, &co.Ingester.MaxLag, &c.Ingester.MaxLag)
	bindVal(b, &co.Querier.Ingesters, &c.Querier.Ingesters)
	bindDur(b, &co.Querier.QueryIngestersWithin, &c.Querier.QueryIngestersWithin)
	bindVal(b, &co.Querier.DenyPartialResponse, &c.Querier.DenyPartialResponse)
	bindVal(b, &co.Querier.RuleSharding, &c.Querier.RuleSharding)
	bk, s3 := &c.Blocks, &co.Blocks.S3
	bindVal(b, &co.Blocks.Backend, &bk.Backend)
	bindVal(b, &co.Blocks.Dir, &bk.Dir)
	bindDur(b, &co.Blocks.SyncInterval, &bk.SyncInterval)
	bindVal(b, &co.Blocks.CacheMaxBytes, &bk.CacheMaxBytes)
	bindVal(b, &s3.Endpoint, &bk.S3.Endpoint)
	bindVal(b, &s3.Bucket, &bk.S3.Bucket)
	bindVal(b, &s3.Region, &bk.S3.Region)
	bindVal(b, &s3.AccessKey, &bk.S3.AccessKey)
	bindVal(b, &s3.SecretKey, &bk.S3.SecretKey)
	bindVal(b, &s3.Insecure, &bk.S3.Insecure)
	bindDur(b, &co.BlockBuilder.Window, &c.BlockBuilder.Window)
	bindDur(b, &co.BlockBuilder.Grace, &c.BlockBuilder.Grace)
	bindDur(b, &co.BlockBuilder.Retention, &c.BlockBuilder.Retention)
	bindDur(b, &co.BlockBuilder.CompactionRange, &c.BlockBuilder.CompactionRange)
	if b.export && *bk.S3.SecretKey != "" {
		bk.S3.SecretKey = ptr(secretPlaceholder)
	}
}

// apply copies the block into opts and validates it.
func (c *clusterConfig) apply(opts *app.Options) error {
	if c.Target != nil {
		if _, err := app.ParseTarget(*c.Target); err != nil {
			return fmt.Errorf("cluster.target: %w", err)
		}
	}
	if c.Kafka.Partitions != nil && *c.Kafka.Partitions < 0 {
		return fmt.Errorf("cluster.kafka.partitions must not be negative, got %d", *c.Kafka.Partitions)
	}
	c.bind(binder{}, &opts.Cluster)
	return checkBackend(opts.Cluster.Blocks.Backend)
}

// checkBackend refuses an unknown blocks backend.
func checkBackend(b string) error {
	switch b {
	case app.BackendNone, app.BackendFilesystem, app.BackendS3:
		return nil
	}
	return fmt.Errorf("cluster.blocks.backend %q: want filesystem or s3", b)
}

// clusterFlags are the scale-out flags; apply copies those given over
// what the configuration file set.
type clusterFlags struct {
	target, brokers, topic, partitions, ingesterID, ingesters *string
	totalPartitions                                           *int
	produceTimeout, maxLag, queryIngestersWithin              *time.Duration
	denyPartial, ruleSharding                                 *bool
	backend, blocksDir, s3Endpoint, s3Bucket, s3Region        *string
	s3Insecure                                                *bool
	cacheMaxBytes                                             *int64
	syncInterval, window, grace, blocksRetention, compaction  *time.Duration
}

func registerClusterFlags(fs *flag.FlagSet, d app.ClusterOptions) *clusterFlags {
	return &clusterFlags{
		target:          fs.String("target", string(d.Target), "role of this process: all (the single node), distributor, ingester, block-builder or querier; see docs/scale-out.md"),
		brokers:         fs.String("kafka.brokers", strings.Join(d.Kafka.Brokers, ","), "Kafka-API seed brokers of the ingest log, host:port,... (every role but the querier and all)"),
		topic:           fs.String("kafka.topic", d.Kafka.Topic, "ingest log topic"),
		totalPartitions: fs.Int("kafka.partitions", int(d.Partitions), "partitions of the ingest topic; 0 asks the brokers at start"),
		produceTimeout:  fs.Duration("kafka.produce-timeout", d.Kafka.ProduceTimeout, "distributor: a write whose produce is not acknowledged within this fails with 503 (retryable)"),
		partitions:      fs.String("partitions", joinInt32(d.Ingester.Partitions), "ingester: the partitions it owns, e.g. 0,1 (an ingester with the same partitions is a replica)"),
		ingesterID:      fs.String("ingester.id", d.Ingester.ID, "ingester: its name, unique among replicas (consumer group weft-ingester-<id>); default the host name"),
		maxLag:          fs.Duration("ingester.max-lag", d.Ingester.MaxLag, "ingester: ready while what it has not applied was produced at most this long ago"),
		ingesters:       fs.String("querier.ingesters", strings.Join(d.Querier.Ingesters, ","), "querier: base URLs of the ingesters, http://host:port,..."),
		queryIngestersWithin: fs.Duration("querier.query-ingesters-within", d.Querier.QueryIngestersWithin,
			"querier: read the ingesters for data newer than this and the bucket's blocks for older data; 0 reads everything from the ingesters"),
		denyPartial: fs.Bool("deny-partial-response", d.Querier.DenyPartialResponse, "querier: fail a query that some partition could not answer instead of answering without it (flagged)"),
		ruleSharding: fs.Bool("querier.rule-sharding", d.Querier.RuleSharding,
			"querier with rule files: share the rule groups with the other queriers that set it (same rule files), each group on one, moving to the others when one stops (a lease on the ingest topic, consumer group weft-ruler)"),
		backend:      fs.String("blocks.backend", d.Blocks.Backend, "bucket of the blocks (block builder, querier): s3 or filesystem; empty: none"),
		blocksDir:    fs.String("blocks.dir", d.Blocks.Dir, "filesystem bucket: its directory"),
		s3Endpoint:   fs.String("blocks.s3.endpoint", d.Blocks.S3.Endpoint, "S3 bucket: host:port of the S3 API; credentials from cluster.blocks.s3 in -config or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"),
		s3Bucket:     fs.String("blocks.s3.bucket", d.Blocks.S3.Bucket, "S3 bucket: its name (it must exist)"),
		s3Region:     fs.String("blocks.s3.region", d.Blocks.S3.Region, "S3 bucket: its region"),
		s3Insecure:   fs.Bool("blocks.s3.insecure", d.Blocks.S3.Insecure, "S3 bucket: plain HTTP instead of HTTPS"),
		syncInterval: fs.Duration("blocks.sync-interval", d.Blocks.SyncInterval, "querier: how often the bucket is listed for new blocks"),
		cacheMaxBytes: fs.Int64("blocks.cache-max-bytes", d.Blocks.CacheMaxBytes,
			"querier: bound of the local copies of blocks, downloaded when a read needs them; past it the least recently read are deleted; -1: unbounded"),
		window: fs.Duration("block-builder.window", d.BlockBuilder.Window, "block builder: record-time width of a block"),
		grace:  fs.Duration("block-builder.grace", d.BlockBuilder.Grace, "block builder: how long an idle partition's window stays open past its end; 0: a tenth of the window"),
		blocksRetention: fs.Duration("block-builder.retention", d.BlockBuilder.Retention,
			"block builder: delete its partitions' blocks whose newest data is older than this; 0 keeps them"),
		compaction: fs.Duration("block-builder.compaction-range", d.BlockBuilder.CompactionRange,
			"block builder: merge its partitions' blocks of each closed span of this width (a multiple of the window) into one; 0 turns compaction off"),
	}
}

func (f *clusterFlags) apply(set map[string]bool, opts *app.Options) error {
	co := &opts.Cluster
	if set["target"] {
		t, err := app.ParseTarget(*f.target)
		if err != nil {
			return fmt.Errorf("invalid -target: %w", err)
		}
		co.Target = t
	}
	if set["kafka.brokers"] {
		co.Kafka.Brokers = splitList(*f.brokers)
	}
	if set["kafka.topic"] {
		co.Kafka.Topic = *f.topic
	}
	if set["kafka.partitions"] {
		if *f.totalPartitions < 0 {
			return fmt.Errorf("invalid -kafka.partitions %d: must not be negative", *f.totalPartitions)
		}
		co.Partitions = int32(*f.totalPartitions)
	}
	if set["kafka.produce-timeout"] {
		co.Kafka.ProduceTimeout = *f.produceTimeout
	}
	if set["partitions"] {
		ps, err := parseInt32List(*f.partitions)
		if err != nil {
			return fmt.Errorf("invalid -partitions: %w", err)
		}
		co.Ingester.Partitions = ps
	}
	if set["ingester.id"] {
		co.Ingester.ID = *f.ingesterID
	}
	if set["ingester.max-lag"] {
		co.Ingester.MaxLag = *f.maxLag
	}
	if set["querier.ingesters"] {
		co.Querier.Ingesters = splitList(*f.ingesters)
	}
	if set["querier.query-ingesters-within"] {
		co.Querier.QueryIngestersWithin = *f.queryIngestersWithin
	}
	if set["deny-partial-response"] {
		co.Querier.DenyPartialResponse = *f.denyPartial
	}
	if set["querier.rule-sharding"] {
		co.Querier.RuleSharding = *f.ruleSharding
	}
	for name, v := range map[string]struct{ dst, src *string }{"blocks.backend": {&co.Blocks.Backend, f.backend}, "blocks.dir": {&co.Blocks.Dir, f.blocksDir},
		"blocks.s3.endpoint": {&co.Blocks.S3.Endpoint, f.s3Endpoint}, "blocks.s3.bucket": {&co.Blocks.S3.Bucket, f.s3Bucket}, "blocks.s3.region": {&co.Blocks.S3.Region, f.s3Region}} {
		if set[name] {
			*v.dst = *v.src
		}
	}
	if set["blocks.s3.insecure"] {
		co.Blocks.S3.Insecure = *f.s3Insecure
	}
	if set["blocks.cache-max-bytes"] {
		co.Blocks.CacheMaxBytes = *f.cacheMaxBytes
	}
	for name, v := range map[string]struct{ dst, src *time.Duration }{"blocks.sync-interval": {&co.Blocks.SyncInterval, f.syncInterval},
		"block-builder.window": {&co.BlockBuilder.Window, f.window}, "block-builder.grace": {&co.BlockBuilder.Grace, f.grace},
		"block-builder.retention": {&co.BlockBuilder.Retention, f.blocksRetention}, "block-builder.compaction-range": {&co.BlockBuilder.CompactionRange, f.compaction}} {
		if set[name] {
			*v.dst = *v.src
		}
	}
	if err := checkBackend(co.Blocks.Backend); err != nil {
		return fmt.Errorf("invalid -blocks.backend: %w", err)
	}
	if co.BlockBuilder.Retention < 0 {
		return fmt.Errorf("invalid block builder retention %s: must not be negative", co.BlockBuilder.Retention)
	}
	return checkCompactionRange(co.BlockBuilder)
}

// checkCompactionRange refuses a compaction range that would never merge
// anything: not a multiple of the window, blocks cross its spans.
func checkCompactionRange(o app.BlockBuilderOptions) error {
	r, w := o.CompactionRange, o.Window
	if r < 0 || r > 0 && w > 0 && (r%w != 0 || r == w) {
		return fmt.Errorf("invalid block builder compaction range %s: want 0 (off) or a multiple of the window %s larger than it", r, w)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseInt32List(s string) ([]int32, error) {
	var out []int32
	for _, p := range splitList(s) {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a partition number", p)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

func joinInt32(ps []int32) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

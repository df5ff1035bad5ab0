package app

import (
	"fmt"
	"time"

	"github.com/weftdb/weft/cluster/blocks"
	"github.com/weftdb/weft/cluster/ingester"
	"github.com/weftdb/weft/cluster/kafkalog"
)

// Target is the role a weft process plays (docs/scale-out.md).
type Target string

// Targets. TargetAll is the single node: every role in one process, no
// Kafka, no bucket.
const (
	TargetAll          Target = "all"
	TargetDistributor  Target = "distributor"
	TargetIngester     Target = "ingester"
	TargetBlockBuilder Target = "block-builder"
	TargetQuerier      Target = "querier"
)

// Targets lists the valid targets.
var Targets = []Target{TargetAll, TargetDistributor, TargetIngester, TargetBlockBuilder, TargetQuerier}

// ParseTarget validates a -target value.
func ParseTarget(s string) (Target, error) {
	for _, t := range Targets {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown target %q: want one of all, distributor, ingester, block-builder, querier", s)
}

// ClusterOptions configure the scale-out roles; TargetAll ignores the rest.
type ClusterOptions struct {
	// Target is the role. Default TargetAll.
	Target Target
	// Kafka is the ingest log (brokers, topic, produce timeout); every
	// role but the querier needs it.
	Kafka kafkalog.Options
	// Partitions is the ingest topic's partition count; 0 asks the
	// brokers at start.
	Partitions int32
	// Ingester configures the ingester role.
	Ingester IngesterOptions
	// Querier configures the querier role.
	Querier QuerierOptions
	// Blocks is the bucket of the block builder and the querier.
	Blocks BlocksOptions
	// BlockBuilder configures the block builder role (its partitions are
	// Ingester.Partitions; empty: every partition).
	BlockBuilder BlockBuilderOptions
}

// Bucket backends.
const (
	BackendNone       = ""
	BackendFilesystem = "filesystem"
	BackendS3         = "s3"
)

// BlocksOptions configure the bucket of blocks.
type BlocksOptions struct {
	// Backend is BackendFilesystem, BackendS3, or BackendNone (no
	// bucket: the querier reads the ingesters only).
	Backend string
	// Dir is the filesystem bucket's directory.
	Dir string
	// S3 configures the S3-API bucket.
	S3 blocks.S3Options
	// SyncInterval is how often the querier lists the bucket
	// (blocks.DefaultSyncInterval).
	SyncInterval time.Duration
	// CacheMaxBytes bounds the querier's local copies of blocks
	// (blocks.ReaderOptions.MaxCacheBytes: least recently read evicted
	// first; negative unbounded).
	CacheMaxBytes int64
}

// BlockBuilderOptions configure the block builder role.
type BlockBuilderOptions struct {
	// Window is a block's record-time width (blocks.DefaultWindow).
	Window time.Duration
	// Grace is how long an idle partition's window stays open past its
	// end (default Window/10).
	Grace time.Duration
	// Retention deletes the builder's partitions' blocks whose newest
	// data is older than this (0: keep them).
	Retention time.Duration
	// CompactionRange merges the builder's blocks of each aligned span of
	// this width into one once the span is closed (0: no compaction). A
	// multiple of Window; default blocks.DefaultCompactionRanges' one.
	CompactionRange time.Duration
}

// newBucket opens the configured bucket; nil without one.
func newBucket(o BlocksOptions) (blocks.Bucket, error) {
	switch o.Backend {
	case BackendNone:
		return nil, nil
	case BackendFilesystem:
		if o.Dir == "" {
			return nil, fmt.Errorf("filesystem bucket: no directory (-blocks.dir)")
		}
		return blocks.NewFSBucket(o.Dir)
	case BackendS3:
		return blocks.NewS3Bucket(o.S3)
	}
	return nil, fmt.Errorf("unknown blocks backend %q: want filesystem or s3", o.Backend)
}

// IngesterOptions configure the ingester role.
type IngesterOptions struct {
	// Partitions are the partitions it owns (required); a second
	// ingester with the same partitions is a replica.
	Partitions []int32
	// ID names it: its consumer group is weft-ingester-<ID>, so replicas
	// need different IDs. Default: the host name.
	ID string
	// MaxLag bounds readiness once caught up (ingester.DefaultMaxLag).
	MaxLag time.Duration
}

// QuerierOptions configure the querier role.
type QuerierOptions struct {
	// Ingesters are the ingesters' base URLs (required).
	Ingesters []string
	// QueryIngestersWithin: older data comes from the bucket's blocks
	// (0: everything from the ingesters).
	QueryIngestersWithin time.Duration
	// DenyPartialResponse refuses answers some partition is missing from.
	DenyPartialResponse bool
	// RuleSharding shares the rule groups among the queriers that set it
	// (they load the same rule files): each group runs on one of them, and
	// a querier that stops hands its groups to the others (ruleShard).
	// Without it a querier evaluates every group: run one such.
	RuleSharding bool
}

// DefaultClusterOptions returns the defaults: the single node.
func DefaultClusterOptions() ClusterOptions {
	return ClusterOptions{
		Target:       TargetAll,
		Kafka:        kafkalog.DefaultOptions(),
		Ingester:     IngesterOptions{MaxLag: ingester.DefaultMaxLag},
		Querier:      QuerierOptions{},
		Blocks:       BlocksOptions{SyncInterval: blocks.DefaultSyncInterval, CacheMaxBytes: blocks.DefaultMaxCacheBytes},
		BlockBuilder: BlockBuilderOptions{Window: blocks.DefaultWindow, CompactionRange: blocks.DefaultCompactionRanges[0]},
	}
}

// check reports a missing required option.
func (o QuerierOptions) check() error {
	if len(o.Ingesters) == 0 {
		return fmt.Errorf("querier: no ingesters (-querier.ingesters)")
	}
	return nil
}

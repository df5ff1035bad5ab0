package app

import (
	"fmt"
	"time"

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
}

// DefaultClusterOptions returns the defaults: the single node.
func DefaultClusterOptions() ClusterOptions {
	return ClusterOptions{
		Target:   TargetAll,
		Kafka:    kafkalog.DefaultOptions(),
		Ingester: IngesterOptions{MaxLag: ingester.DefaultMaxLag},
		Querier:  QuerierOptions{},
	}
}

// check reports a missing required option.
func (o QuerierOptions) check() error {
	if len(o.Ingesters) == 0 {
		return fmt.Errorf("querier: no ingesters (-querier.ingesters)")
	}
	return nil
}

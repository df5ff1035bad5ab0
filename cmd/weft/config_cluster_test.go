package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/cluster/blocks"
	"github.com/weftdb/weft/cmd/weft/internal/app"
)

// TestConfigCluster: the cluster: block and the scale-out flags land in
// app.Options.Cluster, flags winning; the default target is the single node.
func TestConfigCluster(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseFlags(nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.Cluster.Target != app.TargetAll {
		t.Fatalf("default target %q, want all", o.Cluster.Target)
	}

	cfg := filepath.Join(t.TempDir(), "weft.yml")
	if err := os.WriteFile(cfg, []byte(`
cluster:
  target: ingester
  kafka:
    brokers: [k1:9092, k2:9092]
    topic: gpu-ingest
    partitions: 8
    produce_timeout: 5s
  ingester:
    partitions: [0, 1]
    id: ing-a
    max_lag: 1m
  querier:
    ingesters: [http://i0:9338]
    query_ingesters_within: 2h
    deny_partial_response: true
    rule_sharding: true
  blocks:
    backend: s3
    sync_interval: 5s
    cache_max_bytes: 1073741824
    s3: {endpoint: "s3.local:9000", bucket: weft-blocks, access_key: ak, secret_key: sk, insecure: true}
  block_builder:
    window: 30m
    retention: 30d
`), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err = parseFlags([]string{"-config", cfg, "-partitions", "2,3", "-kafka.brokers", "b:9092", "-blocks.s3.bucket", "other"}, &stderr)
	if err != nil {
		t.Fatalf("parse: %v (%s)", err, stderr.String())
	}
	c := o.Cluster
	if c.Target != app.TargetIngester || !reflect.DeepEqual(c.Kafka.Brokers, []string{"b:9092"}) || c.Kafka.Topic != "gpu-ingest" ||
		c.Partitions != 8 || c.Kafka.ProduceTimeout != 5*time.Second {
		t.Errorf("kafka: %+v partitions %d target %q", c.Kafka, c.Partitions, c.Target)
	}
	if !reflect.DeepEqual(c.Ingester.Partitions, []int32{2, 3}) || c.Ingester.ID != "ing-a" || c.Ingester.MaxLag != time.Minute {
		t.Errorf("ingester: %+v", c.Ingester)
	}
	if !reflect.DeepEqual(c.Querier.Ingesters, []string{"http://i0:9338"}) || c.Querier.QueryIngestersWithin != 2*time.Hour || !c.Querier.DenyPartialResponse || !c.Querier.RuleSharding {
		t.Errorf("querier: %+v", c.Querier)
	}

	b := c.Blocks
	if b.Backend != app.BackendS3 || b.SyncInterval != 5*time.Second || b.CacheMaxBytes != 1<<30 || b.S3.Endpoint != "s3.local:9000" || b.S3.Bucket != "other" ||
		b.S3.AccessKey != "ak" || b.S3.SecretKey != "sk" || !b.S3.Insecure || c.BlockBuilder.Window != 30*time.Minute ||
		c.BlockBuilder.Retention != 30*24*time.Hour {
		t.Errorf("blocks: %+v builder %+v", b, c.BlockBuilder)
	}

	// The cache bound: its default, the file's, a flag's.
	if d, _ := parseFlags(nil, &stderr); d.Cluster.Blocks.CacheMaxBytes != blocks.DefaultMaxCacheBytes {
		t.Errorf("default blocks cache bound %d, want %d", d.Cluster.Blocks.CacheMaxBytes, int64(blocks.DefaultMaxCacheBytes))
	}
	if o2, err := parseFlags([]string{"-config", cfg, "-blocks.cache-max-bytes", "-1"}, &stderr); err != nil || o2.Cluster.Blocks.CacheMaxBytes != -1 {
		t.Errorf("-blocks.cache-max-bytes -1 over the file: %v, %v", o2.Cluster.Blocks.CacheMaxBytes, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-target", "router"}, "unknown target"},
		{[]string{"-partitions", "0,x"}, "not a partition number"},
		{[]string{"-kafka.partitions", "-1"}, "must not be negative"},
		{[]string{"-blocks.backend", "gcs"}, "want filesystem or s3"},
		{[]string{"-block-builder.retention", "-1h"}, "must not be negative"},
	} {
		if _, err := parseFlags(tc.args, &stderr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	// The effective configuration (status/config) shows the block, with
	// the S3 secret redacted.
	eff, err := effectiveConfigYAML(o, "info")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(eff, "secret_key: sk") || !strings.Contains(eff, "secret_key: <secret>") || !strings.Contains(eff, "target: ingester") ||
		!strings.Contains(eff, "cache_max_bytes: 1073741824") {
		t.Errorf("effective configuration's cluster block:\n%s", eff)
	}

	bad := filepath.Join(t.TempDir(), "bad.yml")
	if err := os.WriteFile(bad, []byte("cluster:\n  kafka:\n    brokerz: [x]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfigFile(bad); err == nil || !strings.Contains(err.Error(), `line 3: unknown key "brokerz" in cluster.kafka`) {
		t.Errorf("unknown cluster key: %v", err)
	}
}

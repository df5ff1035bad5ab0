package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weftdb/weft/cluster/kafkalog"
	"github.com/weftdb/weft/ruler"
)

// TestRuleShardingAcrossQueriers: two queriers with -querier.rule-sharding
// and the same rule file evaluate disjoint sets of its groups that
// together are all of them; when one stops, the other evaluates them all.
func TestRuleShardingAcrossQueriers(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, kafkalog.DefaultTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	dir := t.TempDir()
	var file strings.Builder
	file.WriteString("groups:\n")
	var all []string
	for i := range 8 {
		name := fmt.Sprintf("g%d", i)
		all = append(all, name)
		fmt.Fprintf(&file, "  - name: %s\n    rules:\n      - record: r%d\n        expr: vector(%d)\n", name, i, i)
	}
	rules := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rules, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	newQuerier := func(name string) *App {
		opts := testOptions(t, filepath.Join(dir, name))
		opts.Cluster.Target = TargetQuerier
		opts.Cluster.Partitions = 4
		opts.Cluster.Kafka.Brokers = kc.ListenAddrs()
		opts.Cluster.Querier.Ingesters = []string{"http://127.0.0.1:1"}
		opts.Cluster.Querier.RuleSharding = true
		opts.Rules.Config = ruler.Config{RuleFiles: []string{rules}}
		a, err := New(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return a
	}
	groups := func(a *App) []string {
		var out []string
		for _, g := range a.rules.ruler.RuleGroups() {
			out = append(out, g.Name())
		}
		return out
	}
	// await waits until every querier holds some partitions and their
	// groups are each group once.
	await := func(qs ...*App) {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for {
			var got []string
			var each [][]string
			holds := true
			for _, a := range qs {
				h := a.role.rules.shard.held.Load()
				holds = holds && h != nil && len(*h) > 0
				g := groups(a)
				each = append(each, g)
				got = append(got, g...)
			}
			slices.Sort(got)
			if holds && slices.Equal(got, all) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("queriers evaluate %v, want each of %v once", each, all)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	a := newQuerier("a")
	await(a)
	b := newQuerier("b")
	await(a, b)
	// Both hold a share of the partitions while both run, and say so.
	total := 0.0
	for _, q := range []*App{a, b} {
		h := q.role.rules.shard.held.Load()
		if h == nil || len(*h) == 0 || len(*h) == 4 {
			t.Errorf("a querier holds %v of the 4 partitions beside another", h)
		}
		total += scrapeGauge(t, "http://"+q.Addr().String()+"/metrics", "weft_ruler_shard_partitions")
	}
	if total != 4 {
		t.Errorf("weft_ruler_shard_partitions sums to %v over the two queriers, want 4", total)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	await(b)
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// scrapeGauge returns the value of an unlabelled metric on a /metrics page.
func scrapeGauge(t *testing.T, url, name string) float64 {
	t.Helper()
	_, body := getBody(t, http.DefaultClient, url)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			return f
		}
	}
	t.Fatalf("%s not on %s", name, url)
	return 0
}

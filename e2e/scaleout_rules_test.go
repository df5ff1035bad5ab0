package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shardGroups is how many groups the sharded queriers share.
const shardGroups = 8

// checkRuleSharding: two queriers with -querier.rule-sharding and the same
// rule file evaluate each group on one of them, both holding some; after
// one is SIGKILLed the other takes its groups once the brokers time its
// session out, and every group's series goes on.
func checkRuleSharding(t *testing.T, c *scaleCluster) {
	t.Helper()
	var b strings.Builder
	b.WriteString("groups:\n")
	for i := range shardGroups {
		fmt.Fprintf(&b, "  - name: shard-%d\n    interval: 1s\n    rules:\n      - record: e2e_shard_g%d\n        expr: vector(%d)\n", i, i, i)
	}
	rules := filepath.Join(c.tmp, "shard-rules.yml")
	cfg := filepath.Join(c.tmp, "shard-querier.yml")
	if err := os.WriteFile(rules, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("rule_files: ["+strconv.Quote(rules)+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var qs []*role
	for _, name := range []string{"ruler-a", "ruler-b"} {
		r := &role{name: name, dir: filepath.Join(c.tmp, name), addr: holdAddr(t),
			args: slices.Concat(c.querierArgs, []string{"-config", cfg, "-querier.rule-sharding"})}
		r.start(t, true)
		qs = append(qs, r)
	}
	defer func() {
		for _, r := range qs {
			if r.p != nil {
				r.kill()
			}
		}
	}()
	groupsOf := func(r *role) []string {
		res, err := get(r.url(), "/api/v1/rules", nil)
		if err != nil {
			t.Fatalf("rules of %s: %v", r.name, err)
		}
		var d struct {
			Groups []struct {
				Name string `json:"name"`
			} `json:"groups"`
		}
		if err := json.Unmarshal(res.Data, &d); err != nil {
			t.Fatalf("rules of %s: %s: %v", r.name, res.Data, err)
		}
		var out []string
		for _, g := range d.Groups {
			out = append(out, g.Name)
		}
		return out
	}
	// await waits until the running queriers evaluate every group once,
	// each some of them.
	await := func(rs ...*role) {
		t.Helper()
		deadline := time.Now().Add(clusterTimeout)
		for {
			var all []string
			each := map[string][]string{}
			some := true
			for _, r := range rs {
				g := groupsOf(r)
				each[r.name] = g
				some = some && len(g) > 0
				all = append(all, g...)
			}
			slices.Sort(all)
			if some && len(all) == shardGroups && len(slices.Compact(all)) == shardGroups {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("groups evaluated: %v, want each of %d once, every querier some", each, shardGroups)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	// fresh waits until every group's series has a sample newer than since.
	fresh := func(since time.Time) {
		t.Helper()
		deadline := time.Now().Add(clusterTimeout)
		for {
			// The series with a sample in (since, now]; last_over_time
			// keeps their names apart.
			now := time.Now()
			window := max(int(now.Sub(since).Seconds())+1, 1)
			q := url.Values{"query": {fmt.Sprintf(`count(last_over_time({__name__=~"e2e_shard_g.+"}[%ds]))`, window)}, "time": {fsec(now)}}
			res, err := get(c.querier.url(), "/api/v1/query", q)
			if err == nil && strings.Contains(string(res.Data), fmt.Sprintf(`"%d"]`, shardGroups)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("series of every group newer than %s: %v %v", since.Format(time.RFC3339), err, res.Data)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	await(qs...)
	fresh(time.Now())
	qs[0].kill()
	qs[0].p = nil
	killed := time.Now()
	await(qs[1])
	fresh(killed.Add(time.Second))
}

package querier

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/index"
)

// replicatedCluster is fill's data in a single node and in ingesters of
// partition 0 (two: a replica) and 1, and a started querier of those; base
// is the data's start.
func replicatedCluster(t *testing.T) (single *node, q *Querier, base time.Time) {
	t.Helper()
	base = time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	single = newNode(t, nil)
	p0a, p0b, p1 := newNode(t, []int32{0}), newNode(t, []int32{0}), newNode(t, []int32{1})
	fill(t, base, single, map[int32][]*node{0: {p0a, p0b}, 1: {p1}})
	q, err := New(Options{Ingesters: []string{p0a.srv.URL, p0b.srv.URL, p1.srv.URL}, TotalPartitions: total, StatusInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	q.Start(context.Background())
	t.Cleanup(q.Stop)
	return single, q, base
}

// TestTSDBStatusMatchesSingleNode: status/tsdb merged over the ingesters
// (partition 0 has a replica, counted once) equals a single node's fed the
// same data: series in total, per metric name and per label pair, values
// per label name, the time range.
func TestTSDBStatusMatchesSingleNode(t *testing.T) {
	single, q, _ := replicatedCluster(t)

	resp, err := http.Get(single.srv.URL + "/api/v1/status/tsdb?limit=1000")
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Data TSDBStatus `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := env.Data
	got, err := q.TSDBStatus(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want.HeadStats.NumSeries != 24 || got.HeadStats.NumSeries != want.HeadStats.NumSeries {
		t.Errorf("series: querier %d, single node %d (want 24)", got.HeadStats.NumSeries, want.HeadStats.NumSeries)
	}
	if got.HeadStats.MinTime != want.HeadStats.MinTime || got.HeadStats.MaxTime != want.HeadStats.MaxTime {
		t.Errorf("time range: querier %+v, single node %+v", got.HeadStats, want.HeadStats)
	}
	for _, c := range []struct {
		name      string
		got, want []Stat
	}{
		{"seriesCountByMetricName", got.SeriesCountByMetricName, want.SeriesCountByMetricName},
		{"seriesCountByLabelValuePair", got.SeriesCountByLabelValuePair, want.SeriesCountByLabelValuePair},
		{"labelValueCountByLabelName", got.LabelValueCountByLabelName, want.LabelValueCountByLabelName},
	} {
		if len(c.want) == 0 || !sameStats(c.got, c.want) {
			t.Errorf("%s: querier %v, single node %v", c.name, c.got, c.want)
		}
	}

	// Values repeat across partitions: counted once, not per ingester.
	if i := slices.IndexFunc(got.LabelValueCountByLabelName, func(s Stat) bool { return s.Name == "gpu" }); i < 0 || got.LabelValueCountByLabelName[i].Value != 8 {
		t.Errorf("values of gpu: %v, want 8", got.LabelValueCountByLabelName)
	}

	// A top list keeps the largest.
	top2, err := q.TSDBStatus(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(top2.SeriesCountByLabelValuePair) != 2 || top2.SeriesCountByLabelValuePair[0].Value < top2.SeriesCountByLabelValuePair[1].Value ||
		top2.SeriesCountByLabelValuePair[0] != sortedStats(want.SeriesCountByLabelValuePair)[0] {
		t.Errorf("top 2 label pairs %v of %v", top2.SeriesCountByLabelValuePair, want.SeriesCountByLabelValuePair)
	}
}

// sortedStats orders a top list as the querier does: largest first, by
// name on ties (the single node's order of ties is its own).
func sortedStats(ss []Stat) []Stat {
	m := map[string]uint64{}
	add(m, ss)
	return top(m, len(ss))
}

func sameStats(a, b []Stat) bool { return slices.Equal(sortedStats(a), sortedStats(b)) }

// TestChurnMatchesSingleNode: churn summed over the ingesters (partition
// 0's replica counted once) equals a single node's, hour by hour and
// partition by partition, for every series and for a selector.
func TestChurnMatchesSingleNode(t *testing.T) {
	single, q, base := replicatedCluster(t)
	ctx := context.Background()
	mint, maxt := base.Add(-2*time.Hour).UnixMilli(), time.Now().UnixMilli()
	for _, sets := range [][][]*labels.Matcher{nil, {{labels.MustNewMatcher(labels.MatchEqual, "host", "n1")}}} {
		want, err := api.StoreCardinality{DB: single.sub.Metrics()}.Churn(ctx, mint, maxt, sets...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.Churn(ctx, mint, maxt, sets...)
		if err != nil {
			t.Fatal(err)
		}
		var created uint64
		for _, h := range want.Hours {
			created += h.Created
		}
		if created == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("churn of %v:\n querier %+v\n single  %+v", sets, got, want)
		}
	}
	if _, err := q.Churn(ctx, maxt, mint); !errors.Is(err, index.ErrChurnRange) {
		t.Errorf("churn of an inverted range: %v, want ErrChurnRange", err)
	}
}

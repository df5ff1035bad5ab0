package querier

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/cluster/record"
)

// ExemplarQuerier implements storage.ExemplarQueryable over the ingesters
// (blocks hold no exemplars): each ingester's share of the partitions
// answers Prometheus' /api/v1/query_exemplars for the selectors, and keeps
// the series of that share only, so a replica's twin is not counted twice.
func (q *Querier) ExemplarQuerier(ctx context.Context) (promstorage.ExemplarQuerier, error) {
	return &exemplarQuerier{q: q, ctx: ctx}, nil
}

type exemplarQuerier struct {
	q   *Querier
	ctx context.Context
}

// Select implements storage.ExemplarQuerier: one result per series, sorted
// by its labels.
func (e *exemplarQuerier) Select(start, end int64, matchers ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	if len(matchers) == 0 {
		return nil, nil
	}
	sels := make([]string, len(matchers))
	for i, ms := range matchers {
		sels[i] = selector(ms)
	}
	query := strings.Join(sels, " or ")
	got, missing, err := fanout(e.ctx, e.q, func(ctx context.Context, in *ingester, parts []int32, total int32) ([]exemplar.QueryResult, error) {
		res, err := e.q.exemplarQuery(ctx, in.base, query, start, end)
		if err != nil {
			return nil, err
		}
		return slices.DeleteFunc(res, func(r exemplar.QueryResult) bool {
			return !slices.Contains(parts, record.PartitionOf(r.SeriesLabels, total))
		}), nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := e.q.partial(e.ctx, missing); err != nil {
		return nil, err
	}
	out := slices.Concat(got...)
	slices.SortFunc(out, func(a, b exemplar.QueryResult) int { return labels.Compare(a.SeriesLabels, b.SeriesLabels) })
	return out, nil
}

// exemplarQuery asks one node's Prometheus API for the exemplars of query
// in [start, end] (unix ms).
func (q *Querier) exemplarQuery(ctx context.Context, base, query string, start, end int64) ([]exemplar.QueryResult, error) {
	form := url.Values{"query": {query}, "start": {formatMs(start)}, "end": {formatMs(end)}}
	var data []struct {
		SeriesLabels map[string]string `json:"seriesLabels"`
		Exemplars    []struct {
			Labels    map[string]string `json:"labels"`
			Value     string            `json:"value"`
			Timestamp float64           `json:"timestamp"`
		} `json:"exemplars"`
	}
	if err := q.promGet(ctx, base, "/api/v1/query_exemplars", form, &data); err != nil {
		return nil, err
	}
	out := make([]exemplar.QueryResult, 0, len(data))
	for _, d := range data {
		r := exemplar.QueryResult{SeriesLabels: labels.FromMap(d.SeriesLabels)}
		for _, ex := range d.Exemplars {
			v, err := strconv.ParseFloat(ex.Value, 64)
			if err != nil {
				return nil, fmt.Errorf("query_exemplars %s: value %q: %w", base, ex.Value, err)
			}
			// Seconds with millisecond decimals, as the API writes them.
			ts := int64(ex.Timestamp*1000 + 0.5)
			if ex.Timestamp < 0 {
				ts = int64(ex.Timestamp*1000 - 0.5)
			}
			r.Exemplars = append(r.Exemplars, exemplar.Exemplar{Labels: labels.FromMap(ex.Labels), Value: v, Ts: ts, HasTs: true})
		}
		out = append(out, r)
	}
	return out, nil
}

// Metadata implements the API's metadata reader over the ingesters: the
// union of their /api/v1/metadata (metric metadata is per name, not per
// partition; blocks hold none), each metric's distinct entries in the
// order first seen, at most limit metrics (limit < 0: all).
func (q *Querier) Metadata(ctx context.Context, metric string, limit int) (map[string][]metadata.Metadata, error) {
	form := url.Values{}
	if metric != "" {
		form.Set("metric", metric)
	}
	if limit >= 0 {
		form.Set("limit", strconv.Itoa(limit))
	}
	type entry struct {
		Type string `json:"type"`
		Help string `json:"help"`
		Unit string `json:"unit"`
	}
	got, missing, err := fanout(ctx, q, func(ctx context.Context, in *ingester, _ []int32, _ int32) (map[string][]entry, error) {
		var data map[string][]entry
		err := q.promGet(ctx, in.base, "/api/v1/metadata", form, &data)
		return data, err
	})
	if err != nil {
		return nil, err
	}
	if _, err := q.partial(ctx, missing); err != nil {
		return nil, err
	}
	out := map[string][]metadata.Metadata{}
	for _, m := range got {
		for name, es := range m {
			if _, ok := out[name]; !ok && limit >= 0 && len(out) >= limit {
				continue
			}
			for _, e := range es {
				md := metadata.Metadata{Type: model.MetricType(e.Type), Help: e.Help, Unit: e.Unit}
				if !slices.Contains(out[name], md) {
					out[name] = append(out[name], md)
				}
			}
		}
	}
	return out, nil
}

// promGet GETs one node's Prometheus API path and decodes its data into
// out; a 400 is readapi.ErrBadRequest (the query's fault).
func (q *Querier) promGet(ctx context.Context, base, path string, form url.Values, out any) error {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path+"?"+form.Encode(), nil)
	if err != nil {
		return err
	}
	readapi.SetHeaders(ctx, hreq.Header)
	resp, err := q.hc.Do(hreq)
	if err != nil {
		return fmt.Errorf("%s %s: %w", path, base, err)
	}
	defer resp.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxReadResponseBytes)).Decode(&env); err != nil {
		return fmt.Errorf("%s %s: %s: %w", path, base, resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || env.Status != "success" {
		err := fmt.Errorf("%s %s: %s: %s", path, base, resp.Status, env.Error)
		if resp.StatusCode == http.StatusBadRequest {
			err = fmt.Errorf("%w: %w", readapi.ErrBadRequest, err)
		}
		return err
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("%s %s: decode: %w", path, base, err)
	}
	return nil
}

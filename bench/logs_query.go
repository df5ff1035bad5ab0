package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// weftNeedleLimit bounds the lines a needle query returns; a trace ID is on
// a handful of lines, so hitting it means a wrong answer.
const weftNeedleLimit = 1000

// weftLogs queries weft's Loki API with LogQL.
type weftLogs struct{}

func (weftLogs) NeedleQuery(needle string) string { return `{job=~".+"} |= "` + needle + `"` }
func (weftLogs) AggQuery() string {
	return `sum by (run_id) (count_over_time({job="trainer"}[1h]))`
}

func (q weftLogs) Lines(ctx context.Context, c *http.Client, base, needle string, start, end int64) ([]LogLine, error) {
	v := url.Values{"query": {q.NeedleQuery(needle)}, "start": {itoa64(start)}, "end": {itoa64(end)},
		"limit": {strconv.Itoa(weftNeedleLimit)}, "direction": {"forward"}}
	var r struct {
		Data struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Values [][]string `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(ctx, c, base+"/loki/api/v1/query_range?"+v.Encode(), &r); err != nil {
		return nil, err
	}
	if r.Data.ResultType != "streams" {
		return nil, fmt.Errorf("result type %q, want streams", r.Data.ResultType)
	}
	var out []LogLine
	for _, s := range r.Data.Result {
		for _, e := range s.Values {
			if len(e) < 2 {
				return nil, fmt.Errorf("entry with %d fields", len(e))
			}
			ts, err := strconv.ParseInt(e[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("entry timestamp: %w", err)
			}
			out = append(out, LogLine{TS: ts, Line: e[1]})
		}
	}
	return out, nil
}

// weftVector runs an instant metric query at t (ns).
func weftVector(ctx context.Context, c *http.Client, base, query string, t int64) (map[string]int, error) {
	v := url.Values{"query": {query}, "time": {itoa64(t)}}
	var r struct {
		Data struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(ctx, c, base+"/loki/api/v1/query?"+v.Encode(), &r); err != nil {
		return nil, err
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("result type %q, want vector", r.Data.ResultType)
	}
	out := map[string]int{}
	for _, s := range r.Data.Result {
		if len(s.Value) != 2 {
			return nil, fmt.Errorf("sample with %d fields", len(s.Value))
		}
		str, _ := s.Value[1].(string)
		n, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("sample value %q: %w", str, err)
		}
		out[s.Metric["run_id"]] = int(n)
	}
	return out, nil
}

// CountByRun counts over (start, end]: end is the evaluation time and the
// range is end-start (both ms; no line lies on either bound).
func (q weftLogs) CountByRun(ctx context.Context, c *http.Client, base string, start, end int64) (map[string]int, error) {
	if end-start != int64(time.Hour) {
		return nil, fmt.Errorf("aggregation window %v, want 1h", time.Duration(end-start))
	}
	return weftVector(ctx, c, base, q.AggQuery(), end)
}

func (weftLogs) Total(ctx context.Context, c *http.Client, base string, start, end int64) (int, error) {
	m, err := weftVector(ctx, c, base, fmt.Sprintf(`sum(count_over_time({job=~".+"}[%dms]))`, (end-start)/int64(time.Millisecond)), end)
	if err != nil {
		return 0, err
	}
	return m[""], nil
}

// victoriaLogs queries VictoriaLogs with LogsQL at /select/logsql/query,
// passing the time range as start and end.
type victoriaLogs struct{}

func (victoriaLogs) NeedleQuery(needle string) string { return `"` + needle + `"` }
func (victoriaLogs) AggQuery() string {
	return `{job="trainer"} | stats by (run_id) count() as n`
}

func (q victoriaLogs) Lines(ctx context.Context, c *http.Client, base, needle string, start, end int64) ([]LogLine, error) {
	var out []LogLine
	err := vlQuery(ctx, c, base, q.NeedleQuery(needle), start, end, func(row map[string]string) error {
		t, err := time.Parse(time.RFC3339Nano, row["_time"])
		if err != nil {
			return fmt.Errorf("_time: %w", err)
		}
		out = append(out, LogLine{TS: t.UnixNano(), Line: row["_msg"]})
		return nil
	})
	return out, err
}

func (q victoriaLogs) CountByRun(ctx context.Context, c *http.Client, base string, start, end int64) (map[string]int, error) {
	out := map[string]int{}
	err := vlQuery(ctx, c, base, q.AggQuery(), start, end, func(row map[string]string) error {
		n, err := strconv.Atoi(row["n"])
		if err != nil {
			return fmt.Errorf("count %q: %w", row["n"], err)
		}
		out[row["run_id"]] = n
		return nil
	})
	return out, err
}

func (victoriaLogs) Total(ctx context.Context, c *http.Client, base string, start, end int64) (int, error) {
	n := 0
	err := vlQuery(ctx, c, base, `* | stats count() as n`, start, end, func(row map[string]string) error {
		v, err := strconv.Atoi(row["n"])
		n += v
		return err
	})
	return n, err
}

// vlQuery runs a LogsQL query over [start, end] and calls f for every JSON
// line of the answer.
func vlQuery(ctx context.Context, c *http.Client, base, query string, start, end int64, f func(map[string]string) error) error {
	v := url.Values{"query": {query}, "start": {vlTime(start)}, "end": {vlTime(end)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/select/logsql/query", strings.NewReader(v.Encode()))
	if err != nil {
		return fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("query: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		row := map[string]string{}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return fmt.Errorf("decode answer line: %w", err)
		}
		if err := f(row); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	return nil
}

func vlTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// getJSON GETs u and decodes a 200 answer into v.
func getJSON(ctx context.Context, c *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("new request: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("query: HTTP %d: %s", resp.StatusCode, trunc(string(b), 300))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

// sameLines compares two answers as multisets of (timestamp, line).
func sameLines(a, b []LogLine) bool {
	if len(a) != len(b) {
		return false
	}
	cmp := func(x, y LogLine) int {
		if x.TS != y.TS {
			return int(min(max(x.TS-y.TS, -1), 1))
		}
		return strings.Compare(x.Line, y.Line)
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

// sameCounts compares per-run counts, ignoring zero entries.
func sameCounts(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

package readapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

type strongKey struct{}

// WithStrongConsistency marks ctx so that the requests made with it ask
// for read-after-write (HeaderStrong).
func WithStrongConsistency(ctx context.Context) context.Context {
	return context.WithValue(ctx, strongKey{}, true)
}

// StrongConsistency reports whether ctx was marked by WithStrongConsistency.
func StrongConsistency(ctx context.Context) bool {
	v, _ := ctx.Value(strongKey{}).(bool)
	return v
}

// SetHeaders sets on req the headers ctx asks for (HeaderStrong); the
// querier's remote reads use it too.
func SetHeaders(ctx context.Context, h http.Header) {
	if StrongConsistency(ctx) {
		h.Set(HeaderStrong, StrongValue)
	}
}

// Client calls one node's internal read API. Safe for concurrent use.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client of the node at base (http://host:port); hc nil
// means http.DefaultClient.
func NewClient(base string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(base, "/"), hc: hc}
}

// Base returns the node's base URL.
func (c *Client) Base() string { return c.base }

func (c *Client) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	SetHeaders(ctx, req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, c.base+path, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		err := fmt.Errorf("%s %s: %s: %s", method, c.base+path, resp.Status, strings.TrimSpace(string(msg)))
		if resp.StatusCode == http.StatusBadRequest {
			err = fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		return nil, err
	}
	return resp, nil
}

func (c *Client) getJSON(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s answer: %w", path, err)
	}
	return nil
}

// Status returns the node's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.getJSON(ctx, http.MethodGet, PathStatus, nil, &st)
	return st, err
}

// LabelNames returns the label names of the streams req selects.
func (c *Client) LabelNames(ctx context.Context, req Request) ([]string, error) {
	var out StringsResponse
	err := c.getJSON(ctx, http.MethodPost, PathLabels, req, &out)
	return out.Values, err
}

// LabelValues returns the values of req.Name.
func (c *Client) LabelValues(ctx context.Context, req Request) ([]string, error) {
	var out StringsResponse
	err := c.getJSON(ctx, http.MethodPost, PathValues, req, &out)
	return out.Values, err
}

// Series returns the label sets of the streams req selects.
func (c *Client) Series(ctx context.Context, req Request) ([]labels.Labels, error) {
	var out SeriesResponse
	if err := c.getJSON(ctx, http.MethodPost, PathSeries, req, &out); err != nil {
		return nil, err
	}
	ss := make([]labels.Labels, 0, len(out.Series))
	for _, s := range out.Series {
		ls, err := stringsToLabels(s)
		if err != nil {
			return nil, fmt.Errorf("decode series answer: %w", err)
		}
		ss = append(ss, ls)
	}
	return ss, nil
}

// StreamTotal is one stream's totals.
type StreamTotal struct {
	Labels labels.Labels
	Stats  logstore.Stats
}

// Totals returns per-stream totals (Streams 1) of the streams req selects.
func (c *Client) Totals(ctx context.Context, req Request) ([]StreamTotal, error) {
	var out TotalsResponse
	if err := c.getJSON(ctx, http.MethodPost, PathTotals, req, &out); err != nil {
		return nil, err
	}
	ts := make([]StreamTotal, 0, len(out.Streams))
	for _, s := range out.Streams {
		ls, err := stringsToLabels(s.Labels)
		if err != nil {
			return nil, fmt.Errorf("decode totals answer: %w", err)
		}
		ts = append(ts, StreamTotal{Labels: ls, Stats: logstore.Stats{Streams: 1, Chunks: s.Chunks, Entries: s.Entries, Bytes: s.Bytes}})
	}
	return ts, nil
}

// Select streams the entries req selects. The iterator yields stream
// pieces in the server's order; it fails with ErrTruncated when the answer
// ends early. It must be closed.
func (c *Client) Select(ctx context.Context, req Request) (logentry.Iterator, error) {
	resp, err := c.do(ctx, http.MethodPost, PathSelect, req)
	if err != nil {
		return nil, err
	}
	return &frameIterator{body: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10)}, nil
}

// frameIterator decodes a select answer frame by frame.
type frameIterator struct {
	body io.ReadCloser
	r    *bufio.Reader
	buf  []byte
	cur  []logstore.PushStream
	si   int // stream in cur
	ei   int // entry of cur[si]; the next to return
	ls   labels.Labels
	e    logentry.Entry
	done bool
	err  error
}

func (it *frameIterator) Next() bool {
	for {
		if it.done || it.err != nil {
			return false
		}
		for it.si < len(it.cur) {
			s := &it.cur[it.si]
			if it.ei < len(s.Entries) {
				it.ls, it.e = s.Labels, s.Entries[it.ei]
				it.ei++
				return true
			}
			it.si, it.ei = it.si+1, 0
		}
		typ, payload, err := readFrame(it.r, it.buf)
		if err != nil {
			it.err = err
			return false
		}
		it.buf = payload
		switch typ {
		case frameEnd:
			it.done = true
			return false
		case frameError:
			it.err = fmt.Errorf("remote select failed: %s", payload)
			return false
		case frameData:
			rec, err := record.Decode(payload)
			if err != nil || rec.Kind != record.KindLogs {
				it.err = fmt.Errorf("decode select frame: %w", err)
				return false
			}
			it.cur, it.si, it.ei = rec.Streams, 0, 0
		default:
			it.err = fmt.Errorf("unknown select frame type %q", typ)
			return false
		}
	}
}

func (it *frameIterator) At() (labels.Labels, logentry.Entry) { return it.ls, it.e }
func (it *frameIterator) Err() error                          { return it.err }
func (it *frameIterator) Close() error                        { return it.body.Close() }

package querier

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"

	"github.com/weftdb/weft/cluster/readapi"
)

// maxReadResponseBytes bounds a decoded remote-read answer (Prometheus'
// own client has no bound; a querier must not be blown up by one answer).
const maxReadResponseBytes = 1 << 30

// remoteRead selects series from one node over Prometheus' remote-read
// protocol, sorted by labels. It asks for the streamed XOR chunks response,
// decoded series by series as the set is read (the node's chunks are not
// re-encoded as samples, nor is the whole answer held), and still takes a
// samples response from a node that only has that. The set holds the
// response open until it is exhausted or closer is called; a failure in
// the middle of the stream is the set's error (not retried on a replica).
func (q *Querier) remoteRead(ctx context.Context, base string, mint, maxt int64, hints *promstorage.SelectHints, ms []*labels.Matcher) (set promstorage.SeriesSet, closer func() error, err error) {
	query, err := remote.ToQuery(mint, maxt, ms, hints)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", readapi.ErrBadRequest, err)
	}
	req := &prompb.ReadRequest{Queries: []*prompb.Query{query},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES}}
	raw, err := req.Marshal()
	if err != nil {
		return nil, nil, fmt.Errorf("encode remote read: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/read", bytes.NewReader(s2.EncodeSnappy(nil, raw)))
	if err != nil {
		cancel()
		return nil, nil, err
	}
	hreq.Header.Set("Content-Encoding", "snappy")
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	readapi.SetHeaders(ctx, hreq.Header)
	resp, err := q.hc.Do(hreq)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("remote read %s: %w", base, err)
	}
	if resp.StatusCode/100 == 2 && strings.HasPrefix(resp.Header.Get("Content-Type"), streamedContentType) {
		body := resp.Body
		closer = func() error {
			cancel()
			return body.Close()
		}
		rd := remote.NewChunkedReader(body, maxFrameBytes, nil)
		return &readErrSet{SeriesSet: remote.NewChunkedSeriesSet(rd, body, mint, maxt, func(error) { cancel() }), base: base}, closer, nil
	}
	defer cancel()
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReadResponseBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("remote read %s: %w", base, err)
	}
	if resp.StatusCode/100 != 2 {
		err := fmt.Errorf("remote read %s: %s: %s", base, resp.Status, strings.TrimSpace(string(body)))
		if resp.StatusCode == http.StatusBadRequest {
			err = fmt.Errorf("%w: %w", readapi.ErrBadRequest, err)
		}
		return nil, nil, err
	}
	n, err := s2.DecodedLen(body)
	if err != nil || n > maxReadResponseBytes {
		return nil, nil, fmt.Errorf("remote read %s: bad snappy answer (%d bytes): %v", base, n, err)
	}
	dec, err := s2.Decode(nil, body)
	if err != nil {
		return nil, nil, fmt.Errorf("remote read %s: %w", base, err)
	}
	var rr prompb.ReadResponse
	if err := rr.Unmarshal(dec); err != nil {
		return nil, nil, fmt.Errorf("remote read %s: decode: %w", base, err)
	}
	if len(rr.Results) != 1 {
		return nil, nil, fmt.Errorf("remote read %s: %d results for 1 query", base, len(rr.Results))
	}
	return remote.FromQueryResult(true, rr.Results[0]), nil, nil
}

// maxFrameBytes bounds one frame (one series' chunks) of a streamed
// answer: Prometheus' own client limit (config.DefaultChunkedReadLimit).
const maxFrameBytes = 50e6

// streamedContentType is the streamed remote-read response's media type.
const streamedContentType = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"

// readErrSet names the node in a streamed set's error.
type readErrSet struct {
	promstorage.SeriesSet
	base string
}

func (s *readErrSet) Err() error {
	if err := s.SeriesSet.Err(); err != nil {
		return fmt.Errorf("remote read %s: %w", s.base, err)
	}
	return nil
}

// labelQuery asks one node's Prometheus API for label names (name == "")
// or a label's values.
func (q *Querier) labelQuery(ctx context.Context, base, name string, mint, maxt int64, ms []*labels.Matcher) ([]string, error) {
	path := "/api/v1/labels"
	if name != "" {
		path = "/api/v1/label/" + url.PathEscape(name) + "/values"
	}
	form := url.Values{}
	form.Set("start", formatMs(mint))
	form.Set("end", formatMs(maxt))
	if len(ms) > 0 {
		form.Add("match[]", selector(ms))
	}
	// GET: the label values endpoint takes no POST.
	var vals []string
	if err := q.promGet(ctx, base, path, form, &vals); err != nil {
		return nil, err
	}
	return vals, nil
}

// formatMs formats unix ms as the Prometheus API's float seconds.
func formatMs(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
}

// selector formats matchers as a series selector.
func selector(ms []*labels.Matcher) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return "{" + strings.Join(parts, ",") + "}"
}

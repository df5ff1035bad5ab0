package gpuagent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// Remote-write protocol headers (Prometheus remote write 1.0 and 2.0 specs).
const (
	contentTypeRW2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
	contentTypeRW1 = "application/x-protobuf"
	versionRW2     = "2.0.0"
	versionRW1     = "0.1.0"
)

// EncodeRW2 encodes series with timestamp ts as a remote write 2.0 request
// (uncompressed protobuf), with type, help and unit metadata per series.
func EncodeRW2(series []Series, ts time.Time) ([]byte, error) {
	return EncodeRW2Labels(series, ts, nil)
}

// EncodeRW2Labels is EncodeRW2 with extra labels (sorted by name) added to
// every series, as a scrape adds its target labels; a series' own label of
// the same name wins. The agent adds instance this way.
func EncodeRW2Labels(series []Series, ts time.Time, extra []Label) ([]byte, error) {
	st := writev2.NewSymbolTable()
	req := writev2.Request{Timeseries: make([]writev2.TimeSeries, 0, len(series))}
	ms := ts.UnixMilli()
	for _, s := range series {
		refs := make([]uint32, 0, 2*(len(s.Labels)+len(extra)+1))
		// __name__ sorts before every label that starts with a letter; labels
		// are already sorted by the renderer, extra is merged in order.
		refs = append(refs, st.Symbolize("__name__"), st.Symbolize(s.Name))
		e := 0
		for _, l := range s.Labels {
			for ; e < len(extra) && extra[e].Name <= l.Name; e++ {
				if extra[e].Name != l.Name {
					refs = append(refs, st.Symbolize(extra[e].Name), st.Symbolize(extra[e].Value))
				}
			}
			refs = append(refs, st.Symbolize(l.Name), st.Symbolize(l.Value))
		}
		for ; e < len(extra); e++ {
			refs = append(refs, st.Symbolize(extra[e].Name), st.Symbolize(extra[e].Value))
		}
		typ := writev2.Metadata_METRIC_TYPE_GAUGE
		if s.Type == Counter {
			typ = writev2.Metadata_METRIC_TYPE_COUNTER
		}
		req.Timeseries = append(req.Timeseries, writev2.TimeSeries{
			LabelsRefs: refs,
			Samples:    []writev2.Sample{{Value: s.Value, Timestamp: ms}},
			Metadata:   writev2.Metadata{Type: typ, HelpRef: st.Symbolize(s.Help), UnitRef: st.Symbolize(s.Unit)},
		})
	}
	req.Symbols = st.Symbols()
	return req.Marshal()
}

// RW2ToRW1 converts an encoded 2.0 request to an encoded 1.0 request, for
// receivers that answer 415 to 2.0. Metadata goes to the 1.0 metadata list.
func RW2ToRW1(data []byte) ([]byte, error) {
	var v2 writev2.Request
	if err := v2.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("decode rw2 request: %w", err)
	}
	sym := func(i uint32) string {
		if int(i) < len(v2.Symbols) {
			return v2.Symbols[i]
		}
		return ""
	}
	var v1 prompb.WriteRequest
	seen := map[string]bool{}
	for _, ts := range v2.Timeseries {
		var out prompb.TimeSeries
		name := ""
		for i := 0; i+1 < len(ts.LabelsRefs); i += 2 {
			l := prompb.Label{Name: sym(ts.LabelsRefs[i]), Value: sym(ts.LabelsRefs[i+1])}
			if l.Name == "__name__" {
				name = l.Value
			}
			out.Labels = append(out.Labels, l)
		}
		for _, s := range ts.Samples {
			out.Samples = append(out.Samples, prompb.Sample{Value: s.Value, Timestamp: s.Timestamp})
		}
		v1.Timeseries = append(v1.Timeseries, out)
		if name != "" && !seen[name] {
			seen[name] = true
			t := prompb.MetricMetadata_GAUGE
			if ts.Metadata.Type == writev2.Metadata_METRIC_TYPE_COUNTER {
				t = prompb.MetricMetadata_COUNTER
			}
			v1.Metadata = append(v1.Metadata, prompb.MetricMetadata{Type: t, MetricFamilyName: name,
				Help: sym(ts.Metadata.HelpRef), Unit: sym(ts.Metadata.UnitRef)})
		}
	}
	return v1.Marshal()
}

// SenderOptions configures a Sender.
type SenderOptions struct {
	URL     string
	Client  *http.Client  // nil: plain HTTP with remoteWriteTimeout
	MinWait time.Duration // first retry delay, default 500ms
	MaxWait time.Duration // retry delay cap, default 30s
	Logger  *slog.Logger
}

// Sender drains a Queue into a remote-write receiver: one request at a time,
// oldest first, retrying retryable failures (network errors, 5xx, 429) with
// exponential backoff and full jitter until they succeed, so a receiver
// restart loses nothing. A 415 to 2.0 switches to 1.0 for the rest of the
// process's life. Other 4xx answers drop the request (it can never succeed).
type Sender struct {
	opts     SenderOptions
	q        *Queue
	log      *slog.Logger
	useV1    atomic.Bool
	failures atomic.Uint64
	rejected atomic.Uint64
}

// NewSender returns a sender for q.
func NewSender(q *Queue, opts SenderOptions) *Sender {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: remoteWriteTimeout}
	}
	if opts.MinWait <= 0 {
		opts.MinWait = 500 * time.Millisecond
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 30 * time.Second
	}
	return &Sender{opts: opts, q: q, log: discardLogger(opts.Logger)}
}

// Failures returns the number of failed attempts so far.
func (s *Sender) Failures() uint64 { return s.failures.Load() }

// UsingV1 reports whether the sender fell back to remote write 1.0.
func (s *Sender) UsingV1() bool { return s.useV1.Load() }

// Run sends until ctx ends. Queued data that was not acknowledged stays on
// disk for the next run.
func (s *Sender) Run(ctx context.Context) {
	wait := s.opts.MinWait
	for ctx.Err() == nil {
		seq, data, ok, err := s.q.Peek()
		if err != nil {
			s.log.Error("queue_read_failed", "err", err)
		}
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-s.q.Notify():
			case <-time.After(time.Second):
			}
			continue
		}
		retry, err := s.send(ctx, data)
		if err == nil || !retry {
			if err != nil {
				s.rejected.Add(1)
				s.log.Error("remote_write_rejected", "err", err)
			}
			if aerr := s.q.Ack(seq); aerr != nil {
				s.log.Error("queue_ack_failed", "err", aerr)
			}
			wait = s.opts.MinWait
			continue
		}
		s.failures.Add(1)
		s.log.Warn("remote_write_failed_will_retry", "err", err, "retry_in", wait)
		// Full jitter: sleep uniformly in [wait/2, wait] so agents on many
		// nodes do not retry in lockstep after a receiver restart.
		d := wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		wait = min(2*wait, s.opts.MaxWait)
	}
}

// send posts one request; retry says whether a failure may succeed later.
func (s *Sender) send(ctx context.Context, rw2 []byte) (retry bool, err error) {
	for {
		v1 := s.useV1.Load()
		body, ctype, version := rw2, contentTypeRW2, versionRW2
		if v1 {
			b, err := RW2ToRW1(rw2)
			if err != nil {
				return false, err
			}
			body, ctype, version = b, contentTypeRW1, versionRW1
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.URL, bytes.NewReader(snappyEncode(body)))
		if err != nil {
			return false, fmt.Errorf("build request: %w", err)
		}
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("X-Prometheus-Remote-Write-Version", version)
		req.Header.Set("User-Agent", "weft-agent")
		resp, err := s.opts.Client.Do(req)
		if err != nil {
			return true, fmt.Errorf("post remote write: %w", err)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return false, nil
		case resp.StatusCode == http.StatusUnsupportedMediaType && !v1:
			s.log.Warn("remote_write_v2_unsupported_falling_back_to_v1", "url", s.opts.URL)
			s.useV1.Store(true)
			continue
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode/100 == 5:
			return true, fmt.Errorf("remote write: %s: %s", resp.Status, bytes.TrimSpace(msg))
		default:
			return false, fmt.Errorf("remote write: %s: %s", resp.Status, bytes.TrimSpace(msg))
		}
	}
}

func snappyEncode(b []byte) []byte { return snappy.Encode(nil, b) }

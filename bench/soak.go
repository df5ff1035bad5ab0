package bench

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/weftdb/weft/bench/internal/push"
	"github.com/weftdb/weft/bench/scenario"
)

// SoakOptions configure a soak (RunSoak): one weft under mixed load on every
// ingest path for a while, inside a memory budget.
type SoakOptions struct {
	// WeftBin and WeftArgs start weft (WeftSpec); -memory-budget is added.
	WeftBin, WeftArgs string
	WorkDir           string
	// Duration of the load. Default 10m.
	Duration time.Duration
	// Rate is good requests per second on each ingest path. Default 20.
	Rate float64
	// ItemsPerRequest is samples, log lines or spans per good request.
	// Default 200.
	ItemsPerRequest int
	// BadEvery makes every n-th request of a path a bad one (garbage,
	// label limit, invalid labels). Default 10; 0 sends none.
	BadEvery int
	// Stalled connections are held open sending one byte of a declared
	// 1 MB remote-write body, reopened when the server closes them.
	// Default 64.
	Stalled int
	// MemoryBudget is weft's -memory-budget in bytes. Default 1 GiB.
	MemoryBudget int64
	// CgroupLimit is the memory cgroup's limit when one can be created
	// (/sys/fs/cgroup writable). Default 1.5 × MemoryBudget; negative: no
	// cgroup.
	CgroupLimit int64
	// QueryEvery is how often a PromQL and a LogQL query check that weft
	// keeps answering. Default 2s.
	QueryEvery time.Duration
	// MaxInFlight bounds the requests in flight per path. Default 32.
	MaxInFlight int
	Logger      *slog.Logger
}

// DefaultSoakOptions returns the documented defaults.
func DefaultSoakOptions() SoakOptions {
	return SoakOptions{
		WeftBin: "bin/weft", WeftArgs: DefaultWeftArgs, WorkDir: os.TempDir(),
		Duration: 10 * time.Minute, Rate: 20, ItemsPerRequest: 200, BadEvery: 10, Stalled: 64,
		MemoryBudget: 1 << 30, QueryEvery: 2 * time.Second, MaxInFlight: 32,
	}
}

func (o SoakOptions) withDefaults() SoakOptions {
	d := DefaultSoakOptions()
	if o.Duration <= 0 {
		o.Duration = d.Duration
	}
	if o.Rate <= 0 {
		o.Rate = d.Rate
	}
	if o.ItemsPerRequest <= 0 {
		o.ItemsPerRequest = d.ItemsPerRequest
	}
	if o.MemoryBudget <= 0 {
		o.MemoryBudget = d.MemoryBudget
	}
	if o.CgroupLimit == 0 {
		o.CgroupLimit = o.MemoryBudget + o.MemoryBudget/2
	}
	if o.QueryEvery <= 0 {
		o.QueryEvery = d.QueryEvery
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = d.MaxInFlight
	}
	if o.WeftArgs == "" {
		o.WeftArgs = d.WeftArgs
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// soakPath is one ingest path: where good and bad requests go and how they
// are made.
type soakPath struct {
	name, path string
	header     http.Header
	// good returns request seq's body and its items (samples, lines,
	// spans); a trace request also returns its trace ID.
	good func(seq int) (body []byte, items int, id scenario.TraceID, err error)
	// bad returns a request that must be refused with a 4xx.
	bad func(seq int) (body []byte, header http.Header)
}

// soakSeries is the fixed series set of the metric paths: every good
// request carries one sample of each, at its own timestamp.
const soakSeries = 200

// soakGarbage is a body no ingest path decodes.
var soakGarbage = []byte("\x00\xff not a request \xfe\x01")

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// soakPaths builds the five ingest paths. t0 is the soak's start: sample
// and line timestamps are t0 plus the request's sequence number (ms for
// samples, µs for lines), unique per request and never in the future.
func soakPaths(o SoakOptions, t0 time.Time) []*soakPath {
	n := o.ItemsPerRequest
	ms := t0.UnixMilli()
	metricSeries := func(name string, seq int, per int) []*series {
		ss := make([]*series, 0, per)
		for i := range per {
			s := newSeries(name, name, kindGauge, []prompb.Label{{Name: "job", Value: "soak"}, {Name: "series", Value: strconv.Itoa(i % soakSeries)}})
			s.add(ms+int64(seq), float64(seq))
			ss = append(ss, s)
		}
		return ss
	}
	rwHeader := protocolHeader[RW1]
	otlpMetricsHeader := protocolHeader[OTLP] // encode gzips OTLP metrics
	otlpHeader := hdr("Content-Type", "application/x-protobuf")
	lokiHeader := hdr("Content-Type", "application/json")
	per := min(n, soakSeries)
	return []*soakPath{
		{
			name: "remote_write", path: "/api/v1/write", header: rwHeader,
			good: func(seq int) ([]byte, int, scenario.TraceID, error) {
				p, err := encode(RW1, metricSeries("soak_rw", seq, per))
				return p.Body, p.Samples, scenario.TraceID{}, err
			},
			bad: func(seq int) ([]byte, http.Header) {
				if seq%2 == 0 {
					return soakGarbage, rwHeader // not snappy
				}
				return s2.EncodeSnappy(nil, soakGarbage), rwHeader // snappy, not protobuf
			},
		},
		{
			name: "otlp_metrics", path: "/otlp/v1/metrics", header: otlpMetricsHeader,
			good: func(seq int) ([]byte, int, scenario.TraceID, error) {
				p, err := encode(OTLP, metricSeries("soak_otlp", seq, per))
				return p.Body, p.Samples, scenario.TraceID{}, err
			},
			bad: func(seq int) ([]byte, http.Header) {
				if seq%2 == 0 {
					return soakGarbage, otlpHeader
				}
				// 2,000 attributes: over the label limit.
				s := newSeries("soak_wide", "soak_wide", kindGauge, padLabels(0, 2000, seq))
				s.add(ms+int64(seq), 1)
				p, _ := encode(OTLP, []*series{s})
				return p.Body, otlpMetricsHeader
			},
		},
		{
			name: "loki_push", path: "/loki/api/v1/push", header: lokiHeader,
			good: func(seq int) ([]byte, int, scenario.TraceID, error) {
				w := &LogWorkload{Streams: []LogStream{{Labels: [][2]string{{"job", "soak_loki"}, {"lane", strconv.Itoa(seq % 8)}}}}}
				e := newLogEncoder(w, LogOptions{LinesPerPush: n + 1, Workers: 1})
				base := t0.UnixNano() + int64(seq)*1000
				for j := range n {
					e.add(0, base+int64(j), fmt.Sprintf("soak line %d of request %d", j, seq))
				}
				e.flushAll()
				return w.Payloads[0].Body, n, scenario.TraceID{}, nil
			},
			bad: func(seq int) ([]byte, http.Header) {
				if seq%2 == 0 {
					return soakGarbage, lokiHeader
				}
				return []byte(`{"streams":[{"stream":{"":"x"},"values":[["1","empty label name"]]}]}`), lokiHeader
			},
		},
		{
			name: "otlp_logs", path: "/otlp/v1/logs", header: otlpHeader,
			good: func(seq int) ([]byte, int, scenario.TraceID, error) {
				ld := plog.NewLogs()
				rl := ld.ResourceLogs().AppendEmpty()
				rl.Resource().Attributes().PutStr("service.name", "soak-otlp-logs")
				rs := rl.ScopeLogs().AppendEmpty().LogRecords()
				base := t0.UnixNano() + int64(seq)*1000
				for j := range n {
					r := rs.AppendEmpty()
					r.SetTimestamp(pcommon.Timestamp(base + int64(j)))
					r.Body().SetStr(fmt.Sprintf("soak record %d of request %d", j, seq))
				}
				b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
				return b, n, scenario.TraceID{}, err
			},
			bad: func(int) ([]byte, http.Header) { return soakGarbage, otlpHeader },
		},
		{
			name: "otlp_traces", path: "/otlp/v1/traces", header: otlpHeader,
			good: func(seq int) ([]byte, int, scenario.TraceID, error) {
				id := soakTraceID(seq)
				spans := min(n, 50) // a trace of 50 spans at most
				td := ptrace.NewTraces()
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", "soak-traces")
				ss := rs.ScopeSpans().AppendEmpty().Spans()
				start := time.Now()
				for j := range spans {
					sp := ss.AppendEmpty()
					sp.SetTraceID(pcommon.TraceID(id))
					var sid [8]byte
					binary.BigEndian.PutUint64(sid[:], uint64(j+1))
					sp.SetSpanID(sid)
					sp.SetName("soak-op")
					sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
					sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Millisecond)))
				}
				b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
				return b, spans, id, err
			},
			bad: func(int) ([]byte, http.Header) { return soakGarbage, otlpHeader },
		},
	}
}

// soakTraceID is request seq's trace ID.
func soakTraceID(seq int) scenario.TraceID {
	var id scenario.TraceID
	copy(id[:4], "soak")
	binary.BigEndian.PutUint64(id[8:], uint64(seq)+1)
	return id
}

// soakCounter accounts one ingest path. Safe for concurrent use.
type soakCounter struct {
	mu         sync.Mutex
	good, bad  int
	acked      int
	ackedItems int64
	lostItems  int64 // items of good requests never acknowledged
	status     map[int]int
	badStatus  map[int]int
	latencies  []time.Duration // ack latency of acknowledged good requests (retries included)
	ids        []scenario.TraceID
	backlog    int // ticks skipped: MaxInFlight requests already in flight
	lastErr    string
}

// attempt records one HTTP attempt of a good request.
func (c *soakCounter) attempt(a push.Attempt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == nil {
		c.status = map[int]int{}
	}
	c.status[a.Code]++
}

// done records a good request's outcome.
func (c *soakCounter) done(ok bool, items int, id scenario.TraceID, took time.Duration, last string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.good++
	if !ok {
		c.lostItems += int64(items)
		c.lastErr = last
		return
	}
	c.acked++
	c.ackedItems += int64(items)
	c.latencies = append(c.latencies, took)
	if id != (scenario.TraceID{}) {
		c.ids = append(c.ids, id)
	}
}

// badDone records the answer to a bad request (0: no answer).
func (c *soakCounter) badDone(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.badStatus == nil {
		c.badStatus = map[int]int{}
	}
	c.bad++
	c.badStatus[code]++
}

// SoakSignal is one ingest path's account.
type SoakSignal struct {
	Path     string `json:"path"`
	Requests int    `json:"good_requests"`
	Acked    int    `json:"acked_requests"`
	// AckedItems are the samples, lines or spans of acknowledged requests;
	// Stored what queries found at the end (-1: not measured); Lost is
	// AckedItems - Stored when positive (the goal is 0).
	AckedItems   int64 `json:"acked_items"`
	Stored       int64 `json:"stored_items"`
	Lost         int64 `json:"lost_items"`
	UnackedItems int64 `json:"unacked_items"` // given up on by the client
	// Status counts the HTTP answers of every attempt of good requests
	// (0: no answer); Status429 is Status[429].
	Status    map[int]int `json:"status"`
	Status429 int         `json:"status_429"`
	// BadRequests were sent; BadStatus are their answers; BadNot4xx
	// counts answers that were not a 4xx (the goal is 0).
	BadRequests int         `json:"bad_requests"`
	BadStatus   map[int]int `json:"bad_status"`
	BadNot4xx   int         `json:"bad_not_4xx"`
	AckP50Ms    float64     `json:"ack_p50_ms"`
	AckP99Ms    float64     `json:"ack_p99_ms"`
	Backlog     int         `json:"client_backlog"`
	LastError   string      `json:"last_error,omitempty"`
	StoredError string      `json:"stored_error,omitempty"`
}

// result summarises the counter; stored < 0 means not measured.
func (c *soakCounter) result(path string, stored int64, storedErr error) SoakSignal {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := SoakSignal{
		Path: path, Requests: c.good, Acked: c.acked, AckedItems: c.ackedItems, Stored: stored,
		UnackedItems: c.lostItems, Status: c.status, Status429: c.status[http.StatusTooManyRequests],
		BadRequests: c.bad, BadStatus: c.badStatus, Backlog: c.backlog, LastError: c.lastErr,
	}
	if stored >= 0 && c.ackedItems > stored {
		r.Lost = c.ackedItems - stored
	}
	if storedErr != nil {
		r.StoredError = storedErr.Error()
	}
	for code, n := range c.badStatus {
		if code/100 != 4 {
			r.BadNot4xx += n
		}
	}
	r.AckP50Ms = float64(Percentile(c.latencies, 0.50)) / 1e6
	r.AckP99Ms = float64(Percentile(c.latencies, 0.99)) / 1e6
	return r
}

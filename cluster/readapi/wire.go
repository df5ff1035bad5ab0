package readapi

import (
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
)

// Paths of the API.
const (
	PathPrefix = "/weft/internal/v1/"
	PathStatus = PathPrefix + "status"
	PathSelect = PathPrefix + "logs/select"
	PathLabels = PathPrefix + "logs/labels"
	PathValues = PathPrefix + "logs/values"
	PathSeries = PathPrefix + "logs/series"
	PathTotals = PathPrefix + "logs/totals"
	PathTail   = PathPrefix + "logs/tail" // tail.go
	// Traces (traces.go).
	PathTraceFetch   = PathPrefix + "traces/fetch"
	PathTraceFind    = PathPrefix + "traces/find"
	PathTraceTags    = PathPrefix + "traces/tags"
	PathTraceStreams = PathPrefix + "traces/streams"
	HeaderStrong     = "X-Weft-Read-Consistency"
	// StrongValue asks the ingester to answer only after it applied every
	// record produced before the request (read-after-write).
	StrongValue = "strong"
)

// Status is what an ingester reports about itself.
type Status struct {
	// Partitions are the partitions it consumes.
	Partitions []int32 `json:"partitions"`
	// TotalPartitions is the number of partitions of the topic.
	TotalPartitions int32 `json:"total_partitions"`
	// Ready is the ingester's readiness (caught up within its lag bound).
	Ready bool `json:"ready"`
	// Applied is, per partition, the offset of the next record to apply.
	Applied map[int32]int64 `json:"applied"`
	// HighWatermark is, per partition, the newest end offset it has seen.
	HighWatermark map[int32]int64 `json:"high_watermark"`
}

// Matcher is a label matcher on the wire.
type Matcher struct {
	Type  labels.MatchType `json:"type"`
	Name  string           `json:"name"`
	Value string           `json:"value"`
}

// Request is the body of every logs request.
type Request struct {
	Start       int64                 `json:"start"` // unix ns, inclusive
	End         int64                 `json:"end"`   // unix ns, exclusive
	Matchers    []Matcher             `json:"matchers"`
	Name        string                `json:"name,omitempty"` // values: the label name
	LineFilters []logentry.LineFilter `json:"line_filters,omitempty"`
	Direction   logentry.Direction    `json:"direction,omitempty"`
	// Partitions restricts the answer to streams of these partitions (of
	// TotalPartitions); empty: every stream the ingester holds.
	Partitions      []int32 `json:"partitions,omitempty"`
	TotalPartitions int32   `json:"total_partitions,omitempty"`
}

// StringsResponse answers labels and values.
type StringsResponse struct {
	Values []string `json:"values"`
}

// SeriesResponse answers series: label sets as name/value lists.
type SeriesResponse struct {
	Series [][]string `json:"series"`
}

// Total is one stream's totals in a TotalsResponse.
type Total struct {
	Labels  []string `json:"labels"`
	Chunks  uint64   `json:"chunks"`
	Entries uint64   `json:"entries"`
	Bytes   uint64   `json:"bytes"`
}

// TotalsResponse answers totals.
type TotalsResponse struct {
	Streams []Total `json:"streams"`
}

// Sentinels. Inspect with errors.Is.
var (
	// ErrBadRequest wraps a request the server could not take (a bad
	// matcher, bad JSON): the client's fault, not the ingester's.
	ErrBadRequest = errors.New("bad internal read request")
	// ErrTruncated: a select answer ended without its end frame.
	ErrTruncated = errors.New("internal read answer truncated")
)

// EncodeMatchers turns matchers into their wire form.
func EncodeMatchers(ms []*labels.Matcher) []Matcher {
	out := make([]Matcher, len(ms))
	for i, m := range ms {
		out[i] = Matcher{Type: m.Type, Name: m.Name, Value: m.Value}
	}
	return out
}

// DecodeMatchers builds matchers from their wire form.
func DecodeMatchers(ms []Matcher) ([]*labels.Matcher, error) {
	out := make([]*labels.Matcher, len(ms))
	for i, m := range ms {
		if m.Type < labels.MatchEqual || m.Type > labels.MatchNotRegexp {
			return nil, fmt.Errorf("%w: matcher type %d", ErrBadRequest, m.Type)
		}
		lm, err := labels.NewMatcher(m.Type, m.Name, m.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: matcher %s: %w", ErrBadRequest, m.Name, err)
		}
		out[i] = lm
	}
	return out, nil
}

func labelsToStrings(ls labels.Labels) []string {
	out := make([]string, 0, 2*ls.Len())
	ls.Range(func(l labels.Label) { out = append(out, l.Name, l.Value) })
	return out
}

func stringsToLabels(ss []string) (labels.Labels, error) {
	if len(ss)%2 != 0 {
		return labels.EmptyLabels(), fmt.Errorf("odd label list of %d strings", len(ss))
	}
	b := labels.NewScratchBuilder(len(ss) / 2)
	for i := 0; i < len(ss); i += 2 {
		b.Add(ss[i], ss[i+1])
	}
	b.Sort()
	return b.Labels(), nil
}

package api

import (
	"context"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// LogStore is what the Loki API and the OTLP logs receiver use of a log
// store: the reads of the Loki API (the LogQL engine's Source, label names
// and values, series, index stats and volume) and Push. *logstore.Store is
// one; a scale-out querier's fan-out and a distributor's ingest-log sink are
// others (docs/scale-out.md). Implementations are safe for concurrent use.
type LogStore interface {
	logql.Source
	loki.Pusher
	LabelNames(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]string, error)
	LabelValues(ctx context.Context, name string, start, end int64, ms ...*labels.Matcher) ([]string, error)
	Series(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error)
	Stats(ctx context.Context, start, end int64, ms ...*labels.Matcher) (logstore.Stats, error)
	EachStreamTotal(ctx context.Context, start, end int64, ms []*labels.Matcher, f func(ls labels.Labels, t logstore.Stats)) error
	EachEntry(ctx context.Context, p logentry.SelectParams, f func(ls labels.Labels, newStream bool, e logentry.Entry), chunks *uint64) error
}

// LogDeleter is the part of a log store the Loki delete API uses; a
// LogStore without it (a scale-out querier) answers that API with 501.
type LogDeleter interface {
	AddDeleteRequest(ctx context.Context, r logstore.DeleteRequest) (logstore.DeleteRequest, error)
	DeleteRequests() []logstore.DeleteRequest
	CancelDeleteRequest(ctx context.Context, id string) error
}

var (
	_ LogStore   = (*logstore.Store)(nil)
	_ LogDeleter = (*logstore.Store)(nil)
)

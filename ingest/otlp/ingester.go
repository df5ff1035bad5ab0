package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	otlptranslator "github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/storage"
	prw "github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/weftdb/weft/ingest/workload"
)

// ErrUnavailable wraps failures that are not the client's fault and may
// succeed on retry (storage append or commit failed, request cancelled).
// Nothing of the request is stored when Ingest returns it.
var ErrUnavailable = errors.New("otlp ingest unavailable")

// Result reports what became of one request's data points.
type Result struct {
	// DataPoints is the number of OTLP data points in the request.
	DataPoints int64
	// Rejected is how many of them were not stored because they are invalid
	// (0 <= Rejected <= DataPoints).
	Rejected int64
	// Message explains the rejections or, with Rejected == 0, warns about
	// dropped parts (invalid exemplars or attribute names); empty if none.
	Message string
	// ByReason counts the rejected data points by reason (the Reason*
	// constants); nil when none was rejected. Its sum may exceed Rejected
	// when one point was refused twice (validation and storage).
	ByReason map[string]int64
}

// Ingester converts OTLP metrics and appends them to storage. It is safe
// for concurrent use and owns no goroutines.
type Ingester struct {
	app         storage.AppendableV2
	opts        Options
	logger      *slog.Logger
	settings    prw.Settings
	namer       otlptranslator.MetricNamer
	labelNamer  otlptranslator.LabelNamer
	mapping     *workload.Mapping
	delta       *deltaState
	isRejection func(error) bool
	targetInfo  string
	converters  sync.Pool
	builders    sync.Pool // *labelBuilder
}

// New returns an Ingester appending to app. extraRejections are storage
// errors, besides Prometheus' sample errors, that mean a sample is invalid
// rather than the storage unavailable (for weft's storage:
// storage.ErrInvalidLabels).
func New(app storage.AppendableV2, opts Options, extraRejections ...error) (*Ingester, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("otlp options: %w", err)
	}
	mapping, err := workload.New(opts.Workload)
	if err != nil {
		return nil, fmt.Errorf("otlp options: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ing := &Ingester{
		app:         app,
		opts:        opts,
		logger:      logger,
		mapping:     mapping,
		delta:       newDeltaState(opts.Delta),
		isRejection: rejectionClassifier(extraRejections),
		targetInfo:  "target_info",
		namer:       otlptranslator.NewMetricNamer("", opts.TranslationStrategy),
		labelNamer:  otlptranslator.LabelNamer{UTF8Allowed: !opts.TranslationStrategy.ShouldEscape()},
	}
	ing.converters.New = func() any { return prw.NewPrometheusConverter(nil) }

	// Canonical context labels travel as resource attributes named after
	// them (see addContext) and are promoted like Prometheus' promoted
	// resource attributes: on every series, never over a data point
	// attribute of the same name.
	cfg := config.OTLPConfig{
		PromoteAllResourceAttributes: opts.PromoteAllResourceAttributes,
		PromoteResourceAttributes:    append(append([]string(nil), opts.PromoteResourceAttributes...), mapping.Names()...),
	}
	if opts.PromoteAllResourceAttributes {
		cfg.PromoteResourceAttributes = nil
		ctxNames := make(map[string]bool, mapping.Len())
		for _, n := range mapping.Names() {
			ctxNames[n] = true
		}
		for _, a := range opts.IgnoreResourceAttributes {
			if !ctxNames[a] {
				cfg.IgnoreResourceAttributes = append(cfg.IgnoreResourceAttributes, a)
			}
		}
	}
	ing.settings = prw.Settings{
		AddMetricSuffixes:                 opts.TranslationStrategy.ShouldAddSuffixes(),
		AllowUTF8:                         !opts.TranslationStrategy.ShouldEscape(),
		PromoteResourceAttributes:         prw.NewPromoteResourceAttributes(cfg),
		KeepIdentifyingResourceAttributes: opts.KeepIdentifyingResourceAttributes,
		ConvertHistogramsToNHCB:           opts.ConvertHistogramsToNHCB,
		PromoteScopeMetadata:              opts.PromoteScopeMetadata,
		LookbackDelta:                     opts.LookbackDelta,
		// weft writes target_info itself, with the labels it builds
		// (appendTargetInfo).
		DisableTargetInfo: true,
	}
	ing.builders.New = func() any {
		return ing.newLabelBuilder(cfg.PromoteAllResourceAttributes, promoteList(cfg))
	}
	return ing, nil
}

// Ingest validates, converts and appends md in one storage transaction.
// md is modified (delta points become cumulative, context attributes are
// added) and must not be used afterwards.
//
// A nil error means the transaction committed; Result says how many data
// points were rejected as invalid. An error wrapping ErrUnavailable means
// nothing was stored and the request may be retried.
func (ing *Ingester) Ingest(ctx context.Context, md pmetric.Metrics) (Result, error) {
	res := Result{DataPoints: int64(md.DataPointCount())}
	var rej rejections
	ing.validate(md, &rej)
	undo := ing.delta.convert(md, &rej)
	ing.addContext(md)

	app := newCheckedAppender(ing.app.AppenderV2(ctx), ing.isRejection, ing.targetInfo)
	annots, convErr := ing.convert(ctx, md, app, &rej)

	fail := func(step string, err error) (Result, error) {
		_ = app.AppenderV2.Rollback()
		ing.delta.undo(undo)
		return res, fmt.Errorf("%s: %w: %w", step, ErrUnavailable, err)
	}
	if err := ctx.Err(); err != nil {
		return fail("convert", err)
	}
	if app.fatal != nil {
		return fail("append", app.fatal)
	}
	if convErr != nil {
		// Validation mirrors the converter's checks, so this is a rule the
		// converter has and validate lacks; count each reported error as one
		// rejected point.
		n := 0
		if j, ok := convErr.(interface{ Unwrap() []error }); ok {
			n = len(j.Unwrap())
		} else {
			n = 1
		}
		rej.add(ReasonConversion, int64(n), convErr.Error())
	}
	if err := app.AppenderV2.Commit(); err != nil {
		ing.delta.undo(undo)
		return res, fmt.Errorf("commit: %w: %w", ErrUnavailable, err)
	}
	if n := len(app.rejected); n > 0 {
		by := map[string]int64{}
		for _, r := range app.rejected {
			by[r]++
		}
		first := true
		for r, k := range by {
			msg := ""
			if first {
				msg = "storage rejected sample: " + app.firstErr.Error()
				first = false
			}
			rej.addQuiet(r, k, msg)
		}
	}
	if app.exemplarErrs > 0 {
		rej.warn(fmt.Sprintf("%d exemplars not stored", app.exemplarErrs))
	}
	if ws, _ := annots.AsStrings("", 0, 0); len(ws) > 0 {
		ing.logger.Warn("otlp_translation_warnings", "warnings", ws)
	}
	res.Rejected = min(rej.n, res.DataPoints)
	res.Message = rej.message()
	res.ByReason = rej.byReason
	return res, nil
}

// promoteList is the attribute list of cfg the label builder needs: the
// promoted attributes, or with PromoteAllResourceAttributes the ignored ones.
func promoteList(cfg config.OTLPConfig) []string {
	if cfg.PromoteAllResourceAttributes {
		return cfg.IgnoreResourceAttributes
	}
	return cfg.PromoteResourceAttributes
}

// addContext puts the resolved canonical context labels of every resource
// on it as attributes named after the labels (overwriting an attribute of
// that exact name; a resource attribute named like a canonical label is
// thus its own last alias).
func (ing *Ingester) addContext(md pmetric.Metrics) {
	if ing.mapping.Len() == 0 {
		return
	}
	var scratch []workload.Label
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		attrs := rms.At(i).Resource().Attributes()
		scratch = ing.mapping.AppendLabels(scratch[:0], func(name string) (string, bool) {
			v, ok := attrs.Get(name)
			if !ok {
				return "", false
			}
			return v.AsString(), true
		})
		if len(scratch) == 0 {
			continue
		}
		// An attribute whose label name is a resolved canonical name (gpu.uuid
		// for gpu_uuid) would be concatenated with it on target_info; the
		// canonical value wins.
		attrs.RemoveIf(func(k string, _ pcommon.Value) bool {
			n, err := ing.labelNamer.Build(k)
			if err != nil || n == k {
				return false
			}
			for _, l := range scratch {
				if l.Name == n {
					return true
				}
			}
			return false
		})
		for _, l := range scratch {
			attrs.PutStr(l.Name, l.Value)
		}
	}
}

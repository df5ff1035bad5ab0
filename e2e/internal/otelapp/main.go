// Command otelapp is a small program instrumented with the OpenTelemetry
// Go SDK, for weft's end-to-end pivot test (e2e/traces_pivots_test.go): it
// serves one simulated inference request as a trace of two spans, logs a
// line inside it (so the record carries the trace and span IDs) and records
// the request's latency in a histogram (which keeps the span as an
// exemplar), exports all three signals over OTLP/HTTP to -endpoint and
// prints the trace ID.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	endpoint := flag.String("endpoint", "127.0.0.1:4318", "OTLP/HTTP endpoint (host:port)")
	service := flag.String("service", "otelapp", "service.name")
	flag.Parse()
	if err := run(*endpoint, *service); err != nil {
		fmt.Fprintln(os.Stderr, "otelapp:", err)
		os.Exit(1)
	}
}

func run(endpoint, service string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := resource.NewSchemaless(
		attribute.String("service.name", service),
		attribute.String("ai.run.id", "r-otel"),
		attribute.String("k8s.pod.name", service+"-0"),
	)
	te, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure())
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSyncer(te))
	le, err := otlploghttp.New(ctx, otlploghttp.WithEndpoint(endpoint), otlploghttp.WithInsecure())
	if err != nil {
		return err
	}
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(sdklog.NewSimpleProcessor(le)))
	me, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(endpoint), otlpmetrichttp.WithInsecure())
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)))

	tracer := tp.Tracer("otelapp")
	logger := lp.Logger("otelapp")
	latency, err := mp.Meter("otelapp").Float64Histogram("inference_latency", metric.WithUnit("s"))
	if err != nil {
		return err
	}

	start := time.Now()
	ctx, root := tracer.Start(ctx, "POST /v1/completions", trace.WithSpanKind(trace.SpanKindServer))
	cctx, child := tracer.Start(ctx, "forward", trace.WithSpanKind(trace.SpanKindInternal))
	time.Sleep(20 * time.Millisecond)
	var rec log.Record
	rec.SetTimestamp(time.Now())
	rec.SetSeverity(log.SeverityWarn)
	rec.SetSeverityText("WARN")
	rec.SetBody(attribute.StringValue("kv cache nearly full"))
	logger.Emit(cctx, rec)
	child.End()
	latency.Record(ctx, time.Since(start).Seconds())
	root.End()

	fmt.Println(root.SpanContext().TraceID().String())
	return errorsJoin(tp.Shutdown(context.Background()), lp.Shutdown(context.Background()), mp.Shutdown(context.Background()))
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

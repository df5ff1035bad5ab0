// Package traceql parses and evaluates TraceQL, Tempo's trace query
// language, over a trace Source (implemented by the trace store through
// storage/traceentry).
//
// It is weft's own implementation written from the TraceQL documentation;
// no Tempo code is used. docs/traceql.md lists what is supported, the
// semantic rules adopted and the limits.
//
// Entry points:
//
//   - Parse / ParseWithOptions return a checked *Query (errors are
//     *ParseError with line and column, matching ErrParse, and
//     ErrUnsupported for TraceQL weft does not implement); Query.String
//     prints it back.
//   - NewEngine(opts).Search(ctx, src, req) runs a search and returns
//     results shaped like tempopb's SearchResponse.
//   - Query.EvalTrace, or Query.NewEvaluator().Eval for many traces,
//     evaluates a query on one traceentry.Trace (trace-by-ID pruning,
//     tag-value filtering, tests).
//   - Query.Hints returns the pushdown hints a store may use to skip
//     blocks and traces.
//   - ParseLenient reads the possibly incomplete q of the tag-values API.
//
// A Query and an Engine are immutable and safe for concurrent use; an
// Evaluator is not and reuses its memory, so evaluating a simple filter
// allocates nothing per span.
//
// Files: lexer.go, parser.go, ast.go (syntax and printing), check.go
// (types, folding), value.go (values and comparisons), eval_field.go,
// eval.go, eval_structural.go and eval_stages.go (evaluation), hints.go,
// lenient.go, engine.go (Search and result shapes). The behaviour suite is
// testdata/*.test, run by TestConformance.
//
// This package never imports net/http, gRPC, api, web or a config package.
package traceql

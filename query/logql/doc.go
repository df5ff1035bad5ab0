// Package logql parses and evaluates LogQL, Loki's query language, over a
// log Source (implemented by storage/logstore).
//
// It is weft's own implementation written from the LogQL documentation; no
// Loki code is used. docs/logql.md lists what is supported and the known
// differences from Loki.
//
// Entry points: ParseExpr (and Expr.String for format_query) and
// NewEngine(src, opts).Query(ctx, params). An Engine is safe for concurrent
// use; each query reads the Source through one EntryIterator, which it
// closes before returning. Entries are streamed: log queries keep at most
// `limit` entries, counting aggregations keep one accumulator per series and
// step, other range aggregations keep (timestamp, value) pairs per series.
//
// Files: source.go (the Source contract), lexer.go, parser*.go and ast.go
// (syntax), pipeline.go, parsers.go, pattern.go, template.go and lbuilder.go
// (log pipeline), eval*.go (evaluation), engine.go (API and options).
// The behaviour suite is testdata/*.test, run by TestConformance.
//
// This package never imports net/http, gRPC, api, web or a config package.
package logql

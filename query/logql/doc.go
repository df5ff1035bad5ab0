// Package logql parses and evaluates LogQL, Loki's query language, over a
// log Source (implemented by storage/logstore).
//
// It is weft's own implementation written from the LogQL documentation; no
// Loki code is used. See docs/logql.md for what is supported and the known
// differences from Loki.
//
// This package never imports net/http, gRPC, api, web or a config package.
package logql

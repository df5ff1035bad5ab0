// Package logpattern mines log patterns: it groups log lines that share a
// template ("user 42 logged in", "user 7 logged in") and writes the template
// with its variable parts replaced by "<_>" ("user <_> logged in"), the
// syntax of LogQL's pattern filter and parser.
//
// The Miner is a Drain-style online clusterer (He et al., "Drain: An Online
// Log Parsing Approach with Fixed Depth Tree", ICWS 2017), written for weft:
//
//   - a line is split into tokens at spaces, after the "=" of a logfmt
//     key and after the ":" / before the "," of a JSON key (tokenize.go);
//   - a fixed-depth prefix tree routes it by token count, then by its first
//     Options.Depth tokens (a token with a digit, or a token past
//     Options.MaxChildren distinct ones at a node, goes to a wildcard child);
//   - a new cluster starts from its first line with number-like tokens
//     ("42", "12ms", "10.0.0.7", timestamps) already variable;
//   - in the leaf it joins the most similar cluster (the share of positions
//     where the template has the line's literal token, or a wildcard where
//     the line has a number-like token) if the similarity reaches Options.Similarity, turning the positions that
//     differ into wildcards; otherwise it starts a new cluster.
//
// Work is bounded: lines are cut at Options.MaxLineBytes and
// Options.MaxTokens (the rest becomes one "<_>"), and at most
// Options.MaxClusters clusters are kept; a line that would start one more
// is counted in Dropped and otherwise ignored.
//
// The package does no I/O and imports no transport: the Loki API
// (api/loki_patterns.go) reads lines from the log store and feeds them here.
package logpattern

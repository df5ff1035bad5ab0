//go:build slicelabels || dedupelabels

package ingest

import "github.com/prometheus/prometheus/model/labels"

// unsafeString copies: with these label builds, labels.ScratchBuilder keeps the
// strings it is given, so they must not point into the pooled request buffer.
func unsafeString(b []byte) string { return string(b) }

// labelsFromEncoded is not available with these label builds: the caller
// takes the general path (labels.ScratchBuilder).
func labelsFromEncoded(string) (labels.Labels, bool) { return labels.EmptyLabels(), false }

//go:build slicelabels || dedupelabels

package promlabels

import "github.com/prometheus/prometheus/model/labels"

// FromEncoded is not available with these label builds: callers build
// labels with labels.ScratchBuilder.
func FromEncoded(string) (labels.Labels, bool) { return labels.EmptyLabels(), false }

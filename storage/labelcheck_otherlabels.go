//go:build slicelabels || dedupelabels

package storage

import "github.com/prometheus/prometheus/model/labels"

// checkLabelsFast leaves every label set to checkLabelsRange in builds whose
// labels.Labels is not the stringlabels string.
func checkLabelsFast(labels.Labels) labelsVerdict { return labelsUnknown }

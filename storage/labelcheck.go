package storage

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
)

// errEmptyValue is checkNewLabels' answer for a label set with a label of
// empty value: seriesFor drops such labels, as Prometheus does, and retries.
var errEmptyValue = errors.New("label with empty value")

// checkNewLabels is the index's check of a label set about to become a new
// series: non-empty, names sorted and unique, names and values valid UTF-8,
// no empty names, all judged without the labels of empty value; then
// errEmptyValue if there are such labels. The index calls it only for label
// sets it does not know, so appends to existing series never pay for it (a
// set equal to a stored one passed it when it was stored). The default build
// checks the stringlabels encoding in one pass (labelcheck_stringlabels.go);
// checkLabelsRange is the reference it is tested against.
func checkNewLabels(ls labels.Labels) error {
	if ls.IsEmpty() {
		return fmt.Errorf("%w: empty label set", ErrInvalidLabels)
	}
	switch checkLabelsFast(ls) {
	case labelsValid:
		return nil
	case labelsEmptyValue:
		return errEmptyValue
	}
	return checkLabelsRange(ls)
}

// labelsVerdict is the answer of checkLabelsFast.
type labelsVerdict uint8

const (
	labelsUnknown    labelsVerdict = iota // not decided: run checkLabelsRange
	labelsValid                           // valid, no empty value
	labelsEmptyValue                      // valid once the labels of empty value are dropped
)

// checkLabelsRange is checkNewLabels walking ls with Range.
func checkLabelsRange(ls labels.Labels) error {
	if ls.IsEmpty() {
		return fmt.Errorf("%w: empty label set", ErrInvalidLabels)
	}
	ok, empty, prev := true, false, ""
	first := true
	ls.Range(func(l labels.Label) {
		if l.Value == "" {
			empty = true // dropped before the set is checked again
			return
		}
		if l.Name == "" || !utf8.ValidString(l.Name) || !utf8.ValidString(l.Value) || (!first && l.Name <= prev) {
			ok = false
		}
		prev, first = l.Name, false
	})
	switch {
	case !ok:
		return fmt.Errorf("%w: %s", ErrInvalidLabels, ls.String())
	case empty:
		return errEmptyValue
	}
	return nil
}

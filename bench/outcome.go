package bench

import (
	"errors"
	"fmt"
	"strings"
)

// ErrAllFailed says that no system of a run produced figures: the run must
// fail, and no results file is written (an empty comparison is not a
// result).
var ErrAllFailed = errors.New("every system failed")

// AllFailed returns ErrAllFailed, with each system's error, when every
// result has an error (or there is none); otherwise nil.
func AllFailed(results []SystemResult) error {
	errs := make([]string, 0, len(results))
	for _, r := range results {
		if r.Error == "" {
			return nil
		}
		errs = append(errs, r.System+": "+trunc(r.Error, 300))
	}
	return allFailed(errs)
}

// AllLogsFailed is AllFailed for the log benchmark's results.
func AllLogsFailed(results []LogSystemResult) error {
	errs := make([]string, 0, len(results))
	for _, r := range results {
		if r.Error == "" {
			return nil
		}
		errs = append(errs, r.System+": "+trunc(r.Error, 300))
	}
	return allFailed(errs)
}

func allFailed(errs []string) error {
	if len(errs) == 0 {
		return fmt.Errorf("%w: no system ran", ErrAllFailed)
	}
	return fmt.Errorf("%w (no results file written): %s", ErrAllFailed, strings.Join(errs, "; "))
}

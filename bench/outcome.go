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
	return allFailed(results, func(r SystemResult) (string, string) { return r.System, r.Error })
}

// AllLogsFailed is AllFailed for the log benchmark's results.
func AllLogsFailed(results []LogSystemResult) error {
	return allFailed(results, func(r LogSystemResult) (string, string) { return r.System, r.Error })
}

func allFailed[R any](results []R, outcome func(R) (system, err string)) error {
	errs := make([]string, 0, len(results))
	for _, r := range results {
		sys, err := outcome(r)
		if err == "" {
			return nil
		}
		errs = append(errs, sys+": "+trunc(err, 300))
	}
	if len(errs) == 0 {
		return fmt.Errorf("%w: no system ran", ErrAllFailed)
	}
	return fmt.Errorf("%w (no results file written): %s", ErrAllFailed, strings.Join(errs, "; "))
}

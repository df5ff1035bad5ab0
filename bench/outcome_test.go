package bench

import (
	"errors"
	"strings"
	"testing"
)

func TestAllFailed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []SystemResult
		fails   bool
	}{
		{"none ran", nil, true},
		{"all failed", []SystemResult{{System: "weft", Error: "start: boom"}, {System: "prometheus", Error: "ingest: no sample accepted"}}, true},
		{"one ran", []SystemResult{{System: "weft", Error: "start: boom"}, {System: "prometheus"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := AllFailed(tc.results)
			if got := errors.Is(err, ErrAllFailed); got != tc.fails {
				t.Fatalf("AllFailed = %v, want failure %v", err, tc.fails)
			}
			for _, r := range tc.results {
				if tc.fails && !strings.Contains(err.Error(), r.Error) {
					t.Errorf("error %q does not name %s's failure", err, r.System)
				}
			}
		})
	}
	if err := AllLogsFailed([]LogSystemResult{{System: "weft", Error: "x"}}); !errors.Is(err, ErrAllFailed) {
		t.Errorf("AllLogsFailed = %v, want ErrAllFailed", err)
	}
	if err := AllLogsFailed([]LogSystemResult{{System: "weft"}}); err != nil {
		t.Errorf("AllLogsFailed with a success = %v", err)
	}
}

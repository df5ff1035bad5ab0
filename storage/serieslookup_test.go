package storage

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestSeriesLookupByLabels covers seriesFor without a ref: label sets are
// checked only when they would create a series, labels of empty value are
// dropped before the check and the lookup, and a set equal to a stored one
// resolves to its series.
func TestSeriesLookupByLabels(t *testing.T) {
	tests := []struct {
		name    string
		first   labels.Labels // appended first (nil: nothing)
		ls      labels.Labels
		wantErr error         // nil: the append succeeds
		same    bool          // ls resolves to first's series
		stored  labels.Labels // the series ls is stored as (when wantErr is nil)
	}{
		{name: "new series", ls: labels.FromStrings("__name__", "m", "a", "1"), stored: labels.FromStrings("__name__", "m", "a", "1")},
		{name: "existing series", first: labels.FromStrings("__name__", "m", "a", "2"), ls: labels.FromStrings("__name__", "m", "a", "2"), same: true, stored: labels.FromStrings("__name__", "m", "a", "2")},
		{name: "empty value dropped", first: labels.FromStrings("__name__", "m", "a", "3"), ls: labels.FromStrings("__name__", "m", "a", "3", "b", ""), same: true, stored: labels.FromStrings("__name__", "m", "a", "3")},
		{name: "empty value on a new series", ls: labels.FromStrings("__name__", "m", "a", "4", "z", ""), stored: labels.FromStrings("__name__", "m", "a", "4")},
		{name: "empty name with empty value dropped", ls: labels.FromStrings("", "", "__name__", "m", "a", "5"), stored: labels.FromStrings("__name__", "m", "a", "5")},
		{name: "only empty values", ls: labels.FromStrings("a", "", "b", ""), wantErr: ErrInvalidLabels},
		{name: "empty set", ls: labels.EmptyLabels(), wantErr: ErrInvalidLabels},
		{name: "empty name", ls: labels.FromStrings("", "x", "__name__", "m"), wantErr: ErrInvalidLabels},
		{name: "bad utf8 value", ls: labels.FromStrings("__name__", "m", "a", "\xff"), wantErr: ErrInvalidLabels},
		{name: "bad utf8 beside an empty value", ls: labels.FromStrings("__name__", "m", "a", "\xff", "b", ""), wantErr: ErrInvalidLabels},
		{name: "duplicate name", ls: labels.New(labels.Label{Name: "a", Value: "1"}, labels.Label{Name: "a", Value: "2"}), wantErr: ErrInvalidLabels},
	}
	db := openTestDB(t, testOptions())
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := int64(1000 + i)
			app := db.Appender(context.Background())
			var firstRef uint64
			if !tc.first.IsEmpty() {
				ref, err := app.Append(0, tc.first, ts, 1)
				if err != nil {
					t.Fatalf("append %s: %v", tc.first, err)
				}
				firstRef = uint64(ref)
				if err := app.Commit(); err != nil {
					t.Fatal(err)
				}
				app = db.Appender(context.Background())
			}
			ref, err := app.Append(0, tc.ls, ts+1, 2)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("append %s: err = %v, want %v", tc.ls, err, tc.wantErr)
				}
				_ = app.Rollback()
				return
			}
			if err != nil {
				t.Fatalf("append %s: %v", tc.ls, err)
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
			if tc.same && uint64(ref) != firstRef {
				t.Fatalf("%s resolved to series %d, want %d (%s)", tc.ls, ref, firstRef, tc.first)
			}
			if !tc.same && firstRef != 0 && uint64(ref) == firstRef {
				t.Fatalf("%s resolved to the series of %s", tc.ls, tc.first)
			}
			got, ok := db.idx.Labels(uint64(ref), nil)
			if !ok || !labels.Equal(got, tc.stored) {
				t.Fatalf("series %d is %s (known %v), want %s", ref, got, ok, tc.stored)
			}
		})
	}
}

package storage

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// With no match, Select answers an empty slice, not nil: Prometheus' API
// encodes the result as is, and Prometheus answers "data":[].
func TestExemplarSelectNoMatchIsEmpty(t *testing.T) {
	db := openTestDB(t, testOptions())
	eq, err := db.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := eq.Select(0, 10, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "none")})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); string(b) != "[]" {
		t.Fatalf("no match encodes as %s, want []", b)
	}
}

package otlp

import (
	"context"
	"testing"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"

	"github.com/weftdb/weft/ingest/workload"
)

func TestIngestGolden(t *testing.T) {
	noCtx := DefaultOptions()
	noCtx.Workload = workload.Options{}
	utf8 := DefaultOptions()
	utf8.TranslationStrategy = otlptranslator.NoTranslation
	utf8Suffixes := DefaultOptions()
	utf8Suffixes.TranslationStrategy = otlptranslator.NoUTF8EscapingWithSuffixes
	cases := []struct {
		name   string
		opts   Options
		golden string
	}{
		{"default", DefaultOptions(), "rich.default.series"},
		{"no workload context", noCtx, "rich.nocontext.series"},
		{"NoTranslation", utf8, "rich.notranslation.series"},
		{"NoUTF8EscapingWithSuffixes", utf8Suffixes, "rich.noutf8escaping.series"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ing, db := newTestIngester(t, c.opts)
			md := loadJSON(t, "rich.json")
			res, err := ing.Ingest(context.Background(), md)
			if err != nil {
				t.Fatal(err)
			}
			if res.DataPoints != 9 || res.Rejected != 0 || res.Message != "" {
				t.Fatalf("result %+v, want 9 points, none rejected", res)
			}
			checkGolden(t, c.golden, dumpSeries(t, db))
		})
	}
}

func TestExemplarsStored(t *testing.T) {
	ing, db := newTestIngester(t, DefaultOptions())
	if _, err := ing.Ingest(context.Background(), loadJSON(t, "rich.json")); err != nil {
		t.Fatal(err)
	}
	eq, err := db.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := eq.Select(0, 1<<62, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, "train_tokens_total")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Exemplars) != 1 {
		t.Fatalf("exemplars: %+v", res)
	}
	ex := res[0].Exemplars[0]
	want := labels.FromStrings("span_id", "eee19b7ec3c1b174", "step", "99", "trace_id", "5b8efff798038103d269b633813fc60c")
	if !labels.Equal(ex.Labels, want) || ex.Value != 7 || ex.Ts != 1699999999500 {
		t.Fatalf("exemplar %v %v %v, want %v 7 1699999999500", ex.Labels, ex.Value, ex.Ts, want)
	}
}

var _ storage.AppendableV2 = (*teststorage.TestStorage)(nil)

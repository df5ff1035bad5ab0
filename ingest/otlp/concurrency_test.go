package otlp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentIngest shares one Ingester between goroutines, as the HTTP
// and gRPC receivers do: each sends a delta stream of its own; every
// stream must end at its exact total.
func TestConcurrentIngest(t *testing.T) {
	ing, db := newTestIngester(t, DefaultOptions())
	const (
		workers  = 4
		requests = 20
	)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod := fmt.Sprintf("pod-%d", w)
			for r := range requests {
				res, err := ing.Ingest(context.Background(), deltaSum(pod, int64(r)*10, int64(w+1)))
				if err != nil || res.Rejected != 0 {
					errs <- fmt.Errorf("%s request %d: %+v %v", pod, r, res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := filterName(dumpSeries(t, db), "requests_total")
	if len(got) != workers*requests {
		t.Fatalf("%d samples, want %d", len(got), workers*requests)
	}
	for w := range workers {
		want := fmt.Sprintf(`pod="pod-%d"} %d %d`, w, 1_700_000_000_000+requests*10_000, (w+1)*requests)
		found := false
		for _, g := range got {
			found = found || strings.HasSuffix(g, want)
		}
		if !found {
			t.Errorf("no final total %q in\n%s", want, strings.Join(got, "\n"))
		}
	}
}

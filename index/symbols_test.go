package index

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestInternHotValues interns label sets whose values repeat, alternate and
// change (the hot-value shortcut hits, misses and is overwritten by other
// goroutines); every set must get the same refs each time and decode back.
func TestInternHotValues(t *testing.T) {
	s := newSymbols()
	sets := []labels.Labels{
		labels.FromStrings("a", "x", "b", "1"),
		labels.FromStrings("a", "x", "b", "2"),
		labels.FromStrings("a", "y", "b", "2"),
		labels.FromStrings("a", "x", "b", "1"),
		labels.FromStrings("a", "", "c", "x"),
		labels.FromStrings("a", "x"),
	}
	first := map[string]string{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b labels.ScratchBuilder
			for i := 0; i < 500; i++ {
				ls := sets[(i*(w+1))%len(sets)]
				enc := string(appendLabelRefs(nil, s.internLabels(ls, nil)))
				if got, err := s.buildLabels(enc, &b); err != nil || !labels.Equal(got, ls) {
					errs <- fmt.Errorf("interned %s decodes to %s (%v)", ls, got, err)
					return
				}
				mu.Lock()
				if prev, ok := first[ls.String()]; ok && prev != enc {
					mu.Unlock()
					errs <- fmt.Errorf("%s interned to %x, earlier %x", ls, enc, prev)
					return
				}
				first[ls.String()] = enc
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestEqualLabels(t *testing.T) {
	s := newSymbols()
	stored := labels.FromStrings("a", "1", "b", "2", "c", "3")
	enc := string(appendLabelRefs(nil, s.internLabels(stored, nil)))
	s.internLabels(labels.FromStrings("a", "9", "d", "3"), nil)
	tests := []struct {
		name string
		enc  string
		ls   labels.Labels
		want bool
	}{
		{"equal", enc, stored, true},
		{"fewer labels", enc, labels.FromStrings("a", "1", "b", "2"), false},
		{"more labels", enc, labels.FromStrings("a", "1", "b", "2", "c", "3", "d", "3"), false},
		{"other name", enc, labels.FromStrings("a", "1", "b", "2", "d", "3"), false},
		{"other value", enc, labels.FromStrings("a", "9", "b", "2", "c", "3"), false},
		{"trailing bytes", enc + "\x00", stored, false},
		{"truncated", enc[:len(enc)-1], stored, false},
		{"empty encoding", "", stored, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.equalLabels(tc.enc, tc.ls, ""); got != tc.want {
				t.Fatalf("equalLabels(%x, %s) = %v, want %v", tc.enc, tc.ls, got, tc.want)
			}
		})
	}
}

// TestInternDeferredValues interns, from several goroutines at once, label
// sets whose new values internLabels defers (up to maxDeferredValues and
// past it) while others add names midway (forcing the write lock between
// the walk and the deferred probes): every goroutine must get the same refs
// for a set, and the refs must decode back to it.
func TestInternDeferredValues(t *testing.T) {
	tests := []struct {
		name string
		set  func(i int) labels.Labels
	}{
		{"two new values", func(i int) labels.Labels {
			return labels.FromStrings("__name__", "m", "uuid", fmt.Sprint("u", i), "instance", fmt.Sprint("10.0.0.", i), "job", "j")
		}},
		{"more new values than deferred", func(i int) labels.Labels {
			var pairs []string
			for k := 0; k < maxDeferredValues+4; k++ {
				pairs = append(pairs, fmt.Sprintf("l%02d", k), fmt.Sprintf("v%d-%d", k, i))
			}
			return labels.FromStrings(pairs...)
		}},
		{"new name after more new values than deferred", func(i int) labels.Labels {
			// The write lock is taken in the walk (the deferred values are
			// full), then a name other goroutines add meanwhile is looked up.
			var pairs []string
			for k := 0; k < maxDeferredValues+2; k++ {
				pairs = append(pairs, fmt.Sprintf("l%02d", k), fmt.Sprintf("v%d-%d", k, i))
			}
			return labels.FromStrings(append(pairs, fmt.Sprintf("n%d", i), "z")...)
		}},
		{"new name after new values", func(i int) labels.Labels {
			return labels.FromStrings("a", fmt.Sprint("x", i), "b", fmt.Sprint("y", i), fmt.Sprintf("n%d", i), "z")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSymbols()
			const workers, sets = 4, 300
			encs := make([][]string, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					encs[w] = make([]string, sets)
					for k := range sets {
						i := (k + w*97) % sets // each worker from its own start
						encs[w][i] = string(appendLabelRefs(nil, s.internLabels(tc.set(i), nil)))
					}
				}()
			}
			wg.Wait()
			var b labels.ScratchBuilder
			for i := range sets {
				for w := 1; w < workers; w++ {
					if encs[w][i] != encs[0][i] {
						t.Fatalf("set %d: worker %d got %x, worker 0 %x", i, w, encs[w][i], encs[0][i])
					}
				}
				if got, err := s.buildLabels(encs[0][i], &b); err != nil || !labels.Equal(got, tc.set(i)) {
					t.Fatalf("set %d decodes to %s (%v), want %s", i, got, err, tc.set(i))
				}
			}
		})
	}
}

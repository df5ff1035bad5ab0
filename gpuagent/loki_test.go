package gpuagent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestLokiPushRetriesAndFormat(t *testing.T) {
	var calls atomic.Int32
	var got lokiPush
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path != "/loki/api/v1/push" {
			http.Error(w, "path "+r.URL.Path, 404)
			return
		}
		json.NewDecoder(r.Body).Decode(&got)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	p := NewLokiPusher(srv.URL+"/", nil)
	line := EventLine{Labels: []Label{{"UUID", "GPU-1"}, {"hw.id", "GPU-1"}, {"run_id", "r"}}, Time: time.Unix(1, 5), Line: "XID 79 on GPU 0"}
	if err := p.Push(context.Background(), []EventLine{line}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("%d calls, want a retry after 503", calls.Load())
	}
	// The GPU's descriptors travel as structured metadata, the context as
	// stream labels.
	if len(got.Streams) != 1 || len(got.Streams[0].Stream) != 1 || got.Streams[0].Stream["run_id"] != "r" {
		t.Errorf("push = %+v", got)
	} else if v := got.Streams[0].Values[0]; len(v) != 3 || v[0] != "1000000005" || v[1] != "XID 79 on GPU 0" ||
		fmt.Sprint(v[2]) != "map[UUID:GPU-1 hw_id:GPU-1]" {
		t.Errorf("values = %v", v)
	}

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "bad labels", http.StatusBadRequest)
	}))
	defer bad.Close()
	calls.Store(0)
	if err := NewLokiPusher(bad.URL, nil).Push(context.Background(), []EventLine{line}); err == nil || calls.Load() != 1 {
		t.Errorf("400: err=%v calls=%d, want one call and an error", err, calls.Load())
	}
}

// TestLokiStreamWithinLabelLimit: an event whose GPU has a rich workload
// context is pushed with at most 15 stream labels (Loki's default limit: a
// stream over it is refused whole), the rest as structured metadata,
// nothing dropped.
func TestLokiStreamWithinLabelLimit(t *testing.T) {
	var ls []Label
	for _, n := range []string{"source", "event", "xid", "gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "gpu_uuid",
		"cluster", "container", "container_id", "dataset", "job_id", "model", "model_version", "namespace", "node",
		"pod", "pod_uid", "rank", "run_id", "team"} {
		ls = append(ls, Label{n, "v-" + n})
	}
	st := lokiStreamOf(EventLine{Labels: ls, Time: time.Unix(1, 0), Line: "XID 79"})
	if len(st.Stream) != lokiMaxStreamLabels {
		t.Fatalf("%d stream labels %v, want %d", len(st.Stream), st.Stream, lokiMaxStreamLabels)
	}
	md, _ := st.Values[0][2].(map[string]string)
	for _, l := range ls {
		if _, in := st.Stream[l.Name]; in == (md[l.Name] != "") {
			t.Errorf("%s: stream label %v, metadata %q; want exactly one", l.Name, in, md[l.Name])
		}
	}
	for _, n := range []string{"source", "event", "xid", "gpu_uuid", "Hostname", "gpu"} {
		if st.Stream[n] == "" {
			t.Errorf("%s is not a stream label: %v", n, st.Stream)
		}
	}
}

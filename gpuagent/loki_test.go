package gpuagent

import (
	"context"
	"encoding/json"
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
	if len(got.Streams) != 1 || got.Streams[0].Stream["hw_id"] != "GPU-1" || got.Streams[0].Stream["run_id"] != "r" ||
		got.Streams[0].Values[0] != [2]string{"1000000005", "XID 79 on GPU 0"} {
		t.Errorf("push = %+v", got)
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

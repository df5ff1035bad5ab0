package api

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/klauspost/compress/s2"
)

// FuzzRemoteWriteHandler sends arbitrary bodies, snappy-compressed or raw, as
// RW 1.0 or 2.0. Over a storage that accepts everything, the receiver must
// never panic and never answer 5xx: every bad body is the client's fault.
func FuzzRemoteWriteHandler(f *testing.F) {
	f.Add(rwValidV1(f), false, true)
	f.Add(rwValidV2(f), true, true)
	f.Add(rwValidV2(f)[:40], true, true)
	f.Add([]byte("\xff\xff\xff\x7f garbage"), true, false)
	f.Add([]byte{}, false, true)
	opts := DefaultRemoteWriteOptions()
	opts.MaxBodyBytes, opts.MaxDecodedBytes = 1<<20, 4<<20
	h := NewRemoteWriteHandler(&rwFakeAppendable{}, opts)
	f.Fuzz(func(t *testing.T, data []byte, v2, compress bool) {
		body := data
		if compress {
			body = s2.EncodeSnappy(nil, data)
		}
		ct := rwCTV1
		if v2 {
			ct = rwCTV2
		}
		rec := rwPostRaw(t, h, ct, "snappy", body)
		switch rec.Code {
		case http.StatusNoContent, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("code %d: %q", rec.Code, rec.Body.String())
		}
		if rec.Code == http.StatusBadRequest && rec.Body.Len() == 0 {
			t.Fatal("400 without a reason")
		}
		if v2 {
			for _, k := range []string{rwSamplesWrittenHeader, rwHistogramsWrittenHeader, rwExemplarsWrittenHeader} {
				if _, err := strconv.Atoi(rec.Header().Get(k)); err != nil {
					t.Fatalf("header %s = %q", k, rec.Header().Get(k))
				}
			}
		}
	})
}

package index

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"
)

type fragStream struct {
	id   ID
	kind Kind
	ls   labels.Labels
}

// gpuStream is a 12-label series of GPU i's metric m, the shape of a DCGM
// exporter's output: consecutive streams share all labels but __name__, or
// all but __name__, gpu and UUID.
func gpuStream(id ID, i, m int) fragStream {
	return fragStream{id: id, kind: KindMetric, ls: labels.FromStrings(
		"__name__", fmt.Sprintf("DCGM_FI_DEV_METRIC_%d", m),
		"Hostname", fmt.Sprintf("node-%05d", i/8),
		"UUID", fmt.Sprintf("GPU-%08x-1bb7-021d", i*2654435761%(1<<32)),
		"cluster", "eu-west-4",
		"gpu", fmt.Sprint(i%8),
		"instance", fmt.Sprintf("node-%05d:9400", i/8),
		"job", "dcgm-exporter",
		"model", "llama-3-70b",
		"namespace", "train",
		"pod", fmt.Sprintf("r%d-worker-%d", i/64, i%64),
		"run_id", fmt.Sprintf("r%d", i/64),
		"team", "pretrain",
	)}
}

func encodeFrag(bucket uint64, ss []fragStream) []byte {
	var w recordFragWriter
	w.reset(bucket)
	for _, s := range ss {
		var names, values []string
		s.ls.Range(func(l labels.Label) { names, values = append(names, l.Name), append(values, l.Value) })
		w.add(s.id, s.kind, names, values)
	}
	return w.appendTo(nil)
}

func decodeFrags(t testing.TB, bucket uint64, v []byte) (map[ID]fragStream, error) {
	t.Helper()
	got := map[ID]fragStream{}
	err := decodeStreamBucket(bucket, v, func(id ID, kind Kind, ls []fragLabel) {
		b := labels.NewScratchBuilder(len(ls))
		for _, l := range ls {
			b.Add(l.name, l.value)
		}
		got[id] = fragStream{id: id, kind: kind, ls: b.Labels()}
	}, func(id ID) { delete(got, id) })
	return got, err
}

func TestStreamBucketRoundTrip(t *testing.T) {
	const bucket = 7
	base := ID(bucket << streamBucketBits)
	var first, second []fragStream
	for m := 0; m < 5; m++ {
		first = append(first, gpuStream(base+ID(m), 3, m))
	}
	// A second fragment of the same bucket with different label names,
	// kinds and a label set that shares nothing with the previous one.
	second = append(second,
		fragStream{base + 9, KindLog, labels.FromStrings("job", "a", "stream", "stderr")},
		fragStream{base + 10, KindLog, labels.FromStrings("job", "a", "level", "error", "stream", "stderr")},
		fragStream{base + 11, KindTrace, labels.FromStrings("service_name", "api")},
		fragStream{base + 255, KindMetric, labels.FromStrings("a", "", "b", "x")},
	)
	v := encodeFrag(bucket, first)
	v = append(v, encodeFrag(bucket, second)...)
	v = appendDeletionFrag(v, bucket, []ID{base + 1, base + 10})

	got, err := decodeFrags(t, bucket, v)
	if err != nil {
		t.Fatal(err)
	}
	want := map[ID]fragStream{}
	for _, s := range append(slices.Clone(first), second...) {
		want[s.id] = s
	}
	delete(want, base+1)
	delete(want, base+10)
	if len(got) != len(want) {
		t.Fatalf("decoded %d streams, want %d", len(got), len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok || g.kind != w.kind || !labels.Equal(g.ls, w.ls) {
			t.Fatalf("stream %d = %+v, want %+v", id, g, w)
		}
	}
}

// TestStreamBucketFrontCoding checks what the format is for: streams of one
// GPU differ in their metric name only and cost a fraction of a full record.
func TestStreamBucketFrontCoding(t *testing.T) {
	var ss []fragStream
	full := 0
	for i := 0; i < 256; i++ {
		s := gpuStream(ID(i), i/16, i%16)
		ss = append(ss, s)
		var names, values []string
		s.ls.Range(func(l labels.Label) { names, values = append(names, l.Name), append(values, l.Value) })
		full += len(appendStreamValue(nil, s.kind, names, values))
	}
	v := encodeFrag(0, ss)
	if len(v)*4 > full {
		t.Fatalf("front-coded bucket is %d bytes, full records %d: want at most a quarter", len(v), full)
	}
	got, err := decodeFrags(t, 0, v)
	if err != nil || len(got) != len(ss) {
		t.Fatalf("decoded %d streams, err %v", len(got), err)
	}
}

func TestStreamBucketCorrupt(t *testing.T) {
	const bucket = 1
	good := encodeFrag(bucket, []fragStream{gpuStream(bucket<<streamBucketBits+1, 0, 0), gpuStream(bucket<<streamBucketBits+2, 0, 1)})
	cases := map[string][]byte{
		"truncated":          good[:len(good)-1],
		"unknown type":       append([]byte{9}, good[1:]...),
		"id outside bucket":  encodeFrag(bucket, []fragStream{gpuStream(5<<streamBucketBits, 0, 0)}),
		"length past end":    {fragRecords, 50, 1},
		"count past end":     {fragRecords, 1, 60},
		"repeated id":        appendDeletionFrag(nil, bucket, []ID{bucket<<streamBucketBits + 3, bucket<<streamBucketBits + 3}),
		"reference past end": {fragRecords, 5, 1, 0, 1, 1, 3},
		"bad kind":           {fragRecords, 4, 1, 0, 9, 0},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeFrags(t, bucket, v); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestStreamBucketsPersist drives the registry through Persist, Delete and
// reopen: records of one bucket written by two Persists merge, deletions
// stick, and a bucket whose streams are all gone leaves no key.
func TestStreamBucketsPersist(t *testing.T) {
	e := newTestEnv(t, Options{PartitionDuration: time.Hour})
	var ids []ID
	var lss []labels.Labels
	create := func(n int) {
		for i := 0; i < n; i++ {
			s := gpuStream(0, len(ids)/4, len(ids)%4)
			ids = append(ids, mustCreate(t, e.ix, KindMetric, s.ls, 0))
			lss = append(lss, s.ls)
		}
	}
	create(300) // buckets 0 and 1
	if err := e.ix.Persist(t.Context()); err != nil {
		t.Fatal(err)
	}
	create(100) // more in bucket 1: a second fragment
	if err := e.ix.Persist(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Delete every stream of bucket 0 and a few of bucket 1.
	gone := roaring64.New()
	for _, id := range ids {
		if streamBucket(id) == 0 || id%7 == 0 {
			gone.Add(uint64(id))
		}
	}
	if err := e.ix.Delete(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	if _, closer, err := e.db.Get(appendStreamBucketKey(nil, 0)); !errors.Is(err, pebble.ErrNotFound) {
		if closer != nil {
			closer.Close()
		}
		t.Fatalf("bucket 0 still stored after all its streams were deleted (err %v)", err)
	}
	ix := e.reopen()
	if n, want := ix.NumStreams(KindMetric), len(ids)-int(gone.GetCardinality()); n != want {
		t.Fatalf("%d streams after reopen, want %d", n, want)
	}
	for i, id := range ids {
		ls, ok := ix.Labels(id, nil)
		if gone.Contains(uint64(id)) {
			if ok {
				t.Fatalf("deleted stream %d is back: %s", id, ls)
			}
			continue
		}
		if !ok || !labels.Equal(ls, lss[i]) {
			t.Fatalf("stream %d = %s, %v; want %s", id, ls, ok, lss[i])
		}
	}
}

// TestLegacyStreamRecords opens a store written with one record per stream
// (0x01 's'), the format of earlier versions: its streams load, and deleting
// one removes its record.
func TestLegacyStreamRecords(t *testing.T) {
	e := newTestEnv(t, Options{PartitionDuration: time.Hour})
	ls := labels.FromStrings("__name__", "up", "job", "old")
	b := e.db.NewBatch()
	if err := b.Set(appendStreamKey(nil, 42), appendStreamValue(nil, KindMetric, []string{"__name__", "job"}, []string{"up", "old"}), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	ix := e.reopen()
	got, ok := ix.Labels(42, nil)
	if !ok || !labels.Equal(got, ls) {
		t.Fatalf("legacy stream = %s, %v; want %s", got, ok, ls)
	}
	if id := mustCreate(t, ix, KindMetric, ls, 0); id != 42 {
		t.Fatalf("GetOrCreate of a legacy stream = %d, want 42", id)
	}
	if err := ix.Delete(t.Context(), bitmapOf(42)); err != nil {
		t.Fatal(err)
	}
	if _, closer, err := e.db.Get(appendStreamKey(nil, 42)); !errors.Is(err, pebble.ErrNotFound) {
		if closer != nil {
			closer.Close()
		}
		t.Fatalf("legacy record still stored after Delete (err %v)", err)
	}
	if ix = e.reopen(); ix.NumStreams(KindAny) != 0 {
		t.Fatalf("%d streams after deleting the only one", ix.NumStreams(KindAny))
	}
}

// FuzzStreamBucket decodes raw bucket values (never panicking) and
// round-trips generated records through a fragment.
func FuzzStreamBucket(f *testing.F) {
	f.Add(uint64(3), "a\xffb\xffc\xffd", uint8(2), []byte{fragRecords, 4, 1, 0, 1, 0})
	f.Add(uint64(0), "", uint8(0), encodeFrag(0, []fragStream{gpuStream(1, 0, 0), gpuStream(2, 0, 1)}))
	f.Fuzz(func(t *testing.T, bucket uint64, joined string, n uint8, raw []byte) {
		bucket &= 1<<(64-streamBucketBits) - 1
		_, _ = decodeFrags(t, bucket, raw)

		parts := strings.Split(joined, "\xff")
		base := ID(bucket << streamBucketBits)
		var ss []fragStream
		for i := 0; i <= int(n)%8; i++ {
			b := labels.NewScratchBuilder(len(parts))
			for j := 0; j+1 < len(parts); j += 2 {
				// Streams differ in the value of label i, like series
				// of one target do.
				v := parts[j+1]
				if j/2 == i {
					v += fmt.Sprint(i)
				}
				b.Add(parts[j], v)
			}
			b.Sort()
			ss = append(ss, fragStream{id: base + ID(i*7), kind: Kind(i%3 + 1), ls: b.Labels()})
		}
		got, err := decodeFrags(t, bucket, encodeFrag(bucket, ss))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			if g := got[s.id]; g.kind != s.kind || !labels.Equal(g.ls, s.ls) {
				t.Fatalf("stream %d = %+v, want %+v", s.id, g, s)
			}
		}
	})
}

package wal

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
)

func TestAppendBatch(t *testing.T) {
	l, err := Open(t.TempDir(), &Options{Sync: SyncAlways, SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var recs []Record
	for i := 0; i < 100; i++ {
		recs = append(recs, Record{Kind: frame.KindResponseBody, Exchange: uint64(i), Payload: []byte(fmt.Sprintf("chunk %03d %s", i, bytes.Repeat([]byte("x"), i)))})
	}
	first, err := l.AppendBatch(recs[:60])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recs[60]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendBatch(recs[61:]); err != nil {
		t.Fatal(err)
	}
	r := l.NewReader()
	defer r.Close()
	if err := r.Seek(first); err != nil {
		t.Fatal(err)
	}
	i := 0
	for r.Next() {
		if r.Header().Kind == frame.KindSegmentHeader {
			continue
		}
		p, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		if r.Header().Exchange != uint64(i) || !bytes.Equal(p, recs[i].Payload) {
			t.Fatalf("frame %d: exchange %d payload %q", i, r.Header().Exchange, p)
		}
		i++
	}
	if r.Err() != nil || i != 100 {
		t.Fatalf("read %d frames, err %v", i, r.Err())
	}
	segs, _ := l.view()
	if len(segs) < 2 {
		t.Fatalf("batch did not cross segments: %d", len(segs))
	}
	if _, err := l.AppendBatch([]Record{{Kind: frame.KindInvalid}}); err == nil {
		t.Fatal("invalid kind accepted")
	}
}

// TestAppendBatchAllocs: a batch allocates nothing once warm (frames fit
// the free list).
func TestAppendBatchAllocs(t *testing.T) {
	l, err := Open(t.TempDir(), &Options{Sync: SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	recs := make([]Record, 8)
	for i := range recs {
		recs[i] = Record{Kind: frame.KindResponseBody, Time: 1, Payload: bytes.Repeat([]byte("data: x\n\n"), 20)}
	}
	for i := 0; i < 10; i++ {
		l.AppendBatch(recs)
	}
	if n := testing.AllocsPerRun(200, func() {
		if _, err := l.AppendBatch(recs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("AppendBatch allocates %v times", n)
	}
}

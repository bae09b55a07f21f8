package wal

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/golang/snappy"
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

// TestAppendSnappy: a record the caller compressed is stored as the log
// would have stored it, reads back as its bytes, and a block that does
// not match its length is refused without writing anything or failing
// the log.
func TestAppendSnappy(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, &Options{Sync: SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	raw := bytes.Repeat([]byte(`{"role":"user","content":"go vet ./... passes"},`), 200)
	block := snappy.Encode(nil, raw)
	off1, err := l.Append(Record{Kind: frame.KindRequestBody, Exchange: 7, Time: 1, Payload: raw})
	if err != nil {
		t.Fatal(err)
	}
	off2, err := l.AppendBatch([]Record{{Kind: frame.KindRequestBody, Exchange: 7, Time: 1, Payload: block, Snappy: true, RawLen: len(raw)}})
	if err != nil {
		t.Fatal(err)
	}
	end, _ := l.End()
	for _, bad := range []Record{
		{Kind: frame.KindRequestBody, Payload: block, Snappy: true, RawLen: len(raw) - 1},
		{Kind: frame.KindRequestBody, Payload: []byte("not snappy"), Snappy: true, RawLen: 400},
		{Kind: frame.KindRequestBody, Payload: snappy.Encode(nil, []byte("abc")), Snappy: true, RawLen: 3},
	} {
		if _, err := l.AppendBatch([]Record{bad}); err == nil {
			t.Fatalf("a bad compressed record (%d bytes for %d) was taken", len(bad.Payload), bad.RawLen)
		}
	}
	if now, _ := l.End(); now != end || l.Failed() != nil {
		t.Fatalf("a refused record moved the log to %d (from %d) or failed it: %v", now, end, l.Failed())
	}
	r := l.NewReader()
	defer r.Close()
	var stored [][]byte
	var heads []frame.Header
	for _, off := range []uint64{off1, off2} {
		if err := r.Seek(off); err != nil || !r.Next() {
			t.Fatalf("seek %d: %v %v", off, err, r.Err())
		}
		p, err := r.Payload()
		h := r.Header()
		if err != nil || !bytes.Equal(p, raw) || !h.Compressed() {
			t.Fatalf("frame at %d: %d bytes, compressed %v, %v", off, len(p), h.Compressed(), err)
		}
		stored = append(stored, bytes.Clone(r.Stored()))
		h.Offset = 0
		heads = append(heads, h)
	}
	if !bytes.Equal(stored[0], stored[1]) || heads[0] != heads[1] {
		t.Fatalf("a record compressed by the caller is stored unlike one the log compressed: %+v, %+v", heads[0], heads[1])
	}

	nc, err := Open(t.TempDir(), &Options{NoCompression: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.Compresses() || !l.Compresses() {
		t.Fatal("Compresses says otherwise")
	}
	if _, err := nc.Append(Record{Kind: frame.KindRequestBody, Payload: block, Snappy: true, RawLen: len(raw)}); err == nil {
		t.Fatal("a log that does not compress took a compressed record")
	}
}

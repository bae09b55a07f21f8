package wal

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
)

// sealMarks returns the seal markers left in dir.
func sealMarks(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+sealExt))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRotationSealed: under SyncInterval and SyncNone a rotation leaves
// the old segment's sync to the background, marked on disk until then;
// Sync and Close seal it, so no marker outlives them and Check finds
// every segment whole and contiguous.
func TestRotationSealed(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncInterval, SyncNone, SyncAlways} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, &Options{Sync: policy, SegmentSize: 8 << 10, NoCompression: true})
			appendN(t, l, 0, 100)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if m := sealMarks(t, dir); len(m) > 0 {
				t.Fatalf("markers after Sync: %v", m)
			}
			appendN(t, l, 100, 100)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if m := sealMarks(t, dir); len(m) > 0 {
				t.Fatalf("markers after Close: %v", m)
			}
			infos, err := Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(infos) < 3 {
				t.Fatalf("%d segments, want rotations", len(infos))
			}
			for _, in := range infos {
				if in.Err != nil || in.Gap != nil || in.Torn {
					t.Fatalf("segment %s: err %v, gap %v, torn %v", in.Path, in.Err, in.Gap, in.Torn)
				}
			}
			l = mustOpen(t, dir, nil)
			defer l.Close()
			if got := readAll(t, l); len(got) != 200 {
				t.Fatalf("read %d frames, want 200", len(got))
			}
		})
	}
}

// TestUnsealedCrash plays a crash (power loss) during the background
// seal of a segment: the segment's tail never reached the disk, but the
// next segment, started after it, did. Open must remove the later
// segments, truncate the marked one at its last whole frame and say so
// in Recovery, leaving a log that is a prefix of what was written, with
// no gap, that appends go on from.
func TestUnsealedCrash(t *testing.T) {
	for _, cut := range []struct {
		name string
		keep func(size int64) int64 // bytes of the marked segment kept
	}{
		{"torn frame", func(size int64) int64 { return size - 25 }},
		{"lost whole frames", func(size int64) int64 { return size / 2 }},
		{"header only", func(int64) int64 { return int64(headerFrameLen) }},
	} {
		t.Run(cut.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, &Options{SegmentSize: 8 << 10, NoCompression: true})
			appendN(t, l, 0, 150)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			segs, err := listSegments(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(segs) < 3 {
				t.Fatalf("%d segments", len(segs))
			}
			// The crash hit while the second last segment was being
			// sealed: its marker is there and its tail is lost.
			marked := segs[len(segs)-2]
			if err := writeSealMarker(dir, marked.base); err != nil {
				t.Fatal(err)
			}
			keep := cut.keep(marked.size)
			if err := os.Truncate(l.path(marked.base), keep); err != nil {
				t.Fatal(err)
			}
			// Frames wholly within what was kept survive.
			data, err := os.ReadFile(l.path(marked.base))
			if err != nil {
				t.Fatal(err)
			}
			sc := scanBytes(data, marked.base, nil)
			var before int
			for _, s := range segs[:len(segs)-2] {
				d, _ := os.ReadFile(l.path(s.base))
				before += scanBytes(d, s.base, nil).frames - 1
			}
			want := before + sc.frames - 1

			l = mustOpen(t, dir, nil)
			rec := l.Recovery()
			if rec == nil || !strings.Contains(rec.String(), segName(segs[len(segs)-1].base)) {
				t.Fatalf("Recovery = %v, want it to name the removed segment", rec)
			}
			if wantDropped := int64(segs[len(segs)-1].base+uint64(segs[len(segs)-1].size)) - int64(marked.base+uint64(sc.validEnd)); rec.Dropped != wantDropped {
				t.Errorf("Recovery.Dropped = %d, want %d", rec.Dropped, wantDropped)
			}
			if d := l.Damage(); len(d) > 0 {
				t.Fatalf("damage after recovery: %v", d)
			}
			if m := sealMarks(t, dir); len(m) > 0 {
				t.Fatalf("markers after Open: %v", m)
			}
			got := readAll(t, l)
			if len(got) != want {
				t.Fatalf("read %d frames, want %d", len(got), want)
			}
			for i, id := range got {
				if id != i {
					t.Fatalf("frame %d is exchange %d: not a prefix", i, id)
				}
			}
			appendN(t, l, want, 50)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, nil)
			defer l.Close()
			if l.Recovery() != nil || len(l.Damage()) > 0 {
				t.Fatalf("second open: recovery %v, damage %v", l.Recovery(), l.Damage())
			}
			if got := readAll(t, l); len(got) != want+50 {
				t.Fatalf("read %d frames after appending, want %d", len(got), want+50)
			}
		})
	}
}

// TestSealMarkerWhole: a marker left by a crash after its segment was
// synced (the removal of a marker is not synced) changes nothing.
func TestSealMarkerWhole(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 8 << 10})
	appendN(t, l, 0, 100)
	l.Close()
	segs, _ := listSegments(dir)
	writeSealMarker(dir, segs[0].base)
	writeSealMarker(dir, segs[len(segs)-1].base)
	l = mustOpen(t, dir, nil)
	defer l.Close()
	if l.Recovery() != nil || len(l.Damage()) > 0 {
		t.Fatalf("recovery %v, damage %v", l.Recovery(), l.Damage())
	}
	if m := sealMarks(t, dir); len(m) > 0 {
		t.Fatalf("markers after Open: %v", m)
	}
	if got := readAll(t, l); len(got) != 100 {
		t.Fatalf("read %d frames, want 100", len(got))
	}
}

// TestConcurrentMixed: appends, batches and syncs from many goroutines,
// across rotations, some written by their own goroutine and some by the
// writer's, come back whole, each goroutine's in its order.
func TestConcurrentMixed(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncInterval, SyncAlways} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, &Options{Sync: policy, SegmentSize: 32 << 10, QueueLen: 16})
			const writers, n = 6, 60
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var last uint64
					for i := 0; i < n; {
						id := w*1000 + i
						var off uint64
						var err error
						switch i % 3 {
						case 0:
							off, err = l.Append(Record{Kind: frame.KindToolEvent, Exchange: uint64(id), Payload: payloadFor(id)})
							i++
						case 1:
							recs := []Record{
								{Kind: frame.KindToolEvent, Exchange: uint64(id), Payload: payloadFor(id)},
								{Kind: frame.KindToolEvent, Exchange: uint64(id + 1), Payload: payloadFor(id + 1)},
							}
							off, err = l.AppendBatch(recs)
							i += 2
						}
						if err == nil && w%2 == 0 {
							err = l.Sync()
						}
						if err != nil {
							t.Error(err)
							return
						}
						if off <= last {
							t.Errorf("writer %d: offset %d after %d", w, off, last)
							return
						}
						last = off
					}
				}()
			}
			wg.Wait()
			seen := map[int]int{}
			for _, id := range readAll(t, l) {
				w, i := id/1000, id%1000
				if next := seen[w]; i != next {
					t.Fatalf("writer %d: frame %d after %d", w, i, next-1)
				}
				seen[w] = i + 1
			}
			for w := range writers {
				if seen[w] != n {
					t.Fatalf("writer %d: %d frames, want %d", w, seen[w], n)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			infos, _ := Check(dir)
			for _, in := range infos {
				if in.Err != nil || in.Gap != nil || in.Torn {
					t.Fatalf("segment %s: err %v, gap %v, torn %v", in.Path, in.Err, in.Gap, in.Torn)
				}
			}
		})
	}
}

// TestLoneAllocs: a lone appender allocates nothing per Append or
// AppendBatch under every policy, SyncAlways's fdatasync included.
func TestLoneAllocs(t *testing.T) {
	p := bytes.Repeat([]byte("allocation free "), 256)
	for _, policy := range []SyncPolicy{SyncInterval, SyncNone, SyncAlways} {
		for _, compress := range []bool{false, true} {
			l := mustOpen(t, t.TempDir(), &Options{Sync: policy, NoCompression: !compress})
			rec := Record{Kind: frame.KindResponseBody, Exchange: 1, Payload: p}
			recs := []Record{rec, rec, rec}
			appendN(t, l, 0, 10)
			l.AppendBatch(recs)
			runs := 300
			if policy == SyncAlways {
				runs = 30
			}
			if a := testing.AllocsPerRun(runs, func() {
				if _, err := l.Append(rec); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("sync=%v compress=%v: %v allocs per Append, want 0", policy, compress, a)
			}
			if a := testing.AllocsPerRun(runs, func() {
				if _, err := l.AppendBatch(recs); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("sync=%v compress=%v: %v allocs per AppendBatch, want 0", policy, compress, a)
			}
			l.Close()
		}
	}
}

// TestUnsealedRepaired: when Repair has accepted the gap a crash during a
// seal left (the user ran it before reopening), Open keeps the later
// segments Repair kept.
func TestUnsealedRepaired(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 8 << 10, NoCompression: true})
	appendN(t, l, 0, 150)
	l.Close()
	segs, _ := listSegments(dir)
	marked := segs[len(segs)-2]
	writeSealMarker(dir, marked.base)
	if err := os.Truncate(l.path(marked.base), marked.size/2); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(dir); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, nil)
	defer l.Close()
	if m := sealMarks(t, dir); len(m) > 0 {
		t.Fatalf("markers after Open: %v", m)
	}
	after, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(segs) {
		t.Fatalf("%d segments after Open, want the %d Repair kept", len(after), len(segs))
	}
	got := readAll(t, l)
	if len(got) == 0 || got[len(got)-1] != 149 {
		t.Fatalf("read %d frames ending %v, want the last segment's too", len(got), got[max(0, len(got)-1):])
	}
}

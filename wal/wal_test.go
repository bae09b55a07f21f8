package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
)

func payloadFor(i int) []byte {
	return []byte(fmt.Sprintf("frame %d: %s", i, strings.Repeat("abc", i%50)))
}

func mustOpen(t testing.TB, dir string, o *Options) *Log {
	t.Helper()
	l, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func appendN(t testing.TB, l *Log, from, n int) []uint64 {
	t.Helper()
	var offs []uint64
	for i := from; i < from+n; i++ {
		off, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: uint64(i), Payload: payloadFor(i)})
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	return offs
}

// readAll returns the exchange ids of all non-header frames, checking
// payloads.
func readAll(t testing.TB, l *Log) []int {
	t.Helper()
	r := l.NewReader()
	defer r.Close()
	var got []int
	for r.Next() {
		h := r.Header()
		if h.Kind == frame.KindSegmentHeader {
			continue
		}
		p, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		if want := payloadFor(int(h.Exchange)); !bytes.Equal(p, want) {
			t.Fatalf("frame at %d: payload %q, want %q", r.Offset(), p, want)
		}
		got = append(got, int(h.Exchange))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAppendReadReopen(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 4096})
	offs := appendN(t, l, 0, 300)
	if offs[0] != uint64(headerFrameLen) {
		t.Errorf("first offset = %d, want %d", offs[0], headerFrameLen)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(Record{Kind: frame.KindError}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	segs, _ := listSegments(dir)
	if len(segs) < 5 {
		t.Fatalf("%d segments, want rotation at 4 KiB", len(segs))
	}
	for i := 0; i+1 < len(segs); i++ {
		if segs[i].base+uint64(segs[i].size) != segs[i+1].base {
			t.Fatalf("segment %d ends at %d, next starts at %d", i, segs[i].base+uint64(segs[i].size), segs[i+1].base)
		}
	}
	l = mustOpen(t, dir, &Options{SegmentSize: 4096})
	defer l.Close()
	if rec := l.Recovery(); rec != nil {
		t.Fatalf("clean log reported recovery: %v", rec)
	}
	offs2 := appendN(t, l, 300, 10)
	if offs2[0] <= offs[len(offs)-1] {
		t.Fatalf("offsets went backwards: %d after %d", offs2[0], offs[len(offs)-1])
	}
	got := readAll(t, l)
	if len(got) != 310 {
		t.Fatalf("read %d frames, want 310", len(got))
	}
	for i, x := range got {
		if x != i {
			t.Fatalf("frame %d has exchange %d", i, x)
		}
	}
	// Every offset Append returned is a boundary holding that frame.
	r := l.NewReader()
	defer r.Close()
	for i, off := range append(offs, offs2...) {
		if err := r.Seek(off); err != nil {
			t.Fatal(err)
		}
		if !r.Next() || r.Offset() != off || r.Header().Exchange != uint64(i) {
			t.Fatalf("Seek(%d): got frame %d at %d, err %v", off, r.Header().Exchange, r.Offset(), r.Err())
		}
	}
}

func TestSeekErrors(t *testing.T) {
	l := mustOpen(t, t.TempDir(), nil)
	defer l.Close()
	offs := appendN(t, l, 0, 3)
	end, _ := l.End()
	r := l.NewReader()
	defer r.Close()
	var be *BoundaryError
	if err := r.Seek(offs[1] + 1); !errors.As(err, &be) || be.Next != offs[2] {
		t.Fatalf("Seek(mid-frame) = %v, want BoundaryError naming %d", err, offs[2])
	}
	if !strings.Contains(be.Error(), fmt.Sprint(offs[2])) {
		t.Errorf("message %q does not name the next boundary", be)
	}
	if err := r.Seek(offs[2] + 1); !errors.As(err, &be) || be.Next != end {
		t.Fatalf("Seek(in last frame) = %v, want next %d", err, end)
	}
	if err := r.Seek(end + 10); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Seek(past end) = %v", err)
	}
	if err := r.Seek(end); err != nil || r.Next() {
		t.Fatalf("Seek(end) = %v, Next should be false", err)
	}
}

func TestFollow(t *testing.T) {
	l := mustOpen(t, t.TempDir(), &Options{SegmentSize: 2048})
	defer l.Close()
	r := l.NewReader()
	defer r.Close()
	const n = 200
	go func() {
		for i := 0; i < n; i++ {
			if _, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: uint64(i), Payload: payloadFor(i)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	followN(t, r, n, 10*time.Second)
}

func TestReadOnlyFollowsWriter(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 4096, Sync: SyncNone})
	defer l.Close()
	ro := mustOpen(t, dir, &Options{ReadOnly: true})
	defer ro.Close()
	if _, err := ro.Append(Record{Kind: frame.KindError}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only Append: %v", err)
	}
	r := ro.NewReader()
	defer r.Close()
	const n = 300
	done := make(chan struct{})
	go func() {
		defer close(done)
		appendN(t, l, 0, n)
	}()
	followN(t, r, n, 20*time.Second)
	<-done
}

func TestConcurrentAppendsAlways(t *testing.T) {
	l := mustOpen(t, t.TempDir(), &Options{Sync: SyncAlways, SegmentSize: 16 << 10})
	defer l.Close()
	var wg sync.WaitGroup
	offsets := make([][]uint64, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				id := w*1000 + i
				off, err := l.Append(Record{Kind: frame.KindToolEvent, Exchange: uint64(id), Payload: payloadFor(id)})
				if err != nil {
					t.Error(err)
					return
				}
				offsets[w] = append(offsets[w], off)
			}
		}()
	}
	wg.Wait()
	got := readAll(t, l)
	if len(got) != 400 {
		t.Fatalf("read %d frames, want 400", len(got))
	}
	for w := range offsets {
		for i := 1; i < len(offsets[w]); i++ {
			if offsets[w][i] <= offsets[w][i-1] {
				t.Fatalf("writer %d: offsets not increasing", w)
			}
		}
	}
}

func TestStickyWriteError(t *testing.T) {
	l := mustOpen(t, t.TempDir(), nil)
	appendN(t, l, 0, 1)
	// Pull the file out from under the writer: the next write fails.
	l.Sync()
	l.f.Close()
	_, err1 := l.Append(Record{Kind: frame.KindError, Payload: []byte("x")})
	_, err2 := l.Append(Record{Kind: frame.KindError, Payload: []byte("y")})
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Fatalf("errors not sticky: %v, %v", err1, err2)
	}
	if !strings.Contains(err1.Error(), "0000000000000000.wal") {
		t.Errorf("error %q does not name the segment", err1)
	}
	l.Close()
}

func TestAppendAllocs(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncNone, SyncInterval} {
		l := mustOpen(t, t.TempDir(), &Options{Sync: policy})
		p := bytes.Repeat([]byte("allocation free "), 256)
		rec := Record{Kind: frame.KindResponseBody, Exchange: 1, Payload: p}
		appendN(t, l, 0, 10)
		allocs := testing.AllocsPerRun(500, func() {
			if _, err := l.Append(rec); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("sync=%v: %v allocs per Append, want 0", policy, allocs)
		}
		l.Close()
	}
}

func TestReaderAllocs(t *testing.T) {
	l := mustOpen(t, t.TempDir(), &Options{NoCompression: true})
	defer l.Close()
	appendN(t, l, 0, 2000)
	r := l.NewReader()
	defer r.Close()
	r.Next()
	allocs := testing.AllocsPerRun(1000, func() {
		if !r.Next() {
			t.Fatal(r.Err())
		}
		if _, err := r.Payload(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocs per Reader.Next, want 0", allocs)
	}
}

func TestCloseLeaksNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, p := range []SyncPolicy{SyncAlways, SyncInterval, SyncNone} {
		l := mustOpen(t, t.TempDir(), &Options{Sync: p})
		appendN(t, l, 0, 20)
		r := l.NewReader()
		for r.Next() {
		}
		errc := make(chan error, 1)
		go func() { errc <- r.Wait(context.Background()) }()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait after Close = %v, want ErrClosed", err)
		}
		r.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, nil)
	defer l.Close()
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v, want ErrLocked", err)
	}
	if _, err := Repair(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("Repair while open: %v, want ErrLocked", err)
	}
}

func TestRetention(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 1024, RetentionBytes: 4096})
	offs := appendN(t, l, 0, 10)
	l.Pin("session-a", offs[1], offs[2])
	appendN(t, l, 10, 200)
	segs, _ := l.view()
	var total int64
	for _, s := range segs[1:] {
		total += s.size
	}
	if total > 4096+1024 {
		t.Errorf("log holds %d bytes beyond the pinned segment, cap 4096", total)
	}
	r := l.NewReader()
	if err := r.Seek(offs[1]); err != nil {
		t.Fatalf("pinned frame dropped: %v", err)
	}
	r.Close()
	if first, _ := l.First(); first != 0 {
		t.Errorf("first segment %d, want the pinned one at 0", first)
	}
	l.Unpin("session-a")
	if _, err := l.Retain(); err != nil {
		t.Fatal(err)
	}
	if first, _ := l.First(); first == 0 {
		t.Errorf("unpinned segment kept")
	}
	r = l.NewReader()
	if err := r.Seek(offs[1]); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("Seek into dropped segment: %v", err)
	}
	if got := readAll(t, l); len(got) == 0 || got[len(got)-1] != 209 {
		t.Errorf("after retention read %d frames", len(got))
	}
	r.Close()
	l.Close()

	// Age.
	l = mustOpen(t, dir, &Options{SegmentSize: 1024, RetentionAge: time.Hour})
	defer l.Close()
	segs, _ = l.view()
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(l.path(segs[0].base), old, old)
	l.mu.Lock()
	l.segs[0].modTime = old
	l.mu.Unlock()
	removed, err := l.Retain()
	if err != nil || len(removed) != 1 || filepath.Base(removed[0]) != segName(segs[0].base) {
		t.Fatalf("Retain by age removed %v, %v", removed, err)
	}
}

// followN reads n frames from r (skipping segment headers), waiting for
// the writer as needed; frame i must carry exchange id i.
func followN(t *testing.T, r *Reader, n int, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	next := 0
	for next < n {
		for r.Next() {
			if r.Header().Kind == frame.KindSegmentHeader {
				continue
			}
			if got := int(r.Header().Exchange); got != next {
				t.Fatalf("got exchange %d, want %d", got, next)
			}
			next++
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		if next < n {
			if err := r.Wait(ctx); err != nil {
				t.Fatalf("after %d frames: %v", next, err)
			}
		}
	}
}

// TestExpirePolicy: Expirable plans what Expire removes, by age at an
// injected time and by size, never past Upto, never the active segment or
// a pinned one, and removes nothing itself.
func TestExpirePolicy(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 1024})
	defer l.Close()
	offs := appendN(t, l, 0, 120)
	segs, _ := l.view()
	if len(segs) < 5 {
		t.Fatalf("%d segments, want at least 5", len(segs))
	}
	l.Pin("p", offs[len(offs)-1], offs[len(offs)-1]) // in the active segment anyway
	now := segs[0].modTime.Add(48 * time.Hour)

	plan, total := l.Expirable(Policy{Age: 24 * time.Hour, Upto: math.MaxUint64}, now)
	if len(plan) != len(segs)-1 || plan[0].Base != 0 || total == 0 {
		t.Fatalf("by age: %d of %d segments, total %d", len(plan), len(segs), total)
	}
	if plan, _ := l.Expirable(Policy{Age: 24 * time.Hour, Upto: math.MaxUint64}, segs[0].modTime); len(plan) != 0 {
		t.Fatalf("nothing is a day old yet, plan %+v", plan)
	}
	upto := segs[2].base + uint64(segs[2].size)
	plan, _ = l.Expirable(Policy{Age: 24 * time.Hour, Upto: upto}, now)
	if len(plan) != 3 || plan[2].End != upto {
		t.Fatalf("up to %d: %+v", upto, plan)
	}
	if got, _ := l.view(); len(got) != len(segs) {
		t.Fatal("Expirable removed segments")
	}
	removed, err := l.Expire(Policy{Age: 24 * time.Hour, Upto: upto}, now)
	if err != nil || len(removed) != 3 {
		t.Fatalf("Expire: %v, %v", removed, err)
	}
	if first, _ := l.First(); first != upto {
		t.Fatalf("first offset %d, want %d", first, upto)
	}
	// By size: everything but the newest 2 KiB or so, oldest first.
	plan, total = l.Expirable(Policy{Bytes: 2048, Upto: math.MaxUint64}, now)
	left := total
	for _, s := range plan {
		left -= s.Size
	}
	if len(plan) == 0 || left > 2048+1024 {
		t.Fatalf("by size: plan %d segments, %d of %d bytes left", len(plan), left, total)
	}
}

// TestExpireWhileAppending: retention run from another goroutine while
// the writer appends and rotates (the proxy's case) loses no frame that
// it did not remove, and races nothing (run with -race).
func TestExpireWhileAppending(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 1024})
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		appendN(t, l, 0, 400)
	}()
	for {
		select {
		case <-done:
		default:
			end, _ := l.End()
			if _, err := l.Expire(Policy{Bytes: 2048, Upto: end}, time.Now()); err != nil {
				t.Error(err)
			}
			continue
		}
		break
	}
	first, _ := l.First()
	r := l.NewReader()
	defer r.Close()
	if err := r.Seek(first); err != nil {
		t.Fatal(err)
	}
	n := 0
	for r.Next() {
		n++
	}
	if err := r.Err(); err != nil || n == 0 {
		t.Fatalf("read %d frames after retention: %v", n, err)
	}
}

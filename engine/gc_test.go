package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/bbengine/bbengine/internal/crypt"
)

// spilledData writes a session whose prompt and answer are longer than
// the TextLimit of 64 the returned engine has, so both are blobs, and
// returns the engine and the blobs' digests.
func spilledData(t *testing.T) (string, *Engine, []string) {
	t.Helper()
	return spilledDataKeyed(t, nil)
}

// spilledDataKeyed is spilledData with the engine's Options.Keys set to
// keys.
func spilledDataKeyed(t *testing.T, keys *crypt.Keys) (string, *Engine, []string) {
	t.Helper()
	dir, log := newData(t)
	var c clock
	cv := &conversation{session: "s", system: "sys", model: "claude-x"}
	cv.user("Summarize: " + strings.Repeat("log line\n", 40))
	r1 := anthropicReply{text: "  " + strings.Repeat("The answer goes on. ", 20) + "\n", in: 10, out: 5}
	writeWAL(t, log, &c, 0, []fx{{session: "s", req: cv.request(), resp: r1.stream(cv.model), chunks: 7}})
	e := open(t, dir, log, &Options{TextLimit: 64, Keys: keys})
	catchUp(t, e)
	evs, err := e.Events("s", EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var sums []string
	for _, ev := range evs {
		if ev.TextBlob != "" {
			sums = append(sums, ev.TextBlob)
		}
	}
	if len(sums) != 2 {
		t.Fatalf("%d events name a blob, want 2", len(sums))
	}
	return dir, e, sums
}

// putOld stores data as a blob dated two hours back.
func putOld(t *testing.T, dir, data string) string {
	t.Helper()
	sum, err := NewBlobs(dir).Put([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(NewBlobs(dir).Path(sum), old, old); err != nil {
		t.Fatal(err)
	}
	return sum
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// TestGCBlobs: blob gc removes the blobs no event names (when older than
// the grace period) and a stale temporary file, keeps the named ones and
// the young, reports files whose name is not a blob's by path; a dry run
// removes nothing.
func TestGCBlobs(t *testing.T) {
	dir, e, named := spilledData(t)
	bs := NewBlobs(dir)
	for _, sum := range named {
		old := time.Now().Add(-2 * time.Hour)
		os.Chtimes(bs.Path(sum), old, old)
	}
	orphan := putOld(t, dir, "nobody names this")
	young, err := bs.Put([]byte("nobody names this either, yet"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "blobs", "sha256")
	tmp := filepath.Join(root, ".tmp-123")
	notHex := filepath.Join(root, orphan[:2], "not-a-digest")
	wrongDir := filepath.Join(root, "zz")
	misplaced := filepath.Join(root, "00", strings.Repeat("ab", 32))
	for _, p := range []string{tmp, notHex, misplaced} {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(wrongDir, 0o700)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(tmp, old, old)

	dry, err := e.GCBlobs(context.Background(), &BlobGCOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, r := range dry.Removed {
		removed = append(removed, r.Path)
	}
	if got, want := strings.Join(removed, " "), tmp+" "+bs.Path(orphan); got != want {
		t.Errorf("dry run would remove %s, want %s", got, want)
	}
	if dry.Referenced != 2 || dry.Young != 1 || dry.Bytes != int64(len("nobody names this")+len("junk")) {
		t.Errorf("dry run: %+v", dry)
	}
	if !exists(bs.Path(orphan)) || !exists(tmp) {
		t.Fatal("the dry run removed a file")
	}
	bad := map[string]bool{}
	for _, b := range dry.Bad {
		bad[b.Path] = true
	}
	for _, p := range []string{notHex, wrongDir, misplaced} {
		if !bad[p] {
			t.Errorf("%s is not reported as bad: %+v", p, dry.Bad)
		}
	}

	got, err := e.GCBlobs(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Removed) != 2 || exists(bs.Path(orphan)) || exists(tmp) {
		t.Errorf("gc: %+v; the orphan is still there: %v", got, exists(bs.Path(orphan)))
	}
	for _, sum := range append(named, young) {
		if !exists(bs.Path(sum)) {
			t.Errorf("gc removed %s, which an event names or which is young", sum)
		}
	}
	for _, p := range []string{notHex, misplaced} {
		if !exists(p) {
			t.Errorf("gc removed %s, which is not a blob", p)
		}
	}
	// Storing a blob the store holds already makes it young again: the
	// event about to name it keeps it from the next gc.
	again := putOld(t, dir, "stored twice")
	if _, err := bs.Put([]byte("stored twice")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GCBlobs(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !exists(bs.Path(again)) {
		t.Error("gc removed a blob stored again a moment ago")
	}
}

// TestGCBlobsKeyed: with keys the engine's blobs are encrypted and
// named by HMAC (blobs/hmac), they read back as the events' texts, and
// blob gc keeps the named ones and removes unnamed ones of both
// layouts.
func TestGCBlobsKeyed(t *testing.T) {
	keys := crypt.Ephemeral()
	dir, e, named := spilledDataKeyed(t, keys)
	bs := NewBlobsKeyed(dir, keys)
	evs, err := e.Events("s", EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, ev := range evs {
		if ev.TextBlob == "" {
			continue
		}
		if exists(NewBlobs(dir).Path(ev.TextBlob)) || !exists(bs.Path(ev.TextBlob)) {
			t.Fatalf("blob %s is not in blobs/hmac alone", ev.TextBlob)
		}
		data, err := e.Blobs().Get(ev.TextBlob)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != ev.TextBytes || !strings.HasPrefix(string(data), ev.Text) {
			t.Fatalf("blob %s holds %d bytes %.40q, the event %d bytes %.40q", ev.TextBlob, len(data), data, ev.TextBytes, ev.Text)
		}
		os.Chtimes(bs.Path(ev.TextBlob), old, old)
	}
	orphan, err := bs.Put([]byte("nobody names this"))
	if err != nil {
		t.Fatal(err)
	}
	os.Chtimes(bs.Path(orphan), old, old)
	clearOrphan := putOld(t, dir, "nobody names this either")
	got, err := e.GCBlobs(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Removed) != 2 || exists(bs.Path(orphan)) || exists(NewBlobs(dir).Path(clearOrphan)) || len(got.Bad) != 0 {
		t.Errorf("gc: %+v, want both orphans removed and nothing bad", got)
	}
	for _, sum := range named {
		if !exists(bs.Path(sum)) {
			t.Errorf("gc removed %s, which an event names", sum)
		}
	}
}

// TestGCBlobsKilled kills a process in the middle of blob gc (SIGKILL,
// after its first removal): every blob an event names is still there,
// and the next gc finishes the work.
func TestGCBlobsKilled(t *testing.T) {
	if dir := os.Getenv("BB_GC_CHILD"); dir != "" {
		e, err := Open(dir, suite(t, nil))
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		_, err = e.GCBlobs(context.Background(), &BlobGCOptions{Removed: func(p string) {
			fmt.Println(p)
			time.Sleep(time.Millisecond)
		}})
		fmt.Println("done", err)
		os.Exit(0)
	}
	dir, e, named := spilledData(t)
	const orphans = 2000
	for i := range orphans {
		putOld(t, dir, fmt.Sprint("orphan ", i))
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGCBlobsKilled$")
	cmd.Env = append(os.Environ(), "BB_GC_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil || !strings.HasPrefix(line, filepath.Join(dir, "blobs")) {
		t.Fatalf("the child's first line: %q, %v", line, err)
	}
	bs := NewBlobs(dir)
	for _, sum := range named {
		if !exists(bs.Path(sum)) {
			t.Fatalf("blob %s, which an event names, is gone after a killed gc", sum)
		}
	}
	n, _, _ := countFiles(filepath.Join(dir, "blobs"))
	if n <= len(named) {
		t.Fatalf("%d blobs left: the child was not killed in the middle", n)
	}
	e2, err := Open(dir, suite(t, &Options{TextLimit: 64, WAL: e.WAL()}))
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	got, err := e2.GCBlobs(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := countFiles(filepath.Join(dir, "blobs")); n != len(named) || got.Referenced != len(named) {
		t.Errorf("after the second gc: %d blobs, %d named; want %d", n, got.Referenced, len(named))
	}
	if _, err := e2.Events("s", EventFilter{}); err != nil {
		t.Fatal(err)
	}
}

func countFiles(dir string) (n int, bytes int64, err error) {
	err = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n++
			bytes += fi.Size()
		}
		return err
	})
	return n, bytes, err
}

// TestCompactDropped: memory derived again drops the artifact and
// memory index families and writes them again; compacting the ranges
// recorded frees the dead keys' bytes and leaves the state as it was.
func TestCompactDropped(t *testing.T) {
	dir, log := newData(t)
	var c clock
	writeWAL(t, log, &c, 0, toolLoop("s", 40))
	e := open(t, dir, log, &Options{CompactDelay: time.Hour})
	catchUp(t, e)
	before := dump(t, e)
	memory := func() uint64 {
		t.Helper()
		if err := e.db.Flush(); err != nil {
			t.Fatal(err)
		}
		n, err := e.db.EstimateDiskUsage([]byte{'a'}, []byte{'j'})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	live := memory()
	if _, err := e.RebuildMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	dead := memory()
	if err := e.CompactPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	compacted := memory()
	if e.Compactions() != 2 || compacted >= dead || dead <= live {
		t.Errorf("%d compactions; memory's tables: %d bytes, %d after it was derived again, %d compacted", e.Compactions(), live, dead, compacted)
	}
	if got := dump(t, e); got != before {
		t.Error("the derived state changed after memory was derived again and compacted")
	}
}

// TestCompactBackground: the compactor compacts the dropped ranges by
// itself, CompactDelay after the pass.
func TestCompactBackground(t *testing.T) {
	dir, log := newData(t)
	var c clock
	writeWAL(t, log, &c, 0, toolLoop("s", 5))
	e := open(t, dir, log, &Options{CompactDelay: time.Millisecond})
	catchUp(t, e)
	if _, err := e.RebuildMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); e.Compactions() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the compactor did not compact the dropped ranges")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMergeRanges(t *testing.T) {
	r := func(lo, hi string) [2][]byte { return [2][]byte{[]byte(lo), []byte(hi)} }
	got := mergeRanges([][2][]byte{r("i", "j"), r("a", "b"), r("e1", "e3"), r("e2", "e4"), r("b", "c")})
	var s []string
	for _, x := range got {
		s = append(s, string(x[0])+"-"+string(x[1]))
	}
	if want := "a-c e1-e4 i-j"; strings.Join(s, " ") != want {
		t.Errorf("mergeRanges = %s, want %s", strings.Join(s, " "), want)
	}
}

// TestCompactImportedAgain: an imported session derived again (its file
// grew) drops its old timeline; the compactor is told of that range.
func TestCompactImportedAgain(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, &Options{CompactDelay: time.Hour})
	src := filepath.Join(t.TempDir(), "s1.jsonl")
	for _, body := range []string{"{\"n\":1}\n", "{\"n\":1}\n{\"n\":2}\n"} {
		if err := os.WriteFile(src, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		importPath(t, e, "lines", src)
	}
	if got, want := texts(t, e, "lines:s1"), `1:{"n":1}|2:{"n":2}|`; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	e.comp.mu.Lock()
	pending := mergeRanges(e.comp.pending)
	e.comp.mu.Unlock()
	if len(pending) != 1 || pending[0][0][0] != 'e' {
		t.Fatalf("ranges to compact: %q, want the session's events", pending)
	}
	if err := e.CompactPending(context.Background()); err != nil || e.Compactions() != 1 {
		t.Fatalf("compactions %d, %v", e.Compactions(), err)
	}
}

// TestCompactDiskFull: a compaction whose tables cannot be written (a
// full disk) harms nothing: Pebble retries it, the compactor gives up
// when its context ends, the state is as it was, the ranges stay
// recorded and the next round compacts them; and an engine whose
// compactor meets a full disk in the background still closes.
func TestCompactDiskFull(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { testCompactDiskFull(t, m.keys()) })
	}
}

// testCompactDiskFull runs TestCompactDiskFull, with errorfs below the
// encryption when keys are set.
func testCompactDiskFull(t *testing.T, keys *crypt.Keys) {
	dir, log := newData(t)
	var full atomic.Bool
	var failed atomic.Int64
	failing := make(chan struct{})
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasSuffix(op.Path, ".sst") {
			if failed.Add(1) == 3 {
				close(failing)
			}
			return syscall.ENOSPC
		}
		return nil
	}))
	var c clock
	writeWAL(t, log, &c, 0, toolLoop("s", 20))
	e := open(t, dir, log, &Options{CompactDelay: time.Hour, FS: fs, Keys: keys})
	catchUp(t, e)
	before := dump(t, e)
	// The tables before and after memory is derived again overlap: the
	// compaction must write new ones.
	if err := e.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.RebuildMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Flush(); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-failing; cancel() }()
	err := e.CompactPending(ctx)
	full.Store(false)
	if !errors.Is(err, context.Canceled) || failed.Load() < 3 {
		t.Fatalf("compaction on a full disk: %v after %d failed writes, want it canceled", err, failed.Load())
	}
	if got := dump(t, e); got != before {
		t.Fatal("a failed compaction changed the derived state")
	}
	if err := e.CompactPending(context.Background()); err != nil || e.Compactions() != 2 {
		t.Fatalf("the next round: %d compactions, %v", e.Compactions(), err)
	}
	if got := dump(t, e); got != before {
		t.Fatal("the derived state changed")
	}

	// In the background: the disk fills while the compactor runs.
	e.comp.mu.Lock()
	e.comp.pending = nil
	e.comp.mu.Unlock()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	failed.Store(0)
	failing = make(chan struct{})
	e = open(t, dir, log, &Options{CompactDelay: time.Millisecond, FS: fs, Keys: keys})
	catchUp(t, e)
	if err := e.db.Flush(); err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	defer full.Store(false)
	// The compactor flushes the memtable that holds memory derived
	// again before it compacts: the flush fails, and Pebble retries it.
	if _, err := e.RebuildMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-failing
	if err := e.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
}

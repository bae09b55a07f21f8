package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/wal"
)

// newData returns a data directory with an open writable WAL.
func newData(t testing.TB) (string, *wal.Log) {
	t.Helper()
	dir := t.TempDir()
	log, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return dir, log
}

// suiteEncrypt (BBENGINE_TEST_ENCRYPT=1) runs the suite with every
// store encrypted: open and suite give each engine suiteKeys, the same
// in every process (the crash tests' children too).
var suiteEncrypt = os.Getenv("BBENGINE_TEST_ENCRYPT") == "1"

var (
	suiteOnce sync.Once
	suiteK    *crypt.Keys
)

// suiteKeys returns the suite's keys: nil unless suiteEncrypt.
func suiteKeys(t testing.TB) *crypt.Keys {
	if !suiteEncrypt {
		return nil
	}
	suiteOnce.Do(func() {
		if tt, ok := t.(*testing.T); ok {
			suiteK = sharedKeys(tt)
		} else {
			suiteK = crypt.Ephemeral()
		}
	})
	return suiteK
}

// suite returns opts with the suite's keys when it has none.
func suite(t testing.TB, opts *Options) *Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Keys == nil {
		o.Keys = suiteKeys(t)
	}
	return &o
}

func open(t testing.TB, dir string, log *wal.Log, opts *Options) *Engine {
	t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.WAL = log
	e, err := Open(dir, suite(t, &o))
	if err != nil {
		t.Fatal(err)
	}
	if _, enc, _ := storeEncryption(filepath.Join(dir, "db")); suiteEncrypt && !enc {
		t.Fatal("BBENGINE_TEST_ENCRYPT=1 and the store is not encrypted")
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func catchUp(t testing.TB, e *Engine) Progress {
	t.Helper()
	p, err := e.CatchUp(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dump returns the whole derived state as text.
func dump(t testing.TB, e *Engine) string {
	t.Helper()
	var b strings.Builder
	if err := e.Dump(func(k, v []byte) error {
		fmt.Fprintf(&b, "%x %s\n", k, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestToolLoopTimeline(t *testing.T) {
	dir, log := newData(t)
	var c clock
	writeWAL(t, log, &c, 0, toolLoop("s1", 3))
	e := open(t, dir, log, nil)
	p := catchUp(t, e)
	if p.Exchanges != 3 {
		t.Fatalf("progress %+v, want 3 exchanges", p)
	}
	s, err := e.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != 3 || s.Agent != "claude-code" || s.Client != "claude-cli/2.1.330" || s.Threads != 1 {
		t.Errorf("session %+v", s)
	}
	// 3 calls: input 100+101+102 plus 1000 cached each.
	if s.Usage.Input != 303+3000 || s.Usage.Output != 63 || s.Usage.CacheRead != 3000 {
		t.Errorf("usage %+v", s.Usage)
	}
	evs, err := e.Events("s1", EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		k := string(ev.Kind)
		if ev.Kind == KindMessage {
			k += ":" + ev.Role
		}
		kinds = append(kinds, k)
	}
	want := "system message:user model_call thinking message:assistant tool_call usage " +
		"tool_result model_call thinking message:assistant tool_call usage " +
		"tool_result model_call thinking message:assistant usage"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("kinds:\n got %s\nwant %s", got, want)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d", i, ev.Seq)
		}
		if ev.Prov.Exchange == 0 || ev.Prov.RequestID == "" || ev.Prov.First == 0 || ev.Prov.Last < ev.Prov.First {
			t.Errorf("event %d provenance %+v", ev.Seq, ev.Prov)
		}
		if ev.Kind == KindToolCall && string(ev.Tool.Args) != `{"command":"go test ./... -run Test0"}` && ev.Tool.ID == "toolu_s1_0" {
			t.Errorf("tool call args %s", ev.Tool.Args)
		}
		if ev.Kind == KindToolResult && (ev.Tool.ID != "toolu_s1_0" && ev.Tool.ID != "toolu_s1_1" || ev.Tool.Name != "Bash") {
			t.Errorf("tool result %+v", ev.Tool)
		}
	}
	// Every event points back into the WAL frames of its exchange.
	for _, ev := range evs {
		x, err := e.Exchange(ev.Prov.Exchange)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Prov.First < x.Offsets[0] || ev.Prov.Last > x.Offsets[len(x.Offsets)-1] || ev.Seq < x.FirstSeq || ev.Seq > x.LastSeq {
			t.Errorf("event %d provenance %+v outside exchange %+v", ev.Seq, ev.Prov, x)
		}
	}
}

func TestRebuildIdentical(t *testing.T) {
	dir, log := newData(t)
	var c clock
	e := open(t, dir, log, &Options{BatchBytes: 2048})
	id := uint64(0)
	// Write and derive in steps, so commits fall mid-exchange and the
	// canonicalizer resumes across them.
	for i := 0; i < 3; i++ {
		id = interleaveWAL(t, log, &c, id, toolLoop(fmt.Sprintf("a%d", i), 4), toolLoop(fmt.Sprintf("b%d", i), 3))
		catchUp(t, e)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs from the incremental state")
	ss, err := e.Sessions(SessionFilter{})
	if err != nil || len(ss) != 6 {
		t.Fatalf("sessions %d %v", len(ss), err)
	}
	for _, s := range ss {
		if s.Threads != 1 {
			t.Errorf("session %s has %d threads (interleaving confused the diff)", s.ID, s.Threads)
		}
	}
}

// sameAfterRebuild rebuilds e and fails unless its state equals before
// (a dump taken from the incremental state).
func sameAfterRebuild(t testing.TB, e *Engine, before, what string) {
	t.Helper()
	if _, err := e.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e); after != before {
		t.Fatalf("%s:\n%s", what, diffLines(before, after))
	}
}

// diffLines shows the first line where a (the incremental state, or the
// golden file) and b (the rebuilt state, or the output) differ.
func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n - %s\n + %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(al), len(bl))
}

func TestResumeMidExchange(t *testing.T) {
	dir, log := newData(t)
	var c clock
	xs := toolLoop("s", 3)
	recs := xs[1].frames(t, 2, &c)
	writeWAL(t, log, &c, 0, xs[:1])
	// Half of the second exchange, then the engine stops.
	if _, err := log.AppendBatch(recs[:4]); err != nil {
		t.Fatal(err)
	}
	e, err := Open(dir, suite(t, &Options{WAL: log}))
	if err != nil {
		t.Fatal(err)
	}
	catchUp(t, e)
	e.Close()
	if _, err := log.AppendBatch(recs[4:]); err != nil {
		t.Fatal(err)
	}
	writeWAL(t, log, &c, 2, xs[2:])
	e = open(t, dir, log, nil)
	catchUp(t, e)
	got := dump(t, e)
	sameAfterRebuild(t, e, got, "resumed state differs from a rebuild")
	s, _ := e.Session("s")
	if s.Requests != 3 {
		t.Fatalf("requests %d, want 3", s.Requests)
	}
}

func TestLock(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	_, err := Open(dir, suite(t, nil))
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != os.Getpid() || !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Errorf("error does not name the holder: %v", err)
	}
	if err := e.SetEndpoint("127.0.0.1:1234", "tok"); err != nil {
		t.Fatal(err)
	}
	h, held, err := ReadHolder(dir)
	if err != nil || !held || h.Addr != "127.0.0.1:1234" || h.Token != "tok" {
		t.Fatalf("holder %+v held %v err %v", h, held, err)
	}
	e.Close()
	if _, held, _ := ReadHolder(dir); held {
		t.Fatal("lock still held after Close")
	}
}

func TestStaleExchange(t *testing.T) {
	dir, log := newData(t)
	var c clock
	xs := toolLoop("s", 2)
	recs := xs[0].frames(t, 1, &c)
	if _, err := log.AppendBatch(recs[:5]); err != nil { // no end frame: its proxy died
		t.Fatal(err)
	}
	c.tick(int64(time.Hour))
	writeWAL(t, log, &c, 1, xs[1:])
	e := open(t, dir, log, nil)
	catchUp(t, e)
	x, err := e.Exchange(1)
	if err != nil || !strings.HasPrefix(x.Note, "abandoned") {
		t.Fatalf("exchange 1: %+v %v", x, err)
	}
	evs, _ := e.Events("s", EventFilter{})
	found := false
	for _, ev := range evs {
		if ev.Kind == KindInterruption && ev.Prov.Exchange == 1 {
			found = true
		}
	}
	if !found {
		t.Error("no interruption event for the abandoned exchange")
	}
}

// TestCrashResume kills a process in the middle of canonicalization,
// resumes, and compares the result with a clean rebuild.
func TestCrashResume(t *testing.T) {
	if dir := os.Getenv("BBENGINE_CRASH_DIR"); dir != "" {
		e, err := Open(dir, suite(t, &Options{BatchBytes: 4096}))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println("ready")
		e.CatchUp(context.Background())
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("short")
	}
	dir, log := newData(t)
	var c clock
	id := uint64(0)
	for i := 0; i < 40; i++ {
		id = interleaveWAL(t, log, &c, id, toolLoop(fmt.Sprintf("a%d", i), 5), toolLoop(fmt.Sprintf("b%d", i), 4))
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	killRounds(t, "TestCrashResume", "BBENGINE_CRASH_DIR", dir, []time.Duration{30 * time.Millisecond, 80 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond})
	resumeAfterKills(t, dir, 80)
}

// TestPassesAfterResume: a second pass on the same engine, after one that
// resumed with an exchange open (its proxy was killed mid-exchange, so it
// never ends), must not derive anything twice.
func TestPassesAfterResume(t *testing.T) {
	dir, log := newData(t)
	var c clock
	xs := toolLoop("t", 4)
	dead := toolLoop("dead", 1)[0].frames(t, 99, &c)
	writeWAL(t, log, &c, 0, xs[:1])
	if _, err := log.AppendBatch(dead[:3]); err != nil {
		t.Fatal(err)
	}
	e, err := Open(dir, suite(t, &Options{WAL: log}))
	if err != nil {
		t.Fatal(err)
	}
	catchUp(t, e)
	e.Close()
	e = open(t, dir, log, nil) // resumes with exchange 99 open
	writeWAL(t, log, &c, 1, xs[1:2])
	catchUp(t, e)
	writeWAL(t, log, &c, 2, xs[2:3])
	catchUp(t, e) // a later pass on the same state
	writeWAL(t, log, &c, 3, xs[3:])
	catchUp(t, e)
	got := dump(t, e)
	if s, _ := e.Session("t"); s.Requests != 4 {
		t.Errorf("requests %d, want 4", s.Requests)
	}
	sameAfterRebuild(t, e, got, "state differs from a rebuild")
}

// TestBadFrame: a metadata frame that does not decode is noted on its
// exchange and derivation goes on.
func TestBadFrame(t *testing.T) {
	dir, log := newData(t)
	var c clock
	recs := toolLoop("bad", 1)[0].frames(t, 1, &c)
	recs[0].Payload = []byte("{not json")
	if _, err := log.AppendBatch(recs); err != nil {
		t.Fatal(err)
	}
	writeWAL(t, log, &c, 1, toolLoop("good", 2))
	e := open(t, dir, log, nil)
	catchUp(t, e)
	x, err := e.Exchange(1)
	if err != nil || !strings.Contains(x.Note, "does not decode") || !strings.Contains(x.Note, "offset") {
		t.Fatalf("exchange 1: %+v %v", x, err)
	}
	if s, err := e.Session("good"); err != nil || s.Requests != 2 {
		t.Fatalf("session after the bad frame: %+v %v", s, err)
	}
	e.Close()
	if _, err := e.Sessions(SessionFilter{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sessions after Close: %v", err)
	}
	if _, err := e.CatchUp(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("CatchUp after Close: %v", err)
	}
}

// TestEmptyDir: a fresh data directory (no WAL segment yet, as while a
// proxy starts) derives nothing and lists no sessions, without error.
func TestEmptyDir(t *testing.T) {
	e, err := Open(t.TempDir(), suite(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if p, err := e.CatchUp(context.Background()); err != nil || p.Frames != 0 {
		t.Fatalf("CatchUp: %+v %v", p, err)
	}
	if ss, err := e.Sessions(SessionFilter{}); err != nil || len(ss) != 0 {
		t.Fatalf("Sessions: %v %v", ss, err)
	}
}

// killRounds runs the test named again in a child process deriving the
// data directory dir (env names it), and kills it with SIGKILL after
// each delay.
func killRounds(t *testing.T, test, env, dir string, delays []time.Duration) {
	t.Helper()
	killed := 0
	for round, delay := range delays {
		cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
		cmd.Env = append(os.Environ(), env+"="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if err != nil && strings.Contains(err.Error(), "killed") {
			killed++
		}
		t.Logf("round %d: killed after %v: %v %s", round, delay, err, strings.TrimSpace(out.String()))
	}
	t.Logf("%d of %d rounds killed mid-run", killed, len(delays))
}

// resumeAfterKills opens dir after killRounds, derives the rest and
// checks that the state is what a rebuild gives, with want sessions,
// which it returns.
func resumeAfterKills(t *testing.T, dir string, want int) []Session {
	t.Helper()
	return resumeAfterKillsKeys(t, dir, want, nil)
}

// resumeAfterKillsKeys is resumeAfterKills of a store encrypted under
// keys when they are set.
func resumeAfterKillsKeys(t *testing.T, dir string, want int, keys *crypt.Keys) []Session {
	t.Helper()
	ro, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	e := open(t, dir, ro, &Options{Keys: keys})
	applied, _ := e.Applied()
	t.Logf("applied offset %d before the final pass", applied)
	catchUp(t, e)
	got := dump(t, e)
	sameAfterRebuild(t, e, got, "state after crashes differs from a rebuild")
	ss, _ := e.Sessions(SessionFilter{})
	if len(ss) != want {
		t.Fatalf("%d sessions, want %d", len(ss), want)
	}
	return ss
}

package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/internal/claudelog"
	"github.com/bbengine/bbengine/wal"
)

// claudeLog writes a Claude Code JSONL transcript (internal/claudelog).
type claudeLog = claudelog.Log

func newClaudeLog(session string) *claudeLog { return claudelog.New(session) }

var (
	textBlock = claudelog.Text
	use       = claudelog.Use
)

// memorySession is claudelog.CacheSession.
func memorySession() *claudeLog { return claudelog.CacheSession() }

func deriveLog(t testing.TB, l *claudeLog) (*Imported, []Artifact) {
	t.Helper()
	path := filepath.Join(t.TempDir(), l.Session+".jsonl")
	if err := os.WriteFile(path, l.Data(), 0o644); err != nil {
		t.Fatal(err)
	}
	file, _, _ := readLog(t, path, "claude:"+l.Session)
	im, err := DeriveImport("claude", "claude:"+l.Session, []ImportFile{file})
	if err != nil {
		t.Fatal(err)
	}
	im.Session.ID = "claude:" + l.Session
	red, _ := redact.New(nil)
	arts, _ := DeriveMemory(&im.Session, im.Events, red)
	return im, arts
}

func byType(arts []Artifact, typ ArtifactType) []Artifact {
	var out []Artifact
	for _, a := range arts {
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

func TestDeriveMemory(t *testing.T) {
	_, arts := deriveLog(t, memorySession())
	outs := byType(arts, ArtifactOutcome)
	if len(outs) != 3 {
		t.Fatalf("outcomes = %d, want 3: %+v", len(outs), outs)
	}
	wantStatus := []string{"fail", "success", "blocked"}
	for i, o := range outs {
		if o.Task != fmt.Sprintf("turn-%d", i+1) || o.TaskN != i+1 || o.Status != wantStatus[i] {
			t.Errorf("outcome %d: task %s/%d status %s (%s), want turn-%d %s", i, o.Task, o.TaskN, o.Status, o.Outcome.Reason, i+1, wantStatus[i])
		}
	}
	o1 := outs[0].Outcome
	if len(o1.Files) != 1 || o1.Files[0].Path != "engine/cache.go" || o1.Files[0].Op != "edit" {
		t.Errorf("task 1 files = %+v", o1.Files)
	}
	if len(o1.Commands) != 1 || o1.Commands[0].Exit == nil || *o1.Commands[0].Exit != 1 || o1.Commands[0].Test != "failed" {
		t.Errorf("task 1 commands = %+v", o1.Commands)
	}
	if o1.Calls != 3 || o1.Usage.Output != 300 || o1.CostUSD == 0 {
		t.Errorf("task 1 calls %d usage %+v cost %v", o1.Calls, o1.Usage, o1.CostUSD)
	}
	if outs[2].Outcome.Files[0].Path != "docs/cache.md" || outs[2].Outcome.Files[0].Op != "write" {
		t.Errorf("task 3 files = %+v", outs[2].Outcome.Files)
	}

	decs := byType(arts, ArtifactDecision)
	if len(decs) != 2 {
		t.Fatalf("decisions = %+v", decs)
	}
	if decs[0].Status != "superseded" || decs[0].Decision.SupersededBy != decs[1].ID || decs[1].Status != "active" ||
		len(decs[1].Decision.Supersedes) != 1 || decs[1].Decision.Supersedes[0] != decs[0].ID {
		t.Errorf("supersession: %+v / %+v", decs[0].Decision, decs[1].Decision)
	}
	if !strings.Contains(decs[1].Decision.Rationale, "scans evict") {
		t.Errorf("rationale = %q", decs[1].Decision.Rationale)
	}

	cons := byType(arts, ArtifactConstraint)
	if len(cons) != 1 || cons[0].Constraint.Scope != "session" || cons[0].Constraint.Source != "user" || !strings.Contains(cons[0].Title, "64 MiB") {
		t.Errorf("constraints = %+v", cons)
	}

	threads := map[string]Artifact{}
	for _, a := range byType(arts, ArtifactThread) {
		threads[a.Thread.Kind] = a
	}
	if td := threads["todo"]; td.Thread == nil || td.Thread.File != "engine/cache.go" || td.Status != "closed" {
		t.Errorf("TODO thread = %+v", td)
	}
	if ft := threads["failing_test"]; ft.Thread == nil || ft.Status != "closed" || ft.Thread.Test != "TestCacheEvict" {
		t.Errorf("failing test thread = %+v %+v", ft, ft.Thread)
	}
	if q := threads["question"]; q.Thread == nil || q.Status != "open" || !strings.Contains(q.Thread.Text, "README") {
		t.Errorf("question thread = %+v", q)
	}
	if len(byType(arts, ArtifactSegment)) < 3 {
		t.Errorf("segments = %d", len(byType(arts, ArtifactSegment)))
	}
	for _, a := range arts {
		if a.ID == "" || a.Title == "" || a.Text == "" || len(a.Evidence) == 0 || a.Builder != MemoryVersion {
			t.Errorf("incomplete artifact %+v", a)
		}
		for _, ev := range a.Evidence {
			if ev.Seq == 0 || ev.Prov.File == "" || ev.Prov.Line == 0 {
				t.Errorf("%s: evidence without provenance: %+v", a.ID, ev)
			}
		}
	}
}

func TestDeriveMemoryDeterministic(t *testing.T) {
	_, a := deriveLog(t, memorySession())
	_, b := deriveLog(t, memorySession())
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	// The two runs read files at different paths: compare without them.
	ja = bytes.ReplaceAll(ja, []byte(filepath.Dir(a[0].Evidence[0].Prov.File)), nil)
	jb = bytes.ReplaceAll(jb, []byte(filepath.Dir(b[0].Evidence[0].Prov.File)), nil)
	if !bytes.Equal(ja, jb) {
		t.Error("DeriveMemory is not deterministic")
	}
}

func TestDeriveMemoryRedacts(t *testing.T) {
	l := newClaudeLog("22222222-2222-4333-8444-555555555555")
	key := "sk-ant-api03-" + strings.Repeat("a", 40)
	l.User("Deploy with the key " + key + ". We must never log the key.")
	l.Reply(textBlock("We decided to read the key " + key + " from the environment."))
	_, arts := deriveLog(t, l)
	js, _ := json.Marshal(arts)
	if bytes.Contains(js, []byte(key)) {
		t.Fatal("a secret reached the artifacts")
	}
}

// memoryEngine opens an engine over a writable WAL in dir.
func memoryEngine(t testing.TB, dir string) (*Engine, *wal.Log) {
	t.Helper()
	log, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(dir, suite(t, &Options{WAL: log}))
	if err != nil {
		log.Close()
		t.Fatal(err)
	}
	return e, log
}

func TestMemoryEngine(t *testing.T) {
	dir := t.TempDir()
	e, log := memoryEngine(t, dir)
	l := memorySession()
	path := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(path, l.Data(), 0o644); err != nil {
		t.Fatal(err)
	}
	importPath(t, e, "claude", path)
	st, err := e.MemoryState(l.Session)
	if err != nil || len(st.Artifacts) == 0 || st.Digest == "" || st.Tasks != 3 {
		t.Fatalf("MemoryState = %+v, %v", st, err)
	}
	arts, err := e.Artifacts(l.Session)
	if err != nil {
		t.Fatal(err)
	}
	dec := byType(arts, ArtifactDecision)[1]
	got, err := e.Artifact(dec.ID[:8])
	if err != nil || got.ID != dec.ID {
		t.Fatalf("Artifact(prefix) = %s, %v", got.ID, err)
	}
	if got.Evidence[0].Prov.First == 0 {
		t.Errorf("evidence does not point into the WAL: %+v", got.Evidence[0])
	}

	// Forget it: a memory frame in the WAL.
	p, _ := exchange.AppendCorrection(nil, exchange.Correction{Op: "forget", Target: "artifact", ID: dec.ID})
	if _, err := log.Append(wal.Record{Kind: frame.KindMemory, Time: time.Now().UnixNano(), Payload: p}); err != nil {
		t.Fatal(err)
	}
	p, _ = exchange.AppendCorrection(nil, exchange.Correction{Op: "pin", Target: "session", ID: l.Session})
	if _, err := log.Append(wal.Record{Kind: frame.KindMemory, Time: time.Now().UnixNano(), Payload: p}); err != nil {
		t.Fatal(err)
	}
	catchUp(t, e)
	got, _ = e.Artifact(dec.ID)
	if !got.Forgotten {
		t.Error("the artifact is not forgotten after a forget frame")
	}
	st2, _ := e.MemoryState(l.Session)
	if st2.Digest == st.Digest {
		t.Error("a correction did not change the session's digest")
	}

	// Rebuild gives the same bytes, corrections included; so does
	// RebuildMemory.
	before := dump(t, e)
	if _, err := e.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e); after != before {
		t.Errorf("rebuild differs from incremental derivation:\n%s", firstDiff(before, after))
	}
	mp, err := e.RebuildMemory(context.Background())
	if err != nil || mp.Sessions != 1 || mp.Artifacts != len(arts) {
		t.Fatalf("RebuildMemory = %+v, %v (want %d artifacts)", mp, err, len(arts))
	}
	if after := dump(t, e); after != before {
		t.Errorf("RebuildMemory differs:\n%s", firstDiff(before, after))
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	log.Close()
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "- " + la[i] + "\n+ " + lb[i]
		}
	}
	return fmt.Sprintf("%d lines vs %d", len(la), len(lb))
}

// TestDeriveMemoryGolden derives the memory of every golden Claude Code
// and Codex session twice: the same bytes each time, unique ids, and
// evidence that points at the source file and line.
func TestDeriveMemoryGolden(t *testing.T) {
	red, _ := redact.New(nil)
	var ims []*Imported
	for _, cs := range goldenClaude(t) {
		im, err := DeriveImport("claude", "claude:"+cs.id, cs.files)
		if err != nil {
			t.Fatal(err)
		}
		im.Session.ID = "claude:" + cs.id
		ims = append(ims, im)
	}
	for _, path := range codexGolden(t) {
		file, _ := readRollout(t, path)
		im := deriveRollout(t, file)
		ims = append(ims, im)
	}
	total := map[ArtifactType]int{}
	for _, im := range ims {
		a, tasks := DeriveMemory(&im.Session, im.Events, red)
		b, _ := DeriveMemory(&im.Session, im.Events, red)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s: not deterministic", im.Session.ID)
		}
		ids := map[string]bool{}
		outcomes := 0
		for _, x := range a {
			total[x.Type]++
			if ids[x.ID] {
				t.Errorf("%s: duplicate id %s", im.Session.ID, x.ID)
			}
			ids[x.ID] = true
			if x.Type == ArtifactOutcome {
				outcomes++
			}
			for _, ev := range x.Evidence {
				if ev.Prov.File == "" || ev.Prov.Line == 0 {
					t.Errorf("%s %s: evidence without a source line: %+v", im.Session.ID, x.ID, ev)
				}
			}
			if x.Title == "" || x.Text == "" {
				t.Errorf("%s %s: empty title or text", im.Session.ID, x.ID)
			}
		}
		if outcomes != tasks {
			t.Errorf("%s: %d outcomes for %d tasks", im.Session.ID, outcomes, tasks)
		}
	}
	t.Logf("%d sessions: %v", len(ims), total)
}

// TestPinnedSessionRetention: a pinned session's WAL segments survive
// retention; an unpinned session's do not.
func TestPinnedSessionRetention(t *testing.T) {
	dir := t.TempDir()
	log, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{SegmentSize: 4 << 10, RetentionBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	e, err := Open(dir, suite(t, &Options{WAL: log}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	kept := memorySession()
	gone := newClaudeLog("99999999-2222-4333-8444-555555555555")
	for i := range 12 {
		gone.User(fmt.Sprintf("A throwaway prompt %d, long enough to fill the log: %s", i, strings.Repeat("filler ", 40)))
		gone.Reply(textBlock("Nothing to keep."))
	}
	imp := func(l *claudeLog) {
		path := filepath.Join(dir, l.Session+".jsonl")
		if err := os.WriteFile(path, l.Data(), 0o644); err != nil {
			t.Fatal(err)
		}
		importPath(t, e, "claude", path)
	}
	// Pin the first session before the log grows: the writer applies
	// retention at every rotation.
	imp(kept)
	p, _ := exchange.AppendCorrection(nil, exchange.Correction{Op: "pin", Target: "session", ID: "claude:" + kept.Session})
	if _, err := log.Append(wal.Record{Kind: frame.KindMemory, Payload: p}); err != nil {
		t.Fatal(err)
	}
	catchUp(t, e)
	imp(gone)
	for range 8 {
		if _, err := log.Append(wal.Record{Kind: frame.KindToolEvent, Payload: bytes.Repeat([]byte("x"), 3<<10)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := log.Retain(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		l    *claudeLog
		kept bool
	}{{kept, true}, {gone, false}} {
		s, err := e.Session("claude:" + tc.l.Session)
		if err != nil {
			t.Fatal(err)
		}
		first, last, ok, err := e.walRange(s)
		if err != nil || !ok {
			t.Fatalf("walRange: %v %v", ok, err)
		}
		at := first
		if !tc.kept {
			at = last // its first frame may share a segment with the pinned one
		}
		r := log.NewReader()
		seekErr := r.Seek(at)
		r.Close()
		if tc.kept && seekErr != nil {
			t.Errorf("pinned session %s: its first frame at %d is gone: %v", tc.l.Session, first, seekErr)
		}
		if !tc.kept && seekErr == nil {
			t.Errorf("unpinned session %s (WAL %d–%d) survived retention", tc.l.Session, first, last)
		}
	}
}

func TestStripPacks(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"before <bbengine-context-pack session=\"s\">\n- Use X. [dec-1]\n</bbengine-context-pack>\nafter", "before \nafter"},
		{"a<bbengine-context-pack>x</bbengine-context-pack>b<bbengine-context-pack session=\"2\">y</bbengine-context-pack>c", "abc"},
		{"cut <bbengine-context-pack session=\"s\"> never closed", "cut "},
		{"<bbengine-context-packing>kept</bbengine-context-packing>", "<bbengine-context-packing>kept</bbengine-context-packing>"},
		{"no pack here", "no pack here"},
	} {
		if got := StripPacks(c.in); got != c.want {
			t.Errorf("StripPacks(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestMemoryManyPasses derives a growing session one turn per pass, with
// a restart halfway: each pass writes only the artifacts that changed,
// and the result is byte-identical to a rebuild (one pass) and to
// RebuildMemory.
func TestMemoryManyPasses(t *testing.T) {
	dir, log := newData(t)
	var c clock
	xs := growingSession("grow", 90, 90)
	e := open(t, dir, log, nil)
	written, passes := 0, 0
	for i, x := range xs {
		writeWAL(t, log, &c, uint64(i), []fx{x})
		if i == len(xs)/2 {
			// A restart: the miners are gone and load from the store.
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = open(t, dir, log, nil)
		}
		p := catchUp(t, e)
		if i >= 10 {
			written += p.Artifacts
			passes++
		}
	}
	st, err := e.MemoryState("grow")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Artifacts) < 8 {
		t.Fatalf("%d artifacts, want a session with more", len(st.Artifacts))
	}
	// A turn changes the outcome and the open segment, and may finish a
	// segment.
	t.Logf("%d artifacts; %d written in %d passes", len(st.Artifacts), written, passes)
	if per := float64(written) / float64(passes); per > 3 {
		t.Errorf("%.1f artifacts written per pass of %d artifacts, want at most 3", per, len(st.Artifacts))
	}
	before := dump(t, e)
	sameAfterRebuild(t, e, before, "rebuild differs from the memory derived turn by turn")
	if _, err := e.RebuildMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e); after != before {
		t.Errorf("RebuildMemory differs:\n%s", firstDiff(before, after))
	}
}

// TestMemoryConcurrentSerial derives the memory of many sessions at once
// on one worker and on several: the stored state is the same bytes.
func TestMemoryConcurrentSerial(t *testing.T) {
	dir, log := newData(t)
	var c clock
	e := open(t, dir, log, nil)
	id := uint64(0)
	for i := 0; i < 5; i++ {
		id = interleaveWAL(t, log, &c, id, toolLoop(fmt.Sprintf("a%d", i), 3+i), toolLoop(fmt.Sprintf("b%d", i), 2))
	}
	catchUp(t, e)
	rebuild := func(procs int) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		p, err := e.RebuildMemory(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p.Sessions != 10 || p.Artifacts == 0 {
			t.Fatalf("rebuilt the memory of %d sessions, %d artifacts; want 10 sessions and artifacts", p.Sessions, p.Artifacts)
		}
		return dump(t, e)
	}
	serial := rebuild(1)
	for _, procs := range []int{2, 4, 16} {
		if got := rebuild(procs); got != serial {
			t.Fatalf("memory derived on %d workers differs from one worker's:\n%s", procs, diffLines(serial, got))
		}
	}
}

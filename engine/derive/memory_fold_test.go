package derive

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/redact"
)

// foldChecker folds a session's events in passes, as the canonicalizer
// does, and compares each pass's snapshot with DeriveMemory of the
// events read so far.
type foldChecker struct {
	t       testing.TB
	s       *Session
	red     *redact.Redactor
	m       *miner
	n       int
	reloads int
}

func (f *foldChecker) pass(events []Event, k int) {
	f.t.Helper()
	if f.m == nil || !f.m.add(events[f.n:k]) {
		f.m = newMiner(f.s, f.red)
		f.m.load(events[:k])
		f.reloads++
	}
	f.n = k
	want, wantN := DeriveMemory(f.s, events[:k], f.red)
	// The bytes the engine stores, cached or not, are want's.
	ids, encs, _ := f.m.snapshotEncoded(true)
	for i, v := range encs {
		if v == nil {
			continue
		}
		w, _ := json.Marshal(&want[i])
		if w = f.red.JSON(w); ids[i].ID != want[i].ID || !bytes.Equal(v.v, w) || v.sum != sha256.Sum256(w) {
			f.t.Fatalf("%s after %d events: cached artifact %s differs:\n%s", f.s.ID, k, ids[i].ID, firstDiff(string(w), string(v.v)))
		}
	}
	got, gotN := f.m.snapshot()
	jg, _ := json.Marshal(got)
	jw, _ := json.Marshal(want)
	if gotN != wantN || !bytes.Equal(jg, jw) {
		f.t.Fatalf("%s after %d of %d events: the fold differs from DeriveMemory (%d vs %d tasks):\n%s",
			f.s.ID, k, len(events), gotN, wantN, firstDiff(indent(jw), indent(jg)))
	}
}

func indent(b []byte) string {
	var out bytes.Buffer
	json.Indent(&out, b, "", " ")
	return out.String()
}

// foldSplits folds events in passes ending at cuts (and at the end).
func foldSplits(t testing.TB, s *Session, events []Event, cuts []int) int {
	t.Helper()
	red, _ := redact.New(nil)
	f := &foldChecker{t: t, s: s, red: red}
	for _, k := range cuts {
		if k > f.n && k <= len(events) {
			f.pass(events, k)
		}
	}
	f.pass(events, len(events))
	return f.reloads
}

// goldenImports returns the golden Claude Code and Codex sessions, or
// none when the golden logs are not there.
func goldenImports(t testing.TB) []*Imported {
	if _, err := os.Stat(claudeGolden); err != nil {
		t.Log("golden agent logs not found:", err)
		return nil
	}
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
		ims = append(ims, deriveRollout(t, file))
	}
	return ims
}

// TestMemoryFoldSplits derives every golden session's memory in many
// small passes (one event each, and random splits) and checks each pass
// against a derivation from scratch.
func TestMemoryFoldSplits(t *testing.T) {
	im, _ := deriveLog(t, memorySession())
	ims := append([]*Imported{im}, goldenImports(t)...)
	rng := rand.New(rand.NewPCG(1, 18))
	for _, im := range ims {
		evs := im.Events
		var one []int
		for k := 1; k <= len(evs) && k <= 400; k++ {
			one = append(one, k)
		}
		reloads := foldSplits(t, &im.Session, evs, one)
		if im == ims[0] && reloads != 1 {
			t.Errorf("%s: loaded %d times in %d one-event passes, want once", im.Session.ID, reloads, len(evs))
		}
		for range 3 {
			var cuts []int
			for k := 0; k < len(evs); {
				k += 1 + rng.IntN(20)
				cuts = append(cuts, k)
			}
			foldSplits(t, &im.Session, evs, cuts)
		}
	}
}

// fuzzEvents makes a session's events from bytes: threads, tasks, tool
// calls and results (ids reused), prompts, decisions, TODOs, tests.
func fuzzEvents(data []byte) (*Session, []Event) {
	texts := []string{
		"We decided to use an LRU cache because lookups repeat.",
		"We decided to use an ARC cache instead of an LRU cache.",
		"TODO: evict by size, not count.",
		"Fixed: eviction by size is done now.",
		"The cache must not exceed 64 MiB.",
		"The cache must exceed 64 MiB from now on.",
		"Should I also add a section to the README?",
		"Refactor the store, please.",
	}
	args := []string{
		`{"command":"go test ./engine"}`,
		`{"command":"go test ./..."}`,
		`{"file_path":"a.go","old_string":"x","new_string":"// TODO: fix y\nz"}`,
		`{"file_path":"a.go","old_string":"// TODO: fix y","new_string":""}`,
		`{"file_path":"b.md","content":"# TODO: notes\n"}`,
	}
	outs := []string{"ok  \tgithub.com/x/engine\t0.02s", "--- FAIL: TestCache (0.00s)\nFAIL\tgithub.com/x/engine\t0.01s", "done", "Exit code 1\nerror: boom"}
	s := &Session{ID: "fuzz", Agent: "claude-code"}
	if len(data) > 0 && data[0]&1 == 1 {
		s.Agent = ""
		s.Agents = []Agent{{Thread: 3}}
	}
	var evs []Event
	for i := 0; i+2 < len(data); i += 3 {
		op, a, b := data[i], int(data[i+1]), int(data[i+2])
		ev := Event{Seq: uint64(len(evs) + 1), Time: int64(len(evs)+1) * 1e9, Thread: 1 + a%3}
		if b&0x80 != 0 {
			ev.Task = fmt.Sprintf("task-%d", b%3)
		}
		if b&0x40 != 0 {
			ev.Run = fmt.Sprintf("run-%d", a%2)
		}
		id := fmt.Sprintf("toolu_%d", a%6)
		switch op % 9 {
		case 0:
			ev.Kind, ev.Role, ev.Text = KindMessage, "user", texts[b%len(texts)]
		case 1:
			ev.Kind, ev.Role, ev.Text = KindMessage, "assistant", texts[b%len(texts)]
		case 2:
			ev.Kind, ev.Call = KindModelCall, &Call{Model: "claude-sonnet-4-5"}
		case 3:
			ev.Kind, ev.Tool = KindToolCall, &Tool{ID: id, Name: []string{"Bash", "Edit", "Write"}[b%3], Args: json.RawMessage(args[b%len(args)])}
		case 4:
			ev.Kind, ev.Tool, ev.Text = KindToolResult, &Tool{ID: id, IsError: b%4 == 1}, outs[b%len(outs)]
		case 5:
			ev.Kind, ev.Usage = KindUsage, &Usage{Input: int64(a), Output: int64(b)}
		case 6:
			ev.Kind, ev.Error = KindError, &Error{Message: texts[b%len(texts)]}
		case 7:
			ev.Kind, ev.Text = KindSystem, texts[b%len(texts)]
		case 8:
			ev.Kind, ev.Role, ev.Meta, ev.Text = KindMessage, "user", "compact", texts[b%len(texts)]
		}
		evs = append(evs, ev)
	}
	return s, evs
}

// FuzzMemoryFold checks that folding events in arbitrary passes gives
// what deriving them at once gives.
func FuzzMemoryFold(f *testing.F) {
	f.Add([]byte{0, 0, 7, 2, 0, 0, 1, 0, 1, 3, 0, 0, 5, 0, 0, 4, 0, 0, 1, 0, 3}, []byte{2, 1, 3})
	f.Add([]byte{1, 0, 7, 2, 2, 0, 3, 2, 0, 4, 2, 1, 0, 0, 6, 2, 0, 0, 3, 0, 2, 4, 0, 1, 1, 0, 0}, []byte{1, 1, 1, 1})
	f.Add([]byte{0, 0, 0x87, 2, 0, 0x81, 1, 1, 0x80, 0, 0, 0x81, 1, 0, 0xc0, 3, 1, 0x82, 4, 1, 0x82}, []byte{1, 2, 1, 1})
	f.Add([]byte{0, 2, 7, 2, 1, 0, 3, 1, 2, 1, 1, 1, 4, 1, 2, 2, 1, 0}, []byte{0x82, 0x81, 1})
	// A call whose result comes only after more than maxStall events.
	long := []byte{0, 0, 7, 3, 0, 0}
	for i := range 30 {
		long = append(long, 1, 0, byte(i))
	}
	long = append(long, 4, 0, 1, 1, 0, 3)
	f.Add(long, bytes.Repeat([]byte{1}, 40))
	f.Fuzz(func(t *testing.T, data, splits []byte) {
		s, evs := fuzzEvents(data)
		red, _ := redact.New(nil)
		c := &foldChecker{t: t, s: s, red: red}
		k := 0
		for _, b := range splits {
			if b&0x80 != 0 {
				// The session learns of a subagent (or forgets it) between
				// passes.
				if len(s.Agents) > 0 && s.Agents[0].Thread == 2 {
					s.Agents = nil
				} else {
					s.Agents = []Agent{{Thread: 2}}
				}
			}
			if k += int(b % 8); k > c.n && k <= len(evs) {
				c.pass(evs, k)
			}
		}
		c.pass(evs, len(evs))
	})
}

// TestOutcomeTextCap: outcomeText stops where finishArtifact cuts, and
// the cut text is what the whole text cut gives.
func TestOutcomeTextCap(t *testing.T) {
	whole := func(a *Artifact) string {
		o := a.Outcome
		var b strings.Builder
		fmt.Fprintf(&b, "Task %s: %s. %s.\n", a.Task, o.Status, o.Reason)
		for _, c := range o.Commands {
			fmt.Fprintf(&b, "$ %s  [exit %d]\n", capText(c.Command, 200), *c.Exit)
		}
		for _, e := range o.Errors {
			fmt.Fprintf(&b, "error: %s\n", e)
		}
		return b.String()
	}
	for _, n := range []int{0, 10, 300, 2000} {
		o := &Outcome{Status: "success", Reason: "the agent finished"}
		for i := range n {
			exit := i % 3
			o.Commands = append(o.Commands, Command{Command: fmt.Sprintf("go test ./pkg%d/... — ünïcode %s", i, strings.Repeat("x", i%250)), Exit: &exit})
			o.Errors = append(o.Errors, fmt.Sprintf("error %d", i))
		}
		a := &Artifact{Task: "turn-1", Outcome: o}
		got, want := capText(outcomeText(a), textCap), capText(whole(a), textCap)
		if got != want {
			t.Errorf("%d commands: the cut text differs:\n%s", n, firstDiff(want, got))
		}
	}
}

package exchange

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCorrection(t *testing.T) {
	c := Correction{Op: "forget", Target: "artifact", ID: "dec-3f9a2c1b7e4d", Reason: "wrong"}
	b, err := AppendCorrection(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCorrection(b)
	if err != nil || got != c {
		t.Fatalf("DecodeCorrection = %+v, %v; want %+v", got, err, c)
	}
	for _, bad := range []string{`{"op":"erase","target":"artifact","id":"x"}`, `{"op":"pin","target":"task","id":"x"}`,
		`{"op":"pin","target":"session","id":""}`, `[1]`, `{`, `{"op":"goal","session":"s","text":"x","source":"run"}`} {
		if _, err := DecodeCorrection([]byte(bad)); !errors.Is(err, ErrPayload) {
			t.Errorf("DecodeCorrection(%s) = %v, want ErrPayload", bad, err)
		}
	}
}

func intp(v int) *int { return &v }

func TestNote(t *testing.T) {
	for _, n := range []Note{
		{Op: "goal", Session: "s1", Text: "Ship the session cache", Source: "run"},
		{Op: "goal", Session: "claude:0b9e", Text: "Écrire la doc « cache » <b>", Source: "harness"},
		{Op: "checkpoint", Session: "s1", Text: "Cache done.\nDocs next.", Source: "harness"},
		{Op: "outcome", Session: "s1", TaskID: "t2", Status: "fail", Text: "tests fail", Files: []string{"a.go", "b/c.go"}, Exit: intp(1), Source: "run"},
		{Op: "outcome", Session: "s1", TaskID: "t3", Status: "success", Exit: intp(0), Source: "run"},
		{Op: "outcome", Session: "s1", TaskID: "t4", Status: "blocked", Text: "needs a key", Source: "harness"},
	} {
		b, err := AppendNote(nil, n)
		if err != nil {
			t.Fatalf("AppendNote(%+v): %v", n, err)
		}
		got, err := DecodeNote(b)
		if err != nil || !reflect.DeepEqual(got, n) {
			t.Errorf("DecodeNote(%s) = %+v, %v; want %+v", b, got, err, n)
		}
		m, err := DecodeMemory(b)
		if err != nil || m.Correction != nil || m.Note == nil || !reflect.DeepEqual(*m.Note, n) {
			t.Errorf("DecodeMemory(%s) = %+v, %v", b, m, err)
		}
	}
	// A correction written before notes existed decodes as it did.
	m, err := DecodeMemory([]byte(`{"op":"pin","target":"session","id":"claude:abc","reason":"keep"}`))
	if err != nil || m.Note != nil || m.Correction == nil || *m.Correction != (Correction{Op: "pin", Target: "session", ID: "claude:abc", Reason: "keep"}) {
		t.Errorf("DecodeMemory(correction) = %+v, %v", m, err)
	}
	// An empty files list is none.
	if n, err := DecodeNote([]byte(`{"op":"outcome","session":"s","task_id":"t","status":"success","files":[],"source":"run"}`)); err != nil || n.Files != nil {
		t.Errorf("empty files: %+v, %v", n, err)
	}
}

func TestNoteInvalid(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		payload, want string
	}{
		{`{"op":"remember","session":"s"}`, `memory frame op "remember"`},
		{`{"session":"s"}`, `memory frame op ""`},
		{`[1]`, "memory frame: json"},
		{`{"op":"goal"`, "memory frame: unexpected end"},
		{`{"op":"goal","session":"","text":"x","source":"run"}`, "goal note: session: empty"},
		{`{"op":"goal","session":"a\u0001b","text":"x","source":"run"}`, "goal note: session: \"a\\x01b\" holds control characters"},
		{`{"op":"goal","session":"` + long(256) + `","text":"x","source":"run"}`, "session: 256 bytes (at most 255)"},
		{`{"op":"goal","session":"s","text":"x","source":"header"}`, `goal note: source "header" (want run or harness)`},
		{`{"op":"goal","session":"s","text":"x"}`, `goal note: source "" (want run or harness)`},
		{`{"op":"goal","session":"s","text":"  ","source":"run"}`, "goal note: text is empty (it is the goal)"},
		{`{"op":"goal","session":"s","text":"` + long(MaxGoal+1) + `","source":"run"}`, "goal note: text of 2049 bytes (at most 2048)"},
		{`{"op":"checkpoint","session":"s","source":"run"}`, "checkpoint note: text is empty (it is the session summary)"},
		{`{"op":"checkpoint","session":"s","text":"` + long(MaxNoteText+1) + `","source":"run"}`, "text of 16385 bytes"},
		{`{"op":"checkpoint","session":"s","text":"x","status":"fail","source":"run"}`, "checkpoint note: status belongs to an outcome"},
		{`{"op":"goal","session":"s","text":"x","task_id":"t","source":"run"}`, "goal note: task_id belongs to an outcome"},
		{`{"op":"goal","session":"s","text":"x","files":["a"],"source":"run"}`, "goal note: files belong to an outcome"},
		{`{"op":"checkpoint","session":"s","text":"x","changes":[{"path":"a","added":1,"deleted":0}],"source":"run"}`, "checkpoint note: changes belong to an outcome"},
		{`{"op":"outcome","session":"s","task_id":"t","status":"success","changes":[{"path":"a","added":-1,"deleted":0}],"source":"run"}`, "negative line counts"},
		{`{"op":"outcome","session":"s","task_id":"t","status":"success","changes":[{"path":"a","added":1,"deleted":0,"sha256":"abc"}],"source":"run"}`, "is not 64 hex digits"},
		{`{"op":"outcome","session":"s","task_id":"t","status":"success","changes":[{"path":"","added":1,"deleted":0}],"source":"run"}`, "changes[0] path"},
		{`{"op":"goal","session":"s","text":"x","exit_code":0,"source":"run"}`, "goal note: exit_code belongs to an outcome"},
		{`{"op":"outcome","session":"s","status":"success","source":"run"}`, "outcome note: task_id: empty"},
		{`{"op":"outcome","session":"s","task_id":"t","status":"done","source":"run"}`, `outcome note: status "done" (want success, fail or blocked)`},
		{`{"op":"outcome","session":"s","task_id":"t","status":"fail","files":[""],"source":"run"}`, `outcome note: files[0] ""`},
		{`{"op":"outcome","session":"s","task_id":"t","status":"fail","files":["` + long(MaxNoteFile+1) + `"],"source":"run"}`, "outcome note: files[0]"},
		{`{"op":"outcome","session":"s","task_id":"t","status":"fail","files":[` + strings.Repeat(`"a",`, MaxNoteFiles) + `"a"],"source":"run"}`, "outcome note: 65 files (at most 64)"},
		{`{"op":"outcome","session":"s","task_id":"t","status":"fail","exit_code":"one","source":"run"}`, "note: json: cannot unmarshal string"},
		{`{"op":"outcome","pad":"` + long(MaxNote) + `"}`, "memory frame of 524"},
		{`{"op":"pin","target":"session","id":"` + long(MaxCorrection) + `"}`, "correction of 4"},
	} {
		_, err := DecodeMemory([]byte(tc.payload))
		if !errors.Is(err, ErrPayload) || !strings.Contains(err.Error(), tc.want) {
			short := tc.payload
			if len(short) > 80 {
				short = short[:80] + "…"
			}
			t.Errorf("DecodeMemory(%s) = %v, want ErrPayload with %q", short, err, tc.want)
		}
	}
	if _, err := AppendNote(nil, Note{Op: "goal", Session: "s", Text: "\xff", Source: "run"}); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("AppendNote(invalid UTF-8) = %v", err)
	}
}

// TestNoteSize: the largest note that validates, written with the
// characters JSON escapes most, still encodes within MaxNote.
func TestNoteSize(t *testing.T) {
	worst := strings.Repeat("<", MaxNoteText)
	files := make([]string, MaxNoteFiles)
	for i := range files {
		files[i] = strings.Repeat("<", MaxNoteFile)
	}
	changes := make([]FileStat, MaxNoteFiles)
	for i := range changes {
		changes[i] = FileStat{Path: strings.Repeat("<", MaxNoteFile), Added: 1 << 62, Deleted: 1 << 62, SHA256: strings.Repeat("f", 64)}
	}
	id := strings.Repeat("<", MaxNoteID)
	b, err := AppendNote(nil, Note{Op: "outcome", Session: id, TaskID: id, Status: "blocked", Text: worst, Files: files, Changes: changes, Exit: intp(-2147483648), Source: "harness"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxNote {
		t.Fatalf("the largest note encodes in %d bytes, over MaxNote %d", len(b), MaxNote)
	}
	if _, err := DecodeMemory(b); err != nil {
		t.Fatal(err)
	}
}

func FuzzCorrection(f *testing.F) {
	f.Add([]byte(`{"op":"forget","target":"artifact","id":"dec-3f9a2c1b7e4d"}`))
	f.Add([]byte(`{"op":"pin","target":"session","id":"claude:abc","reason":"keep"}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := DecodeCorrection(p)
		if err != nil {
			return
		}
		b, err := AppendCorrection(nil, c)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", c, err)
		}
		c2, err := DecodeCorrection(b)
		if err != nil || c2 != c {
			t.Fatalf("round trip %+v → %+v, %v", c, c2, err)
		}
	})
}

// FuzzMemory: DecodeMemory never panics on any payload, and whatever it
// decodes encodes again to a payload that decodes to the same value.
// Seeds are in testdata/fuzz/FuzzMemory.
func FuzzMemory(f *testing.F) {
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := DecodeMemory(p)
		if err != nil {
			return
		}
		var b []byte
		switch {
		case m.Correction != nil && m.Note == nil:
			b, err = AppendCorrection(nil, *m.Correction)
		case m.Note != nil && m.Correction == nil:
			b, err = AppendNote(nil, *m.Note)
		default:
			t.Fatalf("DecodeMemory(%q) = %+v: want exactly one of correction and note", p, m)
		}
		if err != nil {
			t.Fatalf("re-encode %+v: %v", m, err)
		}
		m2, err := DecodeMemory(b)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip %q → %q: %+v, %v", p, b, m2, err)
		}
	})
}

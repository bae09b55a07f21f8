package exchange

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// A memory frame (frame.KindMemory) carries one JSON object whose "op"
// says what it is: a user's correction of derived memory (Correction:
// forget, unforget, pin, unpin) or a harness record about a session
// (Note: goal, checkpoint, outcome). DecodeMemory dispatches on the op;
// payloads written before notes existed decode exactly as they did.

// Correction is the payload of a memory frame (frame.KindMemory): a
// user's correction of derived memory. It is JSON:
//
//	{"op":"forget","target":"artifact","id":"dec-3f9a2c1b7e4d","reason":"wrong"}
//
// Op is forget, unforget, pin or unpin; Target is artifact or session;
// ID names it; Reason is optional. A forgotten artifact is hidden from
// retrieval (the evidence stays in the WAL); a pinned artifact ranks
// higher, and a pinned session is exempt from retention.
type Correction struct {
	Op     string `json:"op"`
	Target string `json:"target"`
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// MaxCorrection bounds a correction payload.
const MaxCorrection = 4 << 10

// AppendCorrection appends c's encoding to dst.
func AppendCorrection(dst []byte, c Correction) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// Validate checks the op, the target and the id.
func (c Correction) Validate() error {
	switch c.Op {
	case "forget", "unforget", "pin", "unpin":
	default:
		return fmt.Errorf("%w: correction op %q (want forget, unforget, pin or unpin)", ErrPayload, c.Op)
	}
	switch c.Target {
	case "artifact", "session":
	default:
		return fmt.Errorf("%w: correction target %q (want artifact or session)", ErrPayload, c.Target)
	}
	if c.ID == "" || len(c.ID) > 1024 {
		return fmt.Errorf("%w: correction id of %d bytes", ErrPayload, len(c.ID))
	}
	if len(c.Reason) > 2048 {
		return fmt.Errorf("%w: correction reason of %d bytes (at most 2048)", ErrPayload, len(c.Reason))
	}
	return nil
}

// DecodeCorrection decodes a memory frame's payload.
func DecodeCorrection(p []byte) (Correction, error) {
	var c Correction
	if len(p) > MaxCorrection {
		return c, fmt.Errorf("%w: correction of %d bytes (at most %d)", ErrPayload, len(p), MaxCorrection)
	}
	if err := json.Unmarshal(p, &c); err != nil {
		return c, fmt.Errorf("%w: correction: %v", ErrPayload, err)
	}
	return c, c.Validate()
}

// Note is a harness record about a session, the payload of a memory
// frame beside corrections. It is JSON, one of:
//
//	{"op":"goal","session":"s1","text":"Ship the cache","source":"run"}
//	{"op":"checkpoint","session":"s1","text":"Cache done; docs next","source":"harness"}
//	{"op":"outcome","session":"s1","task_id":"t2","status":"fail","text":"tests fail","files":["a.go"],"exit_code":1,"source":"run"}
//
// Op is goal (the session's north star), checkpoint (a summary of the
// session so far: the latest wins) or outcome (how one task ended, as
// the harness that ran it saw it). Session is the exact session id,
// which need not have been recorded yet. Text is the goal, the summary
// or the outcome's summary (optional for an outcome only). Source is
// who recorded it: run (bbengine run) or harness (the harness API).
// TaskID, Status (success, fail or blocked), Files and Exit belong to an
// outcome only.
type Note struct {
	Op      string   `json:"op"`
	Session string   `json:"session"`
	TaskID  string   `json:"task_id,omitempty"`
	Status  string   `json:"status,omitempty"`
	Text    string   `json:"text,omitempty"`
	Files   []string `json:"files,omitempty"`
	// Changes are the files the task changed as the repository's diff
	// before and after it says (bbengine run), at most MaxNoteFiles.
	Changes []FileStat `json:"changes,omitempty"`
	Exit    *int       `json:"exit_code,omitempty"`
	Source  string     `json:"source"`
}

// FileStat is one file a task changed, by the repository's diff: the
// lines added and deleted against the commit the task started from, and
// the SHA-256 (hex) of its content after the task, "" when it was
// deleted. Never the diff itself.
type FileStat struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	SHA256  string `json:"sha256,omitempty"`
}

// Limits of a note's fields, in bytes. Every note that validates
// encodes within MaxNote, JSON escapes included.
const (
	MaxNoteID    = 255      // session and task ids
	MaxGoal      = 2 << 10  // a goal
	MaxNoteText  = 16 << 10 // a checkpoint or an outcome summary
	MaxNoteFile  = 256      // one file path
	MaxNoteFiles = 64       // files of an outcome
	MaxNote      = 512 << 10
)

// AppendNote appends n's encoding to dst.
func AppendNote(dst []byte, n Note) ([]byte, error) {
	if err := n.Validate(); err != nil {
		return dst, err
	}
	b, err := json.Marshal(n)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// Validate checks the op and that each field the op takes is present,
// well formed and within its limit, and that the op's foreign fields
// are absent.
func (n Note) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s note: %s", ErrPayload, n.Op, fmt.Sprintf(format, args...))
	}
	switch n.Op {
	case "goal", "checkpoint", "outcome":
	default:
		return fmt.Errorf("%w: note op %q (want goal, checkpoint or outcome)", ErrPayload, n.Op)
	}
	if err := checkID(n.Session); err != nil {
		return bad("session: %v", err)
	}
	switch n.Source {
	case "run", "harness":
	default:
		return bad("source %q (want run or harness)", n.Source)
	}
	limit := MaxNoteText
	if n.Op == "goal" {
		limit = MaxGoal
	}
	switch {
	case len(n.Text) > limit:
		return bad("text of %d bytes (at most %d)", len(n.Text), limit)
	case !utf8.ValidString(n.Text):
		return bad("text is not valid UTF-8")
	case n.Op != "outcome" && strings.TrimSpace(n.Text) == "":
		return bad("text is empty (it is the %s)", map[string]string{"goal": "goal", "checkpoint": "session summary"}[n.Op])
	}
	if n.Op != "outcome" {
		switch {
		case n.TaskID != "":
			return bad("task_id belongs to an outcome")
		case n.Status != "":
			return bad("status belongs to an outcome")
		case len(n.Files) > 0:
			return bad("files belong to an outcome")
		case len(n.Changes) > 0:
			return bad("changes belong to an outcome")
		case n.Exit != nil:
			return bad("exit_code belongs to an outcome")
		}
		return nil
	}
	if err := checkID(n.TaskID); err != nil {
		return bad("task_id: %v", err)
	}
	switch n.Status {
	case "success", "fail", "blocked":
	default:
		return bad("status %q (want success, fail or blocked)", n.Status)
	}
	if len(n.Files) > MaxNoteFiles {
		return bad("%d files (at most %d)", len(n.Files), MaxNoteFiles)
	}
	for i, f := range n.Files {
		if f == "" || len(f) > MaxNoteFile || !utf8.ValidString(f) || hasControl(f) {
			return bad("files[%d] %q: want a path of 1 to %d bytes of UTF-8 without control characters", i, f, MaxNoteFile)
		}
	}
	if len(n.Changes) > MaxNoteFiles {
		return bad("%d changes (at most %d)", len(n.Changes), MaxNoteFiles)
	}
	for i, c := range n.Changes {
		switch {
		case c.Path == "" || len(c.Path) > MaxNoteFile || !utf8.ValidString(c.Path) || hasControl(c.Path):
			return bad("changes[%d] path %q: want 1 to %d bytes of UTF-8 without control characters", i, c.Path, MaxNoteFile)
		case c.Added < 0 || c.Deleted < 0:
			return bad("changes[%d] %s: negative line counts %d, %d", i, c.Path, c.Added, c.Deleted)
		case c.SHA256 != "" && !isHex64(c.SHA256):
			return bad("changes[%d] %s: sha256 %q is not 64 hex digits", i, c.Path, c.SHA256)
		}
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidID reports whether id is usable as a session, task or run id: 1
// to MaxNoteID bytes of UTF-8 without control characters. The proxy
// accepts only such ids from X-Bb-* headers and agents' session headers,
// and notes only such ids.
func ValidID(id string) bool { return checkID(id) == nil }

// checkID says what makes id invalid (see ValidID).
func checkID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("empty")
	case len(id) > MaxNoteID:
		return fmt.Errorf("%d bytes (at most %d)", len(id), MaxNoteID)
	case !utf8.ValidString(id) || hasControl(id):
		return fmt.Errorf("%q holds control characters or is not UTF-8", id)
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// DecodeNote decodes a note payload. An empty files list decodes as
// none.
func DecodeNote(p []byte) (Note, error) {
	var n Note
	if len(p) > MaxNote {
		return n, fmt.Errorf("%w: note of %d bytes (at most %d)", ErrPayload, len(p), MaxNote)
	}
	if err := json.Unmarshal(p, &n); err != nil {
		return n, fmt.Errorf("%w: note: %v", ErrPayload, err)
	}
	if len(n.Files) == 0 {
		n.Files = nil
	}
	return n, n.Validate()
}

// Memory is a decoded memory frame: exactly one of Correction and Note
// is set.
type Memory struct {
	Correction *Correction
	Note       *Note
}

// DecodeMemory decodes a memory frame's payload by its op.
func DecodeMemory(p []byte) (Memory, error) {
	var head struct {
		Op string `json:"op"`
	}
	if len(p) > MaxNote {
		return Memory{}, fmt.Errorf("%w: memory frame of %d bytes (at most %d)", ErrPayload, len(p), MaxNote)
	}
	if err := json.Unmarshal(p, &head); err != nil {
		return Memory{}, fmt.Errorf("%w: memory frame: %v", ErrPayload, err)
	}
	switch head.Op {
	case "forget", "unforget", "pin", "unpin":
		c, err := DecodeCorrection(p)
		if err != nil {
			return Memory{}, err
		}
		return Memory{Correction: &c}, nil
	case "goal", "checkpoint", "outcome":
		n, err := DecodeNote(p)
		if err != nil {
			return Memory{}, err
		}
		return Memory{Note: &n}, nil
	}
	return Memory{}, fmt.Errorf("%w: memory frame op %q (want forget, unforget, pin, unpin, goal, checkpoint or outcome)", ErrPayload, head.Op)
}

package schema

import (
	"strings"

	"github.com/bbengine/bbengine/codec/exchange"
)

// Report is what bbengine run or a harness reported about how a task
// ended (an outcome note). It is folded into the task's outcome
// artifact, whose status it decides.
type Report struct {
	Session string `json:"session"`
	Task    string `json:"task"`
	// Status is success, fail or blocked; Summary the reporter's words.
	Status  string   `json:"status"`
	Summary string   `json:"summary,omitempty"`
	Files   []string `json:"files,omitempty"`
	// Changes are the files the repository's diff says the task changed
	// (bbengine run).
	Changes []exchange.FileStat `json:"changes,omitempty"`
	// Exit is the agent's exit code, when the reporter ran it.
	Exit *int `json:"exit_code,omitempty"`
	// Source is run or harness.
	Source string `json:"source"`
	// Time and Offset are those of the note's frame.
	Time   int64  `json:"time_ns"`
	Offset uint64 `json:"offset"`
}

// Resolution says why an artifact is no longer in force: a later session
// of its project replaced or closed it.
type Resolution struct {
	// Status is what the artifact now is: superseded or closed.
	Status string `json:"status"`
	// By is the artifact that replaced or closed it, and Session its
	// session.
	By      string `json:"by"`
	Session string `json:"session"`
	// Reason says which rule applied, in words.
	Reason string `json:"reason"`
}

// SetResolved takes a out of force as r says: its status, the
// resolution, and the first line of its text, which says the status it
// had when it was derived.
func (a *Artifact) SetResolved(r *Resolution) {
	line, _, _ := strings.Cut(a.Text, "\n")
	if i := strings.Index(line, "("+a.Status); i >= 0 && a.Status != "" {
		a.Text = a.Text[:i] + "(" + r.Status + a.Text[i+1+len(a.Status):]
	}
	a.Status, a.Resolved = r.Status, r
}

// Brief is what was said about a session as a whole rather than derived
// from its events: its goal and the latest checkpoint summary a harness
// recorded. Each comes from a WAL frame, so a rebuild gives it again.
type Brief struct {
	Session string `json:"session"`
	// Goal is the session's north star; GoalSource says where it came
	// from: "run" (bbengine run --goal), "harness" (the harness API) or
	// "header" (an X-Bb-Session-Goal request header). GoalOffset is the
	// WAL offset of the frame that set it.
	//
	// A goal from run or the harness API beats one from a header; among
	// goals of equal rank the latest frame wins. Header goals are taken
	// in the order their exchanges end in the WAL; a request repeating
	// the goal in force changes nothing, so GoalOffset stays at the
	// first request that stated it.
	Goal       string `json:"goal,omitempty"`
	GoalSource string `json:"goal_source,omitempty"`
	GoalOffset uint64 `json:"goal_offset,omitempty"`
	// Checkpoint is the latest session summary, with the time and WAL
	// offset of its frame.
	Checkpoint       string `json:"checkpoint,omitempty"`
	CheckpointTime   int64  `json:"checkpoint_ns,omitempty"`
	CheckpointOffset uint64 `json:"checkpoint_offset,omitempty"`
}

// CorrectionState is what the user's corrections (memory frames in the
// WAL) say about one artifact or session.
type CorrectionState struct {
	Target    string `json:"target"`
	ID        string `json:"id"`
	Forgotten bool   `json:"forgotten,omitempty"`
	Pinned    bool   `json:"pinned,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Time and Offset are those of the latest correction's frame.
	Time   int64  `json:"time_ns"`
	Offset uint64 `json:"offset"`
}

// BreakerRecord is a breaker frame as the engine keeps it: the record and
// the WAL offset of its frame.
type BreakerRecord struct {
	exchange.Breaker
	Offset uint64 `json:"offset"`
}

// EventFilter selects events of a session. Zero fields select everything.
type EventFilter struct {
	Task   string `json:"task,omitempty"`
	Thread int    `json:"thread,omitempty"`
	// After keeps events with a larger sequence number.
	After uint64 `json:"after,omitempty"`
	// Raw reads the named session's own timeline, not the merged view of
	// the merged session it is a member of (import --check, show --raw).
	Raw bool `json:"raw,omitempty"`
}

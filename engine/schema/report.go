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

package schema

import "unicode/utf8"

// MemoryVersion names the memory extractors' rules. Artifacts carry it
// (Artifact.Builder); Open derives every session's artifacts again when
// the stored version differs, so a change to what the extractors produce
// must change it.
const MemoryVersion = "memory/9"

// ArtifactType is what a memory artifact is.
type ArtifactType string

// The artifact types, in the order retrieval ranks them when their text
// scores alike.
const (
	// ArtifactDecision is a decision stated in the session (Decision).
	ArtifactDecision ArtifactType = "decision"
	// ArtifactConstraint is a requirement: must, must not, never,
	// always, do not (Constraint).
	ArtifactConstraint ArtifactType = "constraint"
	// ArtifactOutcome is what one task did and how it ended (Outcome).
	ArtifactOutcome ArtifactType = "outcome"
	// ArtifactThread is an open thread: a TODO, a blocker, a question
	// left unanswered, a failing test (Thread).
	ArtifactThread ArtifactType = "open_thread"
	// ArtifactSegment is a small chunk of the conversation, for citation
	// and fallback search.
	ArtifactSegment ArtifactType = "transcript"
)

// ArtifactTypes lists every artifact type.
var ArtifactTypes = []ArtifactType{ArtifactDecision, ArtifactConstraint, ArtifactOutcome, ArtifactThread, ArtifactSegment}

// Valid reports whether t is a known artifact type.
func (t ArtifactType) Valid() bool {
	for _, k := range ArtifactTypes {
		if t == k {
			return true
		}
	}
	return false
}

// Artifact is one item of memory, derived from a session's canonical
// events by deterministic extractors. Its ID is a content hash, so the
// same evidence gives the same id on every machine and every rebuild.
type Artifact struct {
	ID      string       `json:"id"`
	Type    ArtifactType `json:"type"`
	Session string       `json:"session"`
	// Task is the task the artifact belongs to: the X-Bb-Task-Id the
	// session's requests carried, or, for a session without task ids,
	// "turn-N" for the N-th prompt a person typed. TaskN is its 1-based
	// position among the session's tasks (recency ranks by it).
	Task  string `json:"task,omitempty"`
	TaskN int    `json:"task_n,omitempty"`
	Run   string `json:"run,omitempty"`
	// Title is one line; Text the human-readable form.
	Title string `json:"title"`
	Text  string `json:"text"`
	// Status is, by type: outcome success|fail|blocked; decision and
	// constraint active|superseded; open thread open|closed; empty for a
	// transcript segment.
	Status string `json:"status,omitempty"`
	// First and Last are the times (unix ns) of the first and the latest
	// evidence: a decision stated again keeps First and moves Last.
	First int64 `json:"first_ns"`
	Last  int64 `json:"last_ns"`
	// Files, Symbols, Commands and Errors are what the artifact mentions,
	// for search and for relating artifacts.
	Files    []string `json:"files,omitempty"`
	Symbols  []string `json:"symbols,omitempty"`
	Commands []string `json:"commands,omitempty"`
	Errors   []string `json:"errors,omitempty"`

	Outcome    *Outcome    `json:"outcome,omitempty"`
	Decision   *Decision   `json:"decision,omitempty"`
	Constraint *Constraint `json:"constraint,omitempty"`
	Thread     *Thread     `json:"thread,omitempty"`
	Segment    *Segment    `json:"segment,omitempty"`

	// Evidence points at the events the artifact came from, and through
	// them at the WAL.
	Evidence []Evidence `json:"evidence"`
	// Builder is the MemoryVersion that derived the artifact.
	Builder string `json:"builder"`

	// Forgotten and Pinned are the user's corrections (bbengine mem
	// forget, pin). They are not derived: they come from memory control
	// frames in the WAL and are merged in when the artifact is read.
	Forgotten bool `json:"forgotten,omitempty"`
	Pinned    bool `json:"pinned,omitempty"`
	// SessionForgotten says Forgotten comes from its whole session being
	// forgotten (bbengine mem forget SESSION): only unforgetting the
	// session brings the artifact back. Merged in when read, as
	// Forgotten.
	SessionForgotten bool `json:"session_forgotten,omitempty"`
	// Resolved says why a later session of the project took the
	// artifact out of force (Engine.Resolve); Status then says what it
	// is now. Not derived either: set when memory is read for a search,
	// a get or a pack.
	Resolved *Resolution `json:"resolved,omitempty"`
}

// Evidence is one event an artifact came from.
type Evidence struct {
	Seq  uint64 `json:"seq"`
	Kind Kind   `json:"kind"`
	// Time is the event's time (unix ns).
	Time int64 `json:"time_ns"`
	// Prov is the event's provenance: its exchange and request, its WAL
	// offsets, and for imported events the source file and line.
	Prov Provenance `json:"prov"`
}

// Outcome is how a task went.
type Outcome struct {
	// Status is success, fail or blocked; Reason says what decided it.
	Status string `json:"status"`
	Reason string `json:"reason"`
	// Prompt is the task's description: its first prompt (capped).
	Prompt string `json:"prompt,omitempty"`
	// Summary is a few bullets: the final assistant message's first
	// sentences and the actions taken.
	Summary  []string     `json:"summary"`
	Files    []FileChange `json:"files,omitempty"`
	Commands []Command    `json:"commands,omitempty"`
	// Errors are the first lines of the task's notable errors.
	Errors []string `json:"errors,omitempty"`
	// Calls is the number of model calls; Usage their tokens; CostUSD
	// their price by the built-in price table (0 when a model is not in
	// it; Unpriced names those models).
	Calls    int      `json:"calls"`
	Usage    Usage    `json:"usage"`
	CostUSD  float64  `json:"cost_usd,omitempty"`
	Unpriced []string `json:"unpriced,omitempty"`
	// Duration is from the task's first to its last event (ns).
	Duration int64 `json:"duration_ns"`
	// Report is what bbengine run or a harness reported about the task
	// (its latest outcome note); when set it decides Status, and its
	// summary leads Summary.
	Report *Report `json:"report,omitempty"`
}

// FileChange is a file a task changed.
type FileChange struct {
	Path string `json:"path"`
	// Op is edit, write, create, delete, move, shell (a shell command
	// that writes the file), reported (named by an outcome report) or
	// diff (changed by the repository's diff around a bbengine run task).
	Op string `json:"op"`
	// Tool is the tool that changed it (Edit, apply_patch, Bash, …).
	Tool string `json:"tool,omitempty"`
	// Added and Deleted are the lines the repository's diff counts and
	// SHA256 the content after the task, when bbengine run reported the
	// change (Op diff, or delete).
	Added   int    `json:"added,omitempty"`
	Deleted int    `json:"deleted,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
}

// Command is a shell command a task ran.
type Command struct {
	Command string `json:"command"`
	// Exit is the exit code, when the result says it; nil when unknown.
	Exit *int `json:"exit,omitempty"`
	// Duration is how long it ran (ns), when the result says it.
	Duration int64 `json:"duration_ns,omitempty"`
	// Error is the first line of its error output, for a failed command.
	Error string `json:"error,omitempty"`
	// Test is set for a test run: passed or failed.
	Test string `json:"test,omitempty"`
	// Result is the last line of a command's output when it succeeded:
	// what it reported ("reindexed 2,400,000 docs in 6m41s", "Plan: 0
	// to add, 2 to change, 0 to destroy.").
	Result string `json:"result,omitempty"`
	Seq    uint64 `json:"seq"`
}

// Decision is a decision stated in a session.
type Decision struct {
	// Statement is the sentence that states it; Rationale a snippet of
	// the evidence around it that says why (may be empty).
	Statement string `json:"statement"`
	Rationale string `json:"rationale,omitempty"`
	// Subject is what the decision is about, when the sentence names it
	// ("database" in "for the database, use SQLite"); Chooses and
	// Replaces are the options it takes and drops ("instead of Y").
	Subject string `json:"subject,omitempty"`
	// Context is the sentence before the statement, which may say what
	// it is about when the statement does not.
	Context string `json:"context,omitempty"`
	// SubjectFrom says why Subject is what it is ("\"atlas\" is a
	// migration tool", "the sentence says \"migrations\"").
	SubjectFrom string   `json:"subject_from,omitempty"`
	Chooses     []string `json:"chooses,omitempty"`
	Replaces    []string `json:"replaces,omitempty"`
	// Setting is the one setting of a task request's list this decision
	// is ("learning rate 3e-5" of "…: learning rate 3e-5, batch size
	// 16"): each setting is a decision of its own, replaced on its own.
	Setting string `json:"setting,omitempty"`
	// Head is, for one setting, the words of its sentence before the
	// list ("Kick off the fine-tune"): what it is a setting of, told
	// without the other settings, which may have changed since.
	Head string `json:"head,omitempty"`
	// Role is who stated it: user or assistant. Count is how many times
	// it was stated.
	Role  string `json:"role"`
	Count int    `json:"count"`
	// Via is how it was stated when not in a typed prompt or a message:
	// "answer" (the user's answer through a question tool), "plan" (a
	// plan the user approved), "rejection" (the reason the user gave for
	// rejecting a tool call), "subagent prompt" (the agent's prompt to a
	// subagent or teammate), "summary" (the agent's compaction summary).
	Via string `json:"via,omitempty"`
	// Supersedes are the ids of the earlier decisions this one replaces;
	// SupersededBy the id of the later one that replaced this.
	Supersedes   []string `json:"supersedes,omitempty"`
	SupersededBy string   `json:"superseded_by,omitempty"`
	// SupersedesWhy says why it replaced the last decision it
	// supersedes: "same subject, migration tool: atlas instead of goose",
	// "drops goose".
	SupersedesWhy string `json:"supersedes_why,omitempty"`
}

// Constraint is a requirement stated in a session.
type Constraint struct {
	Statement string `json:"statement"`
	// Modal is the requirement's word: must, must not, never, always,
	// do not, should, should not, until.
	Modal string `json:"modal"`
	// Until is, for a rule for the time being, the condition it holds
	// until ("finance signs off"): a later session saying it happened,
	// or giving the go-ahead, lifts the rule.
	Until string `json:"until,omitempty"`
	// Scope is session or task: a system prompt's constraints, the
	// user's in the session's first task, and any that say they hold
	// beyond the task ("always", "never", "from now on", "in this
	// project") are session-wide; the rest are task-local. A rule the
	// agent gave a subagent or teammate in its prompt has scope subagent:
	// it holds for that agent, not the session. Source is user,
	// assistant or system.
	Scope  string `json:"scope"`
	Source string `json:"source"`
	Count  int    `json:"count"`
	// Via is how the user stated it when not in a typed prompt (see
	// Decision.Via).
	Via string `json:"via,omitempty"`
	// Supersedes and SupersededBy link a constraint restated the other
	// way round ("must" then "must not" on the same subject).
	Supersedes   []string `json:"supersedes,omitempty"`
	SupersededBy string   `json:"superseded_by,omitempty"`
}

// Thread is an open thread.
type Thread struct {
	// Kind is todo, fixme, blocker, question, failing_test, failure (a
	// command that failed with an error: a build, an import, a CI job)
	// or waiting (a condition the user holds something back for).
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Context is, for a question, the sentence before it in its
	// message: what it is about ("… now a KeyError: 'shipping_country'"
	// before "Do we default it or fail the run?").
	Context string `json:"context,omitempty"`
	// File is the file a TODO or FIXME was written into; Test the test
	// command or name that failed.
	File string `json:"file,omitempty"`
	Test string `json:"test,omitempty"`
	// From is "summary" for an item of a compaction summary's list of
	// work still to do; a later summary that no longer lists it closes
	// it.
	From string `json:"from,omitempty"`
	// ClosedBy is the event that resolved the thread (the edit that
	// removed the TODO, the test run that passed, the reply), with Why.
	ClosedBy *Evidence `json:"closed_by,omitempty"`
	Why      string    `json:"why,omitempty"`
}

// Segment is a chunk of the conversation.
type Segment struct {
	// FirstSeq and LastSeq are the events it covers.
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	Thread   int    `json:"thread"`
}

// Card is the bounded view of an artifact that search returns.
type Card struct {
	ID      string       `json:"id"`
	Type    ArtifactType `json:"type"`
	Title   string       `json:"title"`
	Snippet string       `json:"snippet"`
	Score   float64      `json:"score"`
	Status  string       `json:"status,omitempty"`
	Session string       `json:"session"`
	Task    string       `json:"task,omitempty"`
	Run     string       `json:"run,omitempty"`
	Files   []string     `json:"files,omitempty"`
	// Time is the artifact's latest evidence (unix ns).
	Time      int64 `json:"time_ns"`
	Pinned    bool  `json:"pinned,omitempty"`
	Forgotten bool  `json:"forgotten,omitempty"`
}

// MemoryState is what the memory of one session was derived from, and a
// digest of the result (artifacts and user corrections), so that an
// index can tell which sessions changed since it last looked.
type MemoryState struct {
	Session string `json:"session"`
	Ordinal uint64 `json:"ordinal"`
	// Events is the number of the session's events derived; Tasks the
	// number of its tasks.
	Events uint64 `json:"events"`
	Tasks  int    `json:"tasks"`
	// Digest is the SHA-256 (hex) of the session's artifacts as stored,
	// with their corrections; Artifacts their ids, sorted.
	Digest    string   `json:"digest"`
	Artifacts []string `json:"artifacts"`
	Builder   string   `json:"builder"`
	// Project is the session's project (ProjectOf) as the project index
	// has it.
	Project string `json:"project,omitempty"`
}

// Card returns the bounded view of a.
func (a *Artifact) Card() Card {
	return Card{ID: a.ID, Type: a.Type, Title: a.Title, Snippet: CapText(a.Text, 240), Status: a.Status,
		Session: a.Session, Task: a.Task, Run: a.Run, Files: a.Files, Time: a.Last, Pinned: a.Pinned, Forgotten: a.Forgotten}
}

// CapText cuts s to at most n bytes at a rune boundary, marking the cut.
func CapText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

package api

import (
	"errors"
	"fmt"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/pack"
)

// Service is every query and memory operation a user or an agent can ask
// of a data directory. Local answers in this process over an open engine
// and index; Remote asks the proxy that owns the directory over loopback
// HTTP. Open picks one. Implementations are safe for concurrent use.
type Service interface {
	// Sessions lists the sessions f selects, most recent first.
	Sessions(f SessionsRequest) ([]engine.Session, error)
	// Session returns one session by id or unique prefix.
	Session(id string) (engine.Session, error)
	// Events returns the canonical events of a session that f selects.
	Events(session string, f engine.EventFilter) ([]engine.Event, error)
	// Exchange returns one recorded exchange with its WAL offsets.
	Exchange(id uint64) (engine.Exchange, error)
	// Breakers returns a session's circuit breaker records, oldest
	// first; with an empty session, every session's, session by session.
	Breakers(session string) ([]engine.BreakerRecord, error)
	// Blob returns the whole text of an event whose text was longer than
	// the engine keeps inline: the blob its TextBlob names (64 hex
	// digits).
	Blob(sum string) ([]byte, error)

	// Search returns the cards of the artifacts that match q, best first.
	Search(q SearchRequest) ([]engine.Card, error)
	// Find is Search with each result's project and, when q.Explain,
	// why it ranks where it does (index.Index.Find).
	Find(q SearchRequest) ([]Result, error)
	// Get returns an artifact by id or unique prefix, with its
	// corrections and, when a later session of its project replaced or
	// closed it, that resolution.
	Get(id string) (engine.Artifact, error)
	// Related returns an artifact's supersession chain, its neighbours
	// and the events it came from.
	Related(req RelatedRequest) (*Related, error)
	// List returns the cards of a session's artifacts, or of every
	// session's.
	List(req ListRequest) ([]engine.Card, error)
	// Context builds (or finds in a cache) the context pack of a task.
	Context(req ContextRequest) (*pack.Pack, error)
	// Correct forgets, unforgets, pins or unpins an artifact or a
	// session: it writes the correction to the WAL and returns once
	// memory has taken it.
	Correct(cr Correction) (*Corrected, error)
	// Note records a harness note (a session goal, a checkpoint, a task
	// outcome) in the WAL and returns once the engine has applied it, so
	// the next pack and search see it. The session id is taken exactly
	// as given: it may name a session no request has reached yet.
	Note(n Note) (*Noted, error)

	// Usage adds up the tokens and cost of the model calls the engine
	// derived, by day, week, month, session or 5-hour block.
	Usage(req UsageRequest) (*UsageReport, error)
}

// SessionsRequest selects sessions. Zero fields select every one.
type SessionsRequest = engine.SessionFilter

// SearchRequest asks for the artifacts matching words. Its fields are
// index.Query's, in the same order, so one converts to the other.
type SearchRequest struct {
	// Text is what to look for; it is analyzed like the indexed text.
	// It must not be empty.
	Text string `json:"text"`
	// Session and Task are the scope of the search: artifacts of the
	// same session, and more of the same task, rank higher. They boost,
	// they do not filter.
	Session string `json:"session,omitempty"`
	Task    string `json:"task,omitempty"`
	// Project is the project to search: a directory. Artifacts of its
	// scope come first; others only with AllProjects, or when nothing in
	// the scope matches, and then marked. When Project is empty, the
	// scope is Session's project, else the project that holds Dir.
	Project string `json:"project,omitempty"`
	// Dir is where the caller runs (see Project).
	Dir string `json:"dir,omitempty"`
	// AllProjects returns the other projects' artifacts after the
	// scope's.
	AllProjects bool `json:"all_projects,omitempty"`
	// Types, when not empty, keeps only artifacts of these types.
	Types []engine.ArtifactType `json:"types,omitempty"`
	// K is the number of cards wanted. The default is 10; at most 100.
	K int `json:"k,omitempty"`
	// IncludeForgotten returns artifacts the user forgot too.
	IncludeForgotten bool `json:"include_forgotten,omitempty"`
	// Explain fills each Result's Explain: how its score came about.
	Explain bool `json:"explain,omitempty"`
}

// Result is one search result: a card, its project, and when asked why
// it ranks where it does.
type Result = index.Result

// Correction asks to forget, unforget, pin or unpin an artifact or a
// session (exchange.Correction: op, id, reason).
type Correction = exchange.Correction

// Note is a harness note: a session goal, a checkpoint or a task outcome
// (exchange.Note).
type Note = exchange.Note

// RelatedRequest asks what surrounds one artifact.
type RelatedRequest struct {
	// ID is an artifact id or a unique prefix of one.
	ID string `json:"id"`
	// K is how many neighbouring artifacts to return; 0 means
	// index.DefaultK.
	K int `json:"k,omitempty"`
}

// ListRequest asks for the artifacts of a session.
type ListRequest struct {
	// Session is a session id; empty means every session.
	Session string `json:"session,omitempty"`
	// Types keeps only artifacts of these types; empty keeps all.
	Types []engine.ArtifactType `json:"types,omitempty"`
}

// ContextRequest asks for the context pack of a task.
type ContextRequest struct {
	// Session is a session id (any id `bbengine sessions` accepts). A
	// session with no recorded request yet gets a pack of its brief alone.
	Session string `json:"session"`
	// TaskID names the task about to start; Task describes it.
	TaskID string `json:"task_id,omitempty"`
	Task   string `json:"task,omitempty"`
	// Budget is the total in tokens; 0 means the default (1,200), with
	// the sections scaled to it.
	Budget int `json:"budget,omitempty"`
	// Project is the working directory of a session not recorded yet
	// (a hook's cwd), whose project's memory the pack carries; a
	// recorded session's own project wins.
	Project string `json:"project,omitempty"`
}

// Related is what `mem related` shows: the supersession chain, the
// artifacts adjacent by file, task or symbol, and the events the
// artifact came from.
type Related struct {
	Artifact     engine.Card    `json:"artifact"`
	Supersedes   []engine.Card  `json:"supersedes,omitempty"`
	SupersededBy []engine.Card  `json:"superseded_by,omitempty"`
	Adjacent     []engine.Card  `json:"adjacent"`
	Events       []engine.Event `json:"events"`
}

// Corrected reports a correction written to the WAL.
type Corrected struct {
	Correction exchange.Correction `json:"correction"`
	Offset     uint64              `json:"offset"`
	// Title names what was corrected.
	Title string `json:"title"`
}

// Noted reports a note written to the WAL and applied.
type Noted struct {
	Note   exchange.Note `json:"note"`
	Offset uint64        `json:"offset"`
	// Artifact is the id of the outcome artifact an outcome note went
	// into.
	Artifact string `json:"artifact,omitempty"`
}

// ErrBadQuery marks a malformed query; ErrBadRequest a malformed request
// body. The HTTP surfaces answer both with 400.
var (
	ErrBadQuery   = errors.New("bad query")
	ErrBadRequest = errors.New("bad request")
)

// Op names a retrieval operation for Timer.
type Op int

// The retrieval operations Local times.
const (
	OpSearch Op = iota
	OpGet
	OpRelated
	OpContext
	OpList
	OpN
)

// OpNames are the names of the operations, by Op.
var OpNames = [OpN]string{"search", "get", "related", "context", "list"}

// Timer times Local's retrievals (the proxy's /_bb/metrics).
type Timer interface {
	// Observe counts one retrieval of op that started at start.
	Observe(op Op, start time.Time)
}

// NoBreakerError is the error for a session the circuit breaker knows
// nothing of. It wraps engine.ErrNotFound.
func NoBreakerError(session string) error {
	return fmt.Errorf("%w: the circuit breaker has no record of session %q: it records a session's first change (a trip) and, when the proxy stops, its counters; `bbengine breaker status` lists the sessions it knows", engine.ErrNotFound, session)
}

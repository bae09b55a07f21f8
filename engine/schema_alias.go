package engine

// The domain types live in package engine/schema, below the engine and
// the derivation pipeline (engine/derive) that both use them; these
// aliases keep them engine.Event, engine.Session, engine.Artifact… for
// every caller.

import (
	"github.com/bbengine/bbengine/engine/schema"
	"github.com/bbengine/bbengine/internal/crypt"
)

type (
	ArtifactType    = schema.ArtifactType
	Artifact        = schema.Artifact
	Evidence        = schema.Evidence
	Outcome         = schema.Outcome
	FileChange      = schema.FileChange
	Command         = schema.Command
	Decision        = schema.Decision
	Constraint      = schema.Constraint
	Thread          = schema.Thread
	Segment         = schema.Segment
	Card            = schema.Card
	MemoryState     = schema.MemoryState
	Blobs           = schema.Blobs
	BlobWriter      = schema.BlobWriter
	Report          = schema.Report
	Resolution      = schema.Resolution
	Brief           = schema.Brief
	CorrectionState = schema.CorrectionState
	BreakerRecord   = schema.BreakerRecord
	EventFilter     = schema.EventFilter
	Usage           = schema.Usage
	Kind            = schema.Kind
	Event           = schema.Event
	Counterpart     = schema.Counterpart
	Merged          = schema.Merged
	Tool            = schema.Tool
	Call            = schema.Call
	Error           = schema.Error
	Rewrite         = schema.Rewrite
	Provenance      = schema.Provenance
	Record          = schema.Record
	Agent           = schema.Agent
	ImportInfo      = schema.ImportInfo
	Session         = schema.Session
	ModelUsage      = schema.ModelUsage
	Task            = schema.Task
	Exchange        = schema.Exchange
)

const (
	MemoryVersion      = schema.MemoryVersion
	ArtifactDecision   = schema.ArtifactDecision
	ArtifactConstraint = schema.ArtifactConstraint
	ArtifactOutcome    = schema.ArtifactOutcome
	ArtifactThread     = schema.ArtifactThread
	ArtifactSegment    = schema.ArtifactSegment
	BuilderVersion     = schema.BuilderVersion
	SchemaVersion      = schema.SchemaVersion
	KindSystem         = schema.KindSystem
	KindMessage        = schema.KindMessage
	KindThinking       = schema.KindThinking
	KindToolCall       = schema.KindToolCall
	KindToolResult     = schema.KindToolResult
	KindUsage          = schema.KindUsage
	KindModelCall      = schema.KindModelCall
	KindError          = schema.KindError
	KindInterruption   = schema.KindInterruption
	KindRewrite        = schema.KindRewrite
	KindRecord         = schema.KindRecord
	ProjectSubject     = schema.ProjectSubject
	ProjectTerm        = schema.ProjectTerm
	ProjectConstraint  = schema.ProjectConstraint
	ProjectTest        = schema.ProjectTest
	ProjectFile        = schema.ProjectFile
	ProjectProse       = schema.ProjectProse
	ProjectReplaced    = schema.ProjectReplaced
	ProjectPassed      = schema.ProjectPassed
	ProjectQuestion    = schema.ProjectQuestion
	ProjectUnit        = schema.ProjectUnit
	ProjectPrompt      = schema.ProjectPrompt
	ProjectSucceeded   = schema.ProjectSucceeded
	ProjectFixed       = schema.ProjectFixed
	ProjectNegated     = schema.ProjectNegated
)

var (
	ArtifactTypes = schema.ArtifactTypes
)

// NewBlobs is schema.NewBlobs.
func NewBlobs(dir string) *Blobs { return schema.NewBlobs(dir) }

// NewBlobsKeyed is schema.NewBlobsKeyed.
func NewBlobsKeyed(dir string, keys *crypt.Keys) *Blobs { return schema.NewBlobsKeyed(dir, keys) }

// NewBlobsAt is schema.NewBlobsAt.
func NewBlobsAt(dir string) *Blobs { return schema.NewBlobsAt(dir) }

// MarkBlobTexts is schema.MarkBlobTexts.
func MarkBlobTexts(events []Event) []Event { return schema.MarkBlobTexts(events) }

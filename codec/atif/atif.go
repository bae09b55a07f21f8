package atif

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// The schema versions this package knows, oldest first.
var Versions = []string{
	"ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4",
	"ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7", "ATIF-v1.8",
}

// Version is the version exporters write: the newest one most producers
// and consumers (Harbor, Phoenix) agree on.
const Version = "ATIF-v1.7"

// Trajectory is one ATIF document (or an embedded subagent trajectory).
type Trajectory struct {
	SchemaVersion string `json:"schema_version"`
	// SessionID is required below v1.7.
	SessionID *string `json:"session_id,omitzero"`
	// TrajectoryID (v1.7) is unique within the document; required on
	// embedded subagent trajectories.
	TrajectoryID *string       `json:"trajectory_id,omitzero"`
	Agent        Agent         `json:"agent"`
	Steps        []Step        `json:"steps"`
	Notes        *string       `json:"notes,omitzero"`
	FinalMetrics *FinalMetrics `json:"final_metrics,omitzero"`
	// ContinuedTrajectoryRef names the file the trajectory continues in
	// (v1.5).
	ContinuedTrajectoryRef *string `json:"continued_trajectory_ref,omitzero"`
	// Extra (v1.1) is a JSON object.
	Extra json.RawMessage `json:"extra,omitzero"`
	// SubagentTrajectories (v1.7) are embedded subagent trajectories,
	// each valid on its own.
	SubagentTrajectories []Trajectory `json:"subagent_trajectories,omitzero"`
}

// Agent identifies the agent system that produced a trajectory.
type Agent struct {
	Name      string  `json:"name"`
	Version   string  `json:"version"`
	ModelName *string `json:"model_name,omitzero"`
	// ToolDefinitions (v1.5) are JSON objects (OpenAI function schemas).
	ToolDefinitions []json.RawMessage `json:"tool_definitions,omitzero"`
	Extra           json.RawMessage   `json:"extra,omitzero"`
}

// The step sources.
const (
	SourceSystem = "system"
	SourceUser   = "user"
	SourceAgent  = "agent"
)

// Step is one turn: a system prompt or event, a user message, or an agent
// turn (inference, actions, their observations).
type Step struct {
	StepID    int64   `json:"step_id"`
	Timestamp *string `json:"timestamp,omitzero"`
	Source    string  `json:"source"`
	// ModelName, ReasoningEffort, ReasoningContent, ToolCalls and Metrics
	// are for agent steps only.
	ModelName        *string      `json:"model_name,omitzero"`
	ReasoningEffort  *Effort      `json:"reasoning_effort,omitzero"`
	Message          Content      `json:"message"`
	ReasoningContent *string      `json:"reasoning_content,omitzero"`
	ToolCalls        []ToolCall   `json:"tool_calls,omitzero"`
	Observation      *Observation `json:"observation,omitzero"`
	Metrics          *Metrics     `json:"metrics,omitzero"`
	// IsCopiedContext (v1.5) marks context copied from an earlier
	// trajectory (a continuation after summarization).
	IsCopiedContext *bool `json:"is_copied_context,omitzero"`
	// LLMCallCount (v1.7) is the number of model calls the step stands
	// for: 0 is a deterministic dispatch (no metrics, no reasoning).
	LLMCallCount *int64          `json:"llm_call_count,omitzero"`
	Extra        json.RawMessage `json:"extra,omitzero"`
}

// ToolCall is one tool invocation of an agent step.
type ToolCall struct {
	ToolCallID   string `json:"tool_call_id"`
	FunctionName string `json:"function_name"`
	// Arguments is a JSON object (may be {}).
	Arguments json.RawMessage `json:"arguments"`
	// Extra is v1.7.
	Extra json.RawMessage `json:"extra,omitzero"`
}

// Observation is what the environment returned to a step.
type Observation struct {
	Results []ObservationResult `json:"results"`
}

// ObservationResult is one result: of a tool call of the same step
// (SourceCallID), or of something else (SourceCallID nil).
type ObservationResult struct {
	SourceCallID          *string                 `json:"source_call_id,omitzero"`
	Content               *Content                `json:"content,omitzero"`
	SubagentTrajectoryRef []SubagentTrajectoryRef `json:"subagent_trajectory_ref,omitzero"`
	// Extra is v1.7.
	Extra json.RawMessage `json:"extra,omitzero"`
}

// SubagentTrajectoryRef points to a delegated agent's trajectory: an
// embedded one by TrajectoryID (v1.7) or a file by TrajectoryPath. Below
// v1.7 SessionID is required.
type SubagentTrajectoryRef struct {
	TrajectoryID   *string         `json:"trajectory_id,omitzero"`
	SessionID      *string         `json:"session_id,omitzero"`
	TrajectoryPath *string         `json:"trajectory_path,omitzero"`
	Extra          json.RawMessage `json:"extra,omitzero"`
}

// Metrics are the operational data of one agent step. PromptTokens counts
// every input token, cached ones included (v1.2); CachedTokens is the
// cached subset of it.
type Metrics struct {
	PromptTokens     *int64   `json:"prompt_tokens,omitzero"`
	CompletionTokens *int64   `json:"completion_tokens,omitzero"`
	CachedTokens     *int64   `json:"cached_tokens,omitzero"`
	CostUSD          *float64 `json:"cost_usd,omitzero"`
	// PromptTokenIDs is v1.4, CompletionTokenIDs v1.3.
	PromptTokenIDs     []int64         `json:"prompt_token_ids,omitzero"`
	CompletionTokenIDs []int64         `json:"completion_token_ids,omitzero"`
	Logprobs           []float64       `json:"logprobs,omitzero"`
	Extra              json.RawMessage `json:"extra,omitzero"`
}

// FinalMetrics are a trajectory's totals.
type FinalMetrics struct {
	TotalPromptTokens     *int64          `json:"total_prompt_tokens,omitzero"`
	TotalCompletionTokens *int64          `json:"total_completion_tokens,omitzero"`
	TotalCachedTokens     *int64          `json:"total_cached_tokens,omitzero"`
	TotalCostUSD          *float64        `json:"total_cost_usd,omitzero"`
	TotalSteps            *int64          `json:"total_steps,omitzero"`
	Extra                 json.RawMessage `json:"extra,omitzero"`
}

// The content part types: text and image (v1.6), audio (v1.8).
const (
	PartText  = "text"
	PartImage = "image"
	PartAudio = "audio"
)

// ContentPart is one part of multimodal content: a text part has Text, an
// image or audio part Source.
type ContentPart struct {
	Type   string       `json:"type"`
	Text   *string      `json:"text,omitzero"`
	Source *MediaSource `json:"source,omitzero"`
}

// MediaSource locates an image or audio file: Path is relative to the
// trajectory file, absolute, or a URL.
type MediaSource struct {
	MediaType string `json:"media_type"`
	Path      string `json:"path"`
	// DurationSec is for audio only.
	DurationSec *float64 `json:"duration_sec,omitzero"`
}

// Content is a message or an observation's content: a string, or (v1.6)
// an array of parts. Parts non-nil (even empty) is the array form.
type Content struct {
	Text  string
	Parts []ContentPart
}

// Str returns string content.
func Str(s string) Content { return Content{Text: s} }

// IsParts reports whether c is the array form.
func (c Content) IsParts() bool { return c.Parts != nil }

// PlainText returns the text of c: the string, or the text parts joined by
// newlines.
func (c Content) PlainText() string {
	if c.Parts == nil {
		return c.Text
	}
	var b bytes.Buffer
	n := 0
	for _, p := range c.Parts {
		if p.Type != PartText || p.Text == nil {
			continue
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(*p.Text)
		n++
	}
	return b.String()
}

// MarshalJSON writes the string or the array.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Parts != nil {
		return marshal(c.Parts)
	}
	return marshal(c.Text)
}

// marshal is json.Marshal without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads a string or an array of parts (leniently: Decode is
// the strict reader).
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	switch kindOf(b) {
	case "string":
		return json.Unmarshal(b, &c.Text)
	case "array":
		c.Parts = []ContentPart{}
		return json.Unmarshal(b, &c.Parts)
	}
	return fmt.Errorf("atif: content is %s, want string or array", kindOf(b))
}

// Effort is a step's reasoning effort: a word ("low", "high") or a number.
type Effort struct {
	Text  string
	Num   float64
	IsNum bool
}

// MarshalJSON writes the word or the number.
func (e Effort) MarshalJSON() ([]byte, error) {
	if e.IsNum {
		return json.Marshal(e.Num)
	}
	return marshal(e.Text)
}

// UnmarshalJSON reads a string or a number.
func (e *Effort) UnmarshalJSON(b []byte) error {
	*e = Effort{}
	switch kindOf(b) {
	case "string":
		return json.Unmarshal(b, &e.Text)
	case "number":
		f, err := strconv.ParseFloat(string(b), 64)
		e.Num, e.IsNum = f, true
		return err
	}
	return fmt.Errorf("atif: reasoning_effort is %s, want string or number", kindOf(b))
}

// kindOf names the JSON type of a raw value by its first byte.
func kindOf(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// Encode writes t as indented JSON (two spaces), keys in Harbor's model
// order, absent fields omitted, HTML characters not escaped. The output
// is a pure function of t. Encode does not validate.
func Encode(t *Trajectory) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		return nil, fmt.Errorf("atif: encode: %w", err)
	}
	return b.Bytes(), nil
}

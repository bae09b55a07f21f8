package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/pack"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The memory tools are defined once here, as typed handlers over
// api.Service, and served two ways: by `bbengine mcp` (package mcpserver
// registers each with mcp.AddTool) and by `bbengine tools` (function
// definitions for OpenAI and Anthropic, and one call run from a shell).
// Both take their schemas from the same inferred *jsonschema.Schema
// values, so what a model is told and what is checked cannot drift
// apart.

// Bounds on what one tool call returns.
const (
	// maxK is the most cards memory_search or memory_related returns;
	// defaultK is what they return when k is not given.
	maxK     = 20
	defaultK = 5
	// maxArtifactText is the most bytes of an artifact's text memory_get
	// returns.
	maxArtifactText = 8 << 10
	// maxEvidence is the most evidence entries memory_get returns: the
	// first and the last half of it, so both where an artifact began and
	// its latest restatement are there.
	maxEvidence = 12
	// maxListed is the most entries of any other list of an artifact
	// (files, commands, summary bullets).
	maxListed = 30
	// maxEventText is the most bytes of an event's text memory_related
	// returns.
	maxEventText = 600
	// maxChain is the most artifacts of a supersession chain
	// memory_related returns on each side.
	maxChain = 10
	// maxBudget is the largest pack memory_context_for_task builds.
	maxBudget = 8000
)

// SearchIn is the input of memory_search.
type SearchIn struct {
	Query   string                `json:"query" jsonschema:"what to look for: words of the decision, constraint, file, test, command or error (keyword search, BM25)"`
	Session string                `json:"session,omitempty" jsonschema:"rank this session's artifacts first: the session id the context pack names"`
	Task    string                `json:"task,omitempty" jsonschema:"rank this task's artifacts first (a task id such as turn-2)"`
	Types   []engine.ArtifactType `json:"types,omitempty" jsonschema:"only artifacts of these types"`
	K       int                   `json:"k,omitempty" jsonschema:"how many cards to return, 1 to 20; the default is 5"`
}

// SearchOut is the output of memory_search.
type SearchOut struct {
	Cards []engine.Card `json:"cards" jsonschema:"the matching artifacts, best first: id, type, title, a snippet, status (a superseded decision comes right after the one that replaced it)"`
}

// GetIn is the input of memory_get.
type GetIn struct {
	ID string `json:"id" jsonschema:"an artifact id, or a unique prefix of one, as the context pack, a search card or memory_related lists it"`
}

// GetOut is the output of memory_get.
type GetOut struct {
	Artifact engine.Artifact `json:"artifact" jsonschema:"the artifact: text, status, files, and evidence whose provenance points at the WAL offsets, exchange, request and source file:line it came from"`
	// Truncated says what was cut to bound the answer.
	Truncated []string `json:"truncated,omitempty" jsonschema:"what was left out to keep the answer small; bbengine mem get ID --json prints all of it"`
}

// ContextIn is the input of memory_context_for_task.
type ContextIn struct {
	Session string `json:"session" jsonschema:"the session id (the context pack's session attribute)"`
	Task    string `json:"task" jsonschema:"what the task about to start is to do; items are ranked by its words and files"`
	TaskID  string `json:"task_id,omitempty" jsonschema:"the task's id, when it has one"`
	Budget  int    `json:"budget,omitempty" jsonschema:"the pack's size in tokens, 120 to 8000; the default is 1200"`
}

// ContextOut is the output of memory_context_for_task: the pack as
// Markdown, for the model, and as its JSON fields.
type ContextOut struct {
	Markdown string `json:"markdown" jsonschema:"the pack as Markdown: read it as the session's state"`
	pack.Pack
}

// RelatedIn is the input of memory_related.
type RelatedIn struct {
	ID string `json:"id" jsonschema:"an artifact id, or a unique prefix of one"`
	K  int    `json:"k,omitempty" jsonschema:"how many neighbouring artifacts to return, 1 to 20; the default is 5"`
}

// RelatedOut is the output of memory_related.
type RelatedOut struct {
	Artifact     engine.Card   `json:"artifact" jsonschema:"the artifact asked about"`
	Supersedes   []engine.Card `json:"supersedes" jsonschema:"the decisions or constraints it replaced"`
	SupersededBy []engine.Card `json:"superseded_by" jsonschema:"what replaced it, up to the one in force"`
	Adjacent     []engine.Card `json:"adjacent" jsonschema:"artifacts sharing its files, task or symbols"`
	Events       []EventRef    `json:"events" jsonschema:"the events it came from, with provenance"`
}

// EventRef is an event an artifact came from, its text capped.
type EventRef struct {
	Seq  uint64            `json:"seq"`
	Kind engine.Kind       `json:"kind"`
	Time int64             `json:"time_ns"`
	Role string            `json:"role,omitempty"`
	Text string            `json:"text,omitempty"`
	Prov engine.Provenance `json:"prov"`
}

// Tool is one memory tool: its name, what it tells the model, its
// schemas and its handler.
type Tool struct {
	Name        string
	Title       string
	Description string
	In, Out     *jsonschema.Schema
	in          *jsonschema.Resolved
	// call decodes arguments (already valid against In) and runs the
	// handler.
	call func(m api.Service, args json.RawMessage) (any, error)
	// add registers the tool with an MCP server whose calls get the
	// service from lend.
	add func(s *mcp.Server, lend Lender)
}

// Call runs t with arguments that DecodeArgs checked, and returns its
// output.
func (t *Tool) Call(s api.Service, args json.RawMessage) (any, error) { return t.call(s, args) }

// AddTo registers t with an MCP server whose calls get the service from
// lend.
func (t *Tool) AddTo(s *mcp.Server, lend Lender) { t.add(s, lend) }

// Lender lends the service to one tool call; the caller calls release
// when done with it.
type Lender func(ctx context.Context) (s api.Service, release func(), err error)

// texter is an output with a text rendering for the model, sent as the
// MCP result's content in place of the JSON.
type texter interface{ text() string }

func (o ContextOut) text() string { return o.Markdown }

// schemaOpts infers the schemas of every tool: an artifact type is one
// of the known names.
func schemaOpts() *jsonschema.ForOptions {
	types := make([]any, len(engine.ArtifactTypes))
	for i, t := range engine.ArtifactTypes {
		types[i] = string(t)
	}
	return &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[engine.ArtifactType](): {Type: "string", Enum: types},
	}}
}

// newTool defines a tool from its handler; limit, when not nil, narrows
// the inferred input schema (ranges).
func newTool[In, Out any](name, title, desc string, limit func(*jsonschema.Schema), run func(m api.Service, in In) (Out, error)) *Tool {
	in, err := jsonschema.For[In](schemaOpts())
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", name, err))
	}
	if limit != nil {
		limit(in)
	}
	out, err := jsonschema.For[Out](schemaOpts())
	if err != nil {
		panic(fmt.Sprintf("tool %s: output schema: %v", name, err))
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", name, err))
	}
	t := &Tool{Name: name, Title: title, Description: desc, In: in, Out: out, in: resolved}
	t.call = func(m api.Service, args json.RawMessage) (any, error) {
		var v In
		if err := json.Unmarshal(args, &v); err != nil {
			return nil, err
		}
		return run(m, v)
	}
	t.add = func(s *mcp.Server, lend Lender) {
		mcp.AddTool(s, &mcp.Tool{Name: name, Title: title, Description: desc, InputSchema: in, OutputSchema: out,
			Annotations: &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true,
				DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)}},
			func(ctx context.Context, _ *mcp.CallToolRequest, v In) (*mcp.CallToolResult, Out, error) {
				var zero Out
				m, release, err := lend(ctx)
				if err != nil {
					return nil, zero, err
				}
				defer release()
				o, err := run(m, v)
				if err != nil {
					return nil, zero, err
				}
				if tx, ok := any(o).(texter); ok {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tx.text()}}}, o, nil
				}
				return nil, o, nil
			})
	}
	return t
}

// between bounds an integer property of a schema.
func between(prop string, lo, hi float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		p := s.Properties[prop]
		p.Minimum, p.Maximum = jsonschema.Ptr(lo), jsonschema.Ptr(hi)
	}
}

// All are the memory tools, in the order they are listed.
var All = []*Tool{
	newTool("memory_search", "Search memory",
		"Search the memory bbengine keeps of this project's agent sessions: decisions, constraints, what tasks did (outcomes), "+
			"open threads and transcript excerpts, by keywords. Returns short cards with ids. Use it only for something the "+
			"context pack does not cover, at most once per task; then memory_get the one card you need.",
		between("k", 1, maxK), toolSearch),
	newTool("memory_get", "Get a memory artifact",
		"Return one memory artifact by id: its text (up to 8 KiB), status, files, and the evidence it came from with "+
			"provenance (WAL offsets, exchange and request ids, source file:line). Prefer this to memory_search when the "+
			"context pack or a card lists the id; two gets per task are usually enough.",
		nil, toolGet),
	newTool("memory_context_for_task", "Context pack for a task",
		"Build the context pack for a task of a session: the goal, decisions in force, constraints, what earlier tasks "+
			"implemented, open threads, and ids to expand with memory_get, within a token budget. The pack is normally "+
			"given before the task starts; call this only when it is missing or for another task.",
		between("budget", pack.MinTotal, maxBudget), toolContext),
	newTool("memory_related", "Related memory",
		"Show what surrounds one artifact: the decisions or constraints it replaced or that replaced it, up to k artifacts "+
			"sharing its files, task or symbols, and the events it came from with provenance.",
		between("k", 1, maxK), toolRelated),
}

// Named returns the tool called name, or nil.
func Named(name string) *Tool {
	for _, t := range All {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Names lists the tools' names.
func Names() []string {
	var out []string
	for _, t := range All {
		out = append(out, t.Name)
	}
	return out
}

func toolSearch(m api.Service, in SearchIn) (SearchOut, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return SearchOut{}, errors.New("memory_search: query is empty: give the words to look for")
	}
	k := in.K
	if k == 0 {
		k = defaultK
	}
	if k < 1 || k > maxK {
		return SearchOut{}, fmt.Errorf("memory_search: k %d: want 1 to %d", k, maxK)
	}
	for _, t := range in.Types {
		if !t.Valid() {
			return SearchOut{}, fmt.Errorf("memory_search: types: %q is not an artifact type (decision, constraint, outcome, open_thread, transcript)", t)
		}
	}
	cards, err := m.Search(api.SearchRequest{Text: q, Session: in.Session, Task: in.Task, Types: in.Types, K: k})
	if err != nil {
		return SearchOut{}, fmt.Errorf("memory_search: %w", err)
	}
	if len(cards) > k {
		cards = cards[:k]
	}
	return SearchOut{Cards: nonNil(cards)}, nil
}

func toolGet(m api.Service, in GetIn) (GetOut, error) {
	id := strings.TrimSpace(in.ID)
	if id == "" {
		return GetOut{}, errors.New("memory_get: id is empty: give an id the context pack or memory_search lists")
	}
	a, err := m.Get(id)
	if err != nil {
		return GetOut{}, fmt.Errorf("memory_get %s: %w", id, err)
	}
	a, cut := BoundArtifact(a)
	return GetOut{Artifact: a, Truncated: cut}, nil
}

func toolContext(m api.Service, in ContextIn) (ContextOut, error) {
	if strings.TrimSpace(in.Session) == "" {
		return ContextOut{}, errors.New("memory_context_for_task: session is empty: give the session id")
	}
	if in.Budget != 0 && (in.Budget < pack.MinTotal || in.Budget > maxBudget) {
		return ContextOut{}, fmt.Errorf("memory_context_for_task: budget %d: want %d to %d tokens", in.Budget, pack.MinTotal, maxBudget)
	}
	p, err := m.Context(api.ContextRequest{Session: in.Session, Task: in.Task, TaskID: in.TaskID, Budget: in.Budget})
	if err != nil {
		return ContextOut{}, fmt.Errorf("memory_context_for_task: %w", err)
	}
	return ContextOut{Markdown: p.Markdown(), Pack: *p}, nil
}

func toolRelated(m api.Service, in RelatedIn) (RelatedOut, error) {
	id := strings.TrimSpace(in.ID)
	if id == "" {
		return RelatedOut{}, errors.New("memory_related: id is empty: give an artifact id")
	}
	k := in.K
	if k == 0 {
		k = defaultK
	}
	if k < 1 || k > maxK {
		return RelatedOut{}, fmt.Errorf("memory_related: k %d: want 1 to %d", k, maxK)
	}
	r, err := m.Related(api.RelatedRequest{ID: id, K: k})
	if err != nil {
		return RelatedOut{}, fmt.Errorf("memory_related %s: %w", id, err)
	}
	out := RelatedOut{Artifact: r.Artifact, Supersedes: nonNil(headOf(r.Supersedes, maxChain)),
		SupersededBy: nonNil(headOf(r.SupersededBy, maxChain)), Adjacent: nonNil(headOf(r.Adjacent, k)), Events: []EventRef{}}
	for _, ev := range r.Events {
		out.Events = append(out.Events, EventRef{Seq: ev.Seq, Kind: ev.Kind, Time: ev.Time, Role: ev.Role,
			Text: clipText(ev.Text, maxEventText), Prov: ev.Prov})
	}
	return out, nil
}

// BoundArtifact caps an artifact's text and lists for a tool answer and
// says what it cut.
func BoundArtifact(a engine.Artifact) (engine.Artifact, []string) {
	var cut []string
	if len(a.Text) > maxArtifactText {
		cut = append(cut, fmt.Sprintf("text: the first %d of %d bytes", maxArtifactText, len(a.Text)))
		a.Text = clipText(a.Text, maxArtifactText)
	}
	if n := len(a.Evidence); n > maxEvidence {
		cut = append(cut, fmt.Sprintf("evidence: the first %d and the last %d of %d events", maxEvidence/2, maxEvidence/2, n))
		a.Evidence = append(slices.Clone(a.Evidence[:maxEvidence/2]), a.Evidence[n-maxEvidence/2:]...)
	}
	a.Files = capList(a.Files, "files", &cut)
	a.Symbols = capList(a.Symbols, "symbols", &cut)
	a.Commands = capList(a.Commands, "commands", &cut)
	a.Errors = capList(a.Errors, "errors", &cut)
	if o := a.Outcome; o != nil {
		c := *o
		c.Summary = capList(c.Summary, "outcome.summary", &cut)
		c.Files = capList(c.Files, "outcome.files", &cut)
		c.Commands = capList(c.Commands, "outcome.commands", &cut)
		c.Errors = capList(c.Errors, "outcome.errors", &cut)
		a.Outcome = &c
	}
	if len(cut) > 0 {
		cut = append(cut, "bbengine mem get "+a.ID+" --json prints the whole artifact")
	}
	return a, cut
}

// capList keeps the first maxListed entries of s, noting a cut.
func capList[T any](s []T, name string, cut *[]string) []T {
	if len(s) <= maxListed {
		return s
	}
	*cut = append(*cut, fmt.Sprintf("%s: the first %d of %d", name, maxListed, len(s)))
	return s[:maxListed:maxListed]
}

// headOf returns at most the first n entries of s.
func headOf[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// nonNil turns a nil slice into an empty one, so JSON says [] not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// clipText cuts s to at most n bytes at a rune boundary, marking the cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…[cut]"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}

// DecodeArgs checks raw arguments of t as the MCP server does (the
// schema: types, ranges, required and unknown fields) and returns them
// ready for t.Call. Errors name the tool and the field.
func DecodeArgs(t *Tool, raw []byte) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("%s: the arguments are not a JSON object: %v", t.Name, err)
	}
	known := make([]string, 0, len(t.In.Properties))
	for name := range t.In.Properties {
		known = append(known, name)
	}
	sort.Strings(known)
	var unknown []string
	for name := range fields {
		if _, ok := t.In.Properties[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s: unknown field %q (its fields are %s)", t.Name, unknown[0], strings.Join(known, ", "))
	}
	for _, name := range t.In.Required {
		if _, ok := fields[name]; !ok {
			return nil, fmt.Errorf("%s: field %q is required (%s)", t.Name, name, t.In.Properties[name].Description)
		}
	}
	for _, name := range known {
		if err := checkField(t.In.Properties[name], fields[name]); err != nil {
			return nil, fmt.Errorf("%s: field %q: %v", t.Name, name, err)
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s: %v", t.Name, err)
	}
	if err := t.in.Validate(v); err != nil {
		return nil, fmt.Errorf("%s: invalid arguments: %v", t.Name, err)
	}
	return raw, nil
}

// checkField checks one argument against its property schema the way a
// person reads it (the schema validation that follows catches the rest).
func checkField(p *jsonschema.Schema, raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	switch p.Type {
	case "string":
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return fmt.Errorf("%s is not a string", raw)
		}
	case "integer":
		var n float64
		if json.Unmarshal(raw, &n) != nil || n != float64(int64(n)) {
			return fmt.Errorf("%s is not an integer", raw)
		}
		if p.Minimum != nil && n < *p.Minimum || p.Maximum != nil && n > *p.Maximum {
			return fmt.Errorf("%s is out of range: want %v to %v", raw, *p.Minimum, *p.Maximum)
		}
	}
	if p.Items != nil && len(p.Items.Enum) > 0 {
		var vs []any
		if json.Unmarshal(raw, &vs) != nil {
			return fmt.Errorf("%s is not a list", raw)
		}
		for _, v := range vs {
			if !slices.Contains(p.Items.Enum, v) {
				return fmt.Errorf("%s is not one of %v", jsonText(v), p.Items.Enum)
			}
		}
	}
	return nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

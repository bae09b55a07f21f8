package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bbengine/bbengine/codec/atif"
	"github.com/bbengine/bbengine/engine"
)

// ATIF export and import.
//
// A session exports as one ATIF-v1.7 trajectory. Thread 1 is the root
// trajectory; every other thread (each subagent, each fork) is an embedded
// subagent trajectory whose trajectory_id is "<session>/thread-<n>". The
// steps of a thread are:
//
//	system prompt, a system/developer/tool message,  system step (message)
//	error, interruption, rewrite, record             system step (message says what it is)
//	user message                                     user step
//	model call and its output                        agent step: model_name, reasoning_content
//	                                                 (thinking), message (assistant text),
//	                                                 tool_calls, metrics (usage)
//	tool result                                      a result in the observation of the step
//	                                                 that holds its call (Harbor's rule 3);
//	                                                 a system step when no step does
//
// Metrics follow ATIF's definition, which is also llm.Usage's:
// prompt_tokens counts every input token (cache reads and cache creation
// included), cached_tokens the cache reads, completion_tokens every
// output token (reasoning included); cache_creation_input_tokens and
// reasoning_tokens are repeated in metrics.extra. (Harbor's Claude Code
// exporter leaves cache creation out of prompt_tokens; ours does not, so
// that prompt_tokens − cached_tokens is every token not read from cache.)
//
// What ATIF has no field for goes into extra under the key "bbengine":
// the root trajectory's extra holds the Session, each step's extra the
// events the step was built from, in order, with the values the step
// holds natively taken out (the text of its message, reasoning, results;
// tool call ids, names and object arguments; the three token counts of a
// lone usage). The importer puts them back, so events → ATIF → events
// gives the same events in the same order (their provenance becomes the
// import's).
//
// A session imported from a foreign ATIF document (one bbengine did not
// write) exports back as that document: its events carry, in Extra under
// "atif", each trajectory's root fields and each step's fields the events
// do not hold.

// atifFormat names the bbengine extras of an exported document.
const atifFormat = "bbengine-atif/1"

// ATIFOptions configure ATIF.
type ATIFOptions struct {
	// Version is agent.version when the session does not name its agent's
	// version. The default is "unknown".
	Version string
}

// bbRoot is a trajectory's extra.bbengine.
type bbRoot struct {
	Format  string          `json:"format,omitempty"`
	Session *engine.Session `json:"session,omitempty"`
	Thread  int             `json:"thread"`
}

// bbStep is a step's extra.bbengine.
type bbStep struct {
	Events []bbEvent `json:"events"`
}

// bbEvent is one event of a step. Seq is its position in the exported
// timeline (1-based).
type bbEvent struct {
	engine.Event
	// NoArgs marks a tool call that had no arguments (arguments is {}).
	NoArgs bool `json:"no_args,omitempty"`
}

// bbResult is a result's extra.bbengine: RefOnly marks a result the
// exporter added to hold a subagent reference (no event).
type bbResult struct {
	RefOnly bool `json:"ref_only"`
}

// ATIF exports a session's timeline as an ATIF-v1.7 trajectory (see
// above). The result passes atif.Validate.
func ATIF(s *engine.Session, events []engine.Event, opts *ATIFOptions) (*atif.Trajectory, error) {
	if len(events) == 0 {
		return nil, fmt.Errorf("engine: atif: session %s has no events", s.ID)
	}
	if foreignATIF(events) {
		return exportForeign(events)
	}
	version := s.Version
	if version == "" && opts != nil {
		version = opts.Version
	}
	if version == "" {
		version = "unknown"
	}
	x := &exporter{s: s, version: version, owner: map[string]*stepB{}, trajs: map[int]*trajB{}}
	return x.run(events)
}

type stepB struct {
	step   atif.Step
	evs    []bbEvent
	thread int
	// cur marks an open agent step.
	models int
}

type trajB struct {
	thread int
	steps  []*stepB
	model  string
}

type exporter struct {
	s       *engine.Session
	version string
	// owner maps a tool call id to the step that holds the call.
	owner map[string]*stepB
	trajs map[int]*trajB
	order []int
}

func stamp3339(ns int64) *string {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	var s string
	switch {
	case ns%1e9 == 0:
		s = t.Format("2006-01-02T15:04:05Z")
	case ns%1e6 == 0:
		s = t.Format("2006-01-02T15:04:05.000Z")
	default:
		// Microseconds: what every ISO 8601 reader (Python's included)
		// takes; the exact time stays in the step's events.
		s = t.Format("2006-01-02T15:04:05.000000Z")
	}
	return &s
}

func (x *exporter) traj(thread int) *trajB {
	t := x.trajs[thread]
	if t == nil {
		t = &trajB{thread: thread}
		x.trajs[thread] = t
		x.order = append(x.order, thread)
	}
	return t
}

func (x *exporter) newStep(t *trajB, source string, ev *engine.Event) *stepB {
	st := &stepB{step: atif.Step{Source: source, Timestamp: stamp3339(ev.Time)}, thread: t.thread}
	t.steps = append(t.steps, st)
	return st
}

// describe is the message of a system step made from an event with no
// step of its own.
func describe(ev *engine.Event) string {
	switch ev.Kind {
	case engine.KindError:
		if ev.Error != nil {
			return fmt.Sprintf("error (%s): %s", ev.Error.Stage, ev.Error.Message)
		}
	case engine.KindInterruption:
		return "interrupted: " + ev.Text
	case engine.KindRewrite:
		if ev.Rewrite != nil {
			return fmt.Sprintf("history rewrite: %s of thread %d (kept %d, dropped %d)", ev.Rewrite.Kind, ev.Rewrite.From, ev.Rewrite.Kept, ev.Rewrite.Dropped)
		}
	case engine.KindRecord:
		if ev.Record != nil {
			return "record: " + ev.Record.Type
		}
	}
	return string(ev.Kind)
}

func (x *exporter) run(events []engine.Event) (*atif.Trajectory, error) {
	cur := map[int]*stepB{}
	for i := range events {
		ev := &events[i]
		t := x.traj(ev.Thread)
		e := bbEvent{Event: *ev}
		e.Seq = uint64(i + 1)
		agent := func() *stepB {
			if cur[ev.Thread] == nil {
				cur[ev.Thread] = x.newStep(t, atif.SourceAgent, ev)
			}
			return cur[ev.Thread]
		}
		switch {
		case ev.Kind == engine.KindModelCall:
			st := x.newStep(t, atif.SourceAgent, ev)
			cur[ev.Thread] = st
			st.models++
			if ev.Call != nil {
				m := ev.Call.Model
				if ev.Call.Served != "" {
					m = ev.Call.Served
				}
				if m != "" {
					st.step.ModelName = &m
					if t.model == "" {
						t.model = m
					}
				}
			}
			st.evs = append(st.evs, e)
		case ev.Kind == engine.KindThinking, ev.Kind == engine.KindUsage, ev.Kind == engine.KindMessage && ev.Role == "assistant":
			st := agent()
			st.evs = append(st.evs, e)
		case ev.Kind == engine.KindToolCall:
			st := agent()
			tc := atif.ToolCall{Arguments: json.RawMessage(`{}`)}
			if ev.Tool != nil {
				tool := *ev.Tool
				tc.ToolCallID, tc.FunctionName = tool.ID, tool.Name
				tool.ID, tool.Name = "", ""
				switch args := bytes.TrimSpace(tool.Args); {
				case len(args) == 0:
					e.NoArgs = true
				case args[0] == '{' && json.Valid(args):
					var b bytes.Buffer
					_ = json.Compact(&b, args)
					tc.Arguments = b.Bytes()
					tool.Args = nil
				}
				e.Tool = &tool
				x.owner[tc.ToolCallID] = st
			}
			st.step.ToolCalls = append(st.step.ToolCalls, tc)
			st.evs = append(st.evs, e)
		case ev.Kind == engine.KindToolResult:
			var st *stepB
			if ev.Tool != nil {
				st = x.owner[ev.Tool.ID]
				if st != nil && st.thread != ev.Thread {
					st = nil
				}
			}
			r := atif.ObservationResult{Content: &atif.Content{Text: ev.Text}}
			e.Text = ""
			if st != nil {
				id := ev.Tool.ID
				r.SourceCallID = &id
				tool := *ev.Tool
				tool.ID = ""
				e.Tool = &tool
			} else {
				st = x.newStep(t, atif.SourceSystem, ev)
			}
			if st.step.Observation == nil {
				st.step.Observation = &atif.Observation{}
			}
			st.step.Observation.Results = append(st.step.Observation.Results, r)
			st.evs = append(st.evs, e)
		case ev.Kind == engine.KindMessage || ev.Kind == engine.KindSystem:
			source := atif.SourceSystem
			if ev.Kind == engine.KindMessage && ev.Role == "user" {
				source = atif.SourceUser
			}
			st := x.newStep(t, source, ev)
			st.step.Message = atif.Str(ev.Text)
			e.Text = ""
			st.evs = append(st.evs, e)
			cur[ev.Thread] = nil
		default:
			st := x.newStep(t, atif.SourceSystem, ev)
			st.step.Message = atif.Str(describe(ev))
			st.evs = append(st.evs, e)
		}
	}
	for _, st := range x.allSteps() {
		if err := finishStep(st); err != nil {
			return nil, err
		}
	}
	x.refs()
	root := 1
	if x.trajs[1] == nil {
		root = slices.Min(x.order)
	}
	slices.Sort(x.order)
	out, err := x.trajectory(x.trajs[root], true)
	if err != nil {
		return nil, err
	}
	for _, th := range x.order {
		if th == root {
			continue
		}
		sub, err := x.trajectory(x.trajs[th], false)
		if err != nil {
			return nil, err
		}
		out.SubagentTrajectories = append(out.SubagentTrajectories, *sub)
	}
	return out, nil
}

func (x *exporter) allSteps() []*stepB {
	var out []*stepB
	for _, th := range x.order {
		out = append(out, x.trajs[th].steps...)
	}
	return out
}

// finishStep fills an agent step's reasoning, message and metrics from
// its events, takes what the step now holds out of the events, and writes
// the events into the step's extra.
func finishStep(st *stepB) error {
	var thinking, assistant, usage []int
	for i := range st.evs {
		switch e := &st.evs[i]; {
		case e.Kind == engine.KindThinking:
			thinking = append(thinking, i)
		case e.Kind == engine.KindMessage && e.Role == "assistant":
			assistant = append(assistant, i)
		case e.Kind == engine.KindUsage && e.Usage != nil:
			usage = append(usage, i)
		}
	}
	joined := func(idx []int) string {
		s := make([]string, len(idx))
		for k, i := range idx {
			s[k] = st.evs[i].Text
		}
		return strings.Join(s, "\n\n")
	}
	if len(thinking) > 0 {
		r := joined(thinking)
		st.step.ReasoningContent = &r
		if len(thinking) == 1 {
			st.evs[thinking[0]].Text = ""
		}
	}
	if len(assistant) > 0 {
		st.step.Message = atif.Str(joined(assistant))
		if len(assistant) == 1 {
			st.evs[assistant[0]].Text = ""
		}
	}
	if len(usage) > 0 {
		var u engine.Usage
		for _, i := range usage {
			u.Add(*st.evs[i].Usage)
		}
		m := &atif.Metrics{PromptTokens: &u.Input, CompletionTokens: &u.Output, CachedTokens: &u.CacheRead}
		var ex []string
		if u.CacheCreation != 0 {
			ex = append(ex, fmt.Sprintf(`"cache_creation_input_tokens":%d`, u.CacheCreation))
		}
		if u.Reasoning != 0 {
			ex = append(ex, fmt.Sprintf(`"reasoning_tokens":%d`, u.Reasoning))
		}
		if ex != nil {
			m.Extra = json.RawMessage("{" + strings.Join(ex, ",") + "}")
		}
		st.step.Metrics = m
		if len(usage) == 1 {
			e := &st.evs[usage[0]]
			u := *e.Usage
			u.Input, u.Output, u.CacheRead = 0, 0, 0
			e.Usage = &u
		}
	}
	if st.models > 0 {
		n := int64(st.models)
		st.step.LLMCallCount = &n
	}
	b, err := json.Marshal(map[string]bbStep{"bbengine": {Events: st.evs}})
	if err != nil {
		return fmt.Errorf("engine: atif: step extra: %w", err)
	}
	st.step.Extra = b
	return nil
}

func (x *exporter) trajID(thread int) string {
	return fmt.Sprintf("%s/thread-%d", x.s.ID, thread)
}

// refs links each subagent's spawning call to its embedded trajectory.
func (x *exporter) refs() {
	for _, a := range x.s.Agents {
		if a.Call == "" || x.trajs[a.Thread] == nil {
			continue
		}
		st := x.owner[a.Call]
		if st == nil {
			continue
		}
		id := x.trajID(a.Thread)
		ref := atif.SubagentTrajectoryRef{TrajectoryID: &id}
		if st.step.Observation == nil {
			st.step.Observation = &atif.Observation{}
		}
		res := st.step.Observation.Results
		k := slices.IndexFunc(res, func(r atif.ObservationResult) bool {
			return r.SourceCallID != nil && *r.SourceCallID == a.Call
		})
		if k < 0 {
			call := a.Call
			b, _ := json.Marshal(map[string]bbResult{"bbengine": {RefOnly: true}})
			res = append(res, atif.ObservationResult{SourceCallID: &call, Extra: b})
			k = len(res) - 1
		}
		res[k].SubagentTrajectoryRef = append(res[k].SubagentTrajectoryRef, ref)
		st.step.Observation.Results = res
	}
}

func (x *exporter) trajectory(t *trajB, root bool) (*atif.Trajectory, error) {
	sid := x.s.ID
	out := &atif.Trajectory{SchemaVersion: atif.Version, SessionID: &sid}
	out.Agent = atif.Agent{Name: x.s.Agent, Version: x.version}
	if out.Agent.Name == "" {
		out.Agent.Name = "bbengine"
	}
	model := t.model
	var ex bbRoot
	if root {
		id := x.s.ID
		out.TrajectoryID = &id
		if m := topModel(*x.s); m != "" {
			model = m
		}
		ex = bbRoot{Format: atifFormat, Session: x.s, Thread: t.thread}
	} else {
		id := x.trajID(t.thread)
		out.TrajectoryID = &id
		out.Agent.Name = "subagent"
		if i := slices.IndexFunc(x.s.Agents, func(a engine.Agent) bool { return a.Thread == t.thread }); i >= 0 && x.s.Agents[i].Type != "" {
			out.Agent.Name = x.s.Agents[i].Type
		}
		ex = bbRoot{Thread: t.thread}
	}
	if model != "" {
		out.Agent.ModelName = &model
	}
	b, err := json.Marshal(map[string]bbRoot{"bbengine": ex})
	if err != nil {
		return nil, fmt.Errorf("engine: atif: extra: %w", err)
	}
	out.Extra = b
	var fm atif.FinalMetrics
	var prompt, completion, cached int64
	metrics := false
	for i, st := range t.steps {
		st.step.StepID = int64(i + 1)
		out.Steps = append(out.Steps, st.step)
		if m := st.step.Metrics; m != nil {
			metrics = true
			prompt += *m.PromptTokens
			completion += *m.CompletionTokens
			cached += *m.CachedTokens
		}
	}
	if metrics {
		fm.TotalPromptTokens, fm.TotalCompletionTokens, fm.TotalCachedTokens = &prompt, &completion, &cached
	}
	n := int64(len(t.steps))
	fm.TotalSteps = &n
	out.FinalMetrics = &fm
	return out, nil
}

// atifMark is Event.Extra["atif"] of an event imported from a foreign
// ATIF document.
type atifMark struct {
	// Trajectory is on the first event of each trajectory: its root
	// fields, without steps and subagent trajectories; Parent is the
	// thread of the trajectory that embeds it (0 for the document).
	Trajectory *atif.Trajectory `json:"trajectory,omitempty"`
	Parent     int              `json:"parent,omitempty"`
	// Step is on the first event of each step.
	Step *stepSkel `json:"step,omitempty"`
	// Invalid marks an error event that reports a problem of the
	// document (it is not part of the document).
	Invalid bool `json:"invalid,omitempty"`
}

// stepSkel is a step without what its events hold: a string message,
// the reasoning, the tool calls' ids, names and arguments, the results'
// source_call_id and string content. NullContent lists the results whose
// content was absent (not a string the events hold).
type stepSkel struct {
	atif.Step
	NullContent []int `json:"null_content,omitempty"`
}

var atifPrefix = []byte(`{"atif":`)

func markOf(ev *engine.Event) *atifMark {
	if !bytes.HasPrefix(ev.Extra, atifPrefix) {
		return nil
	}
	var m struct {
		ATIF atifMark `json:"atif"`
	}
	if json.Unmarshal(ev.Extra, &m) != nil {
		return nil
	}
	return &m.ATIF
}

func foreignATIF(events []engine.Event) bool {
	for i := range events {
		if m := markOf(&events[i]); m != nil && m.Trajectory != nil {
			return true
		}
	}
	return false
}

// exportForeign rebuilds the document a session was imported from.
func exportForeign(events []engine.Event) (*atif.Trajectory, error) {
	type thread struct {
		t      *atif.Trajectory
		parent int
		step   *stepSkel
		kCall  int
		kRes   int
	}
	threads := map[int]*thread{}
	var order []int
	finish := func(th *thread) {
		if th.step != nil {
			th.t.Steps = append(th.t.Steps, th.step.Step)
			th.step = nil
		}
	}
	for i := range events {
		ev := &events[i]
		m := markOf(ev)
		if m != nil && m.Invalid {
			continue
		}
		th := threads[ev.Thread]
		if m != nil && m.Trajectory != nil {
			if th != nil {
				return nil, fmt.Errorf("engine: atif: thread %d starts two trajectories (event %d)", ev.Thread, ev.Seq)
			}
			t := *m.Trajectory
			th = &thread{t: &t, parent: m.Parent}
			threads[ev.Thread] = th
			order = append(order, ev.Thread)
		}
		if th == nil {
			return nil, fmt.Errorf("engine: atif: event %d of thread %d precedes its trajectory", ev.Seq, ev.Thread)
		}
		if m != nil && m.Step != nil {
			finish(th)
			skel := *m.Step
			th.step, th.kCall, th.kRes = &skel, 0, 0
		}
		st := th.step
		if st == nil {
			return nil, fmt.Errorf("engine: atif: event %d of thread %d precedes its step", ev.Seq, ev.Thread)
		}
		result := func(id *string) error {
			if st.Observation == nil || th.kRes >= len(st.Observation.Results) {
				return fmt.Errorf("engine: atif: event %d: result %d has no place in its step", ev.Seq, th.kRes)
			}
			r := &st.Observation.Results[th.kRes]
			r.SourceCallID = id
			if r.Content == nil && !slices.Contains(st.NullContent, th.kRes) {
				c := atif.Str(ev.Text)
				r.Content = &c
			}
			th.kRes++
			return nil
		}
		switch {
		case ev.Kind == engine.KindThinking:
			text := ev.Text
			st.ReasoningContent = &text
		case ev.Kind == engine.KindSystem, ev.Kind == engine.KindMessage && (ev.Role == "user" || ev.Role == "assistant"):
			if !st.Message.IsParts() {
				st.Message = atif.Str(ev.Text)
			}
		case ev.Kind == engine.KindMessage && ev.Role == "tool":
			if err := result(nil); err != nil {
				return nil, err
			}
		case ev.Kind == engine.KindToolResult:
			var id string
			if ev.Tool != nil {
				id = ev.Tool.ID
			}
			if err := result(&id); err != nil {
				return nil, err
			}
		case ev.Kind == engine.KindToolCall:
			if th.kCall >= len(st.ToolCalls) {
				return nil, fmt.Errorf("engine: atif: event %d: tool call %d has no place in its step", ev.Seq, th.kCall)
			}
			tc := &st.ToolCalls[th.kCall]
			if ev.Tool != nil {
				tc.ToolCallID, tc.FunctionName, tc.Arguments = ev.Tool.ID, ev.Tool.Name, ev.Tool.Args
			}
			if tc.Arguments == nil {
				tc.Arguments = json.RawMessage(`{}`)
			}
			th.kCall++
		}
	}
	for _, n := range order {
		finish(threads[n])
	}
	slices.Sort(order)
	roots, rootN := 0, 0
	for _, n := range order {
		th := threads[n]
		if th.parent == 0 {
			roots, rootN = roots+1, n
		} else if threads[th.parent] == nil {
			return nil, fmt.Errorf("engine: atif: thread %d embedded in thread %d, which has no trajectory", n, th.parent)
		}
	}
	if roots != 1 {
		return nil, fmt.Errorf("engine: atif: %d root trajectories, want 1", roots)
	}
	// build assembles a trajectory and, in thread order, the trajectories
	// it embeds.
	var build func(n int) atif.Trajectory
	build = func(n int) atif.Trajectory {
		t := *threads[n].t
		var subs []atif.Trajectory
		if t.SubagentTrajectories != nil && len(t.SubagentTrajectories) == 0 {
			subs = []atif.Trajectory{}
		}
		for _, c := range order {
			if threads[c].parent == n {
				subs = append(subs, build(c))
			}
		}
		t.SubagentTrajectories = subs
		return t
	}
	t := build(rootN)
	return &t, nil
}

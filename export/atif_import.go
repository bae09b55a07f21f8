package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/bbengine/bbengine/codec/atif"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

func init() { engine.RegisterImporter("atif", importATIF) }

// importATIF derives a session from one ATIF document: one file whose one
// record is the whole document (Kind "doc").
//
// A document bbengine wrote (its root extra names the bbengine-atif
// format) gives back the events it was exported from (see ATIF). Any
// other document maps step by step:
//
//	system step        system event (message); each observation result
//	user step          user message (Meta "meta" when is_copied_context)
//	agent step         model_call (unless llm_call_count is 0), thinking
//	                   (reasoning_content), assistant message (when not
//	                   empty), tool calls, usage (from metrics)
//	observation        a tool result per result with a source_call_id, a
//	                   message with role "tool" per result without one
//	embedded subagent  a thread of its own, listed in Session.Agents
//
// with the fields events do not hold kept in Extra (see atifMark), so
// that the session exports back as the same document.
//
// A document that is not JSON is one parse error (Import.Errors) and
// gives no events. A document that breaks the schema or Harbor's rules
// still imports what decoded; each problem becomes an error event (Stage
// "import", Type "atif", Message "<json path>: <problem>") at the end of
// the timeline.
func importATIF(session string, files []engine.ImportFile) (*engine.Imported, error) {
	if len(files) != 1 || len(files[0].Records) != 1 || files[0].Records[0].Kind != exchange.ImportDoc {
		return nil, errors.New("engine: atif import wants one file with one document record")
	}
	rec := &files[0].Records[0]
	im := &engine.Imported{}
	im.Session.Import = &engine.ImportInfo{Source: "atif", Files: []string{files[0].Path}, Records: 1}
	prov := engine.Provenance{Side: "import", First: rec.WAL, Last: rec.WAL, File: rec.File}
	if prov.File == "" {
		prov.File = files[0].Path
	}
	t, err := atif.Decode(rec.Data)
	if t == nil {
		im.Session.Import.Errors = 1
		return im, nil
	}
	var problems atif.Errors
	if errors.As(err, &problems) {
		problems = slices.Clone(problems)
	}
	problems = append(problems, atif.Validate(t)...)
	own := ownSession(t)
	if own != nil {
		if err := rebuild(im, own, t, prov); err != nil {
			// Not what bbengine wrote after all (edited, or another
			// tool's extra): import it as any other document.
			problems = append(problems, &atif.Error{Msg: err.Error()})
			im.Events, im.Session = nil, engine.Session{Import: im.Session.Import}
			own = nil
		}
	}
	if own == nil {
		im.Session.Agent, im.Session.Version = t.Agent.Name, t.Agent.Version
		f := &foreign{im: im, prov: prov}
		f.trajectory(t, 1)
		slices.SortFunc(im.Session.Agents, func(a, b engine.Agent) int { return a.Thread - b.Thread })
		f.emitAll(t, 0)
	}
	var last int64
	if n := len(im.Events); n > 0 {
		last = im.Events[n-1].Time
	}
	for _, p := range problems {
		im.Events = append(im.Events, engine.Event{Kind: engine.KindError, Time: last, Thread: 1,
			Error: &engine.Error{Stage: "import", Type: "atif", Message: p.Error()},
			Extra: json.RawMessage(`{"atif":{"invalid":true}}`), Prov: prov})
	}
	summarize(&im.Session, im.Events)
	return im, nil
}

// ownSession returns the Session of a document bbengine wrote, or nil.
func ownSession(t *atif.Trajectory) *engine.Session {
	var ex struct {
		BB bbRoot `json:"bbengine"`
	}
	if t.Extra == nil || json.Unmarshal(t.Extra, &ex) != nil || ex.BB.Format != atifFormat || ex.BB.Session == nil {
		return nil
	}
	return ex.BB.Session
}

// rebuild puts back the events of a document bbengine wrote.
func rebuild(im *engine.Imported, own *engine.Session, t *atif.Trajectory, prov engine.Provenance) error {
	s := &im.Session
	s.Agent, s.Client, s.Source = own.Agent, own.Client, own.Source
	s.Title, s.CWD, s.Branch, s.Version = own.Title, own.CWD, own.Branch, own.Version
	s.Agents = own.Agents
	var walk func(t *atif.Trajectory, path string) error
	walk = func(t *atif.Trajectory, path string) error {
		for i := range t.Steps {
			evs, err := stepEvents(&t.Steps[i])
			if err != nil {
				return fmt.Errorf("%ssteps[%d].extra.bbengine: %w", path, i, err)
			}
			for _, ev := range evs {
				ev.Prov = engine.Provenance{Side: prov.Side, First: prov.First, Last: prov.Last, File: prov.File, RequestID: ev.Prov.RequestID}
				im.Events = append(im.Events, ev)
			}
		}
		for i := range t.SubagentTrajectories {
			if err := walk(&t.SubagentTrajectories[i], fmt.Sprintf("%ssubagent_trajectories[%d].", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(t, ""); err != nil {
		return err
	}
	slices.SortStableFunc(im.Events, func(a, b engine.Event) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	for i := range im.Events {
		im.Events[i].Seq = 0
	}
	return nil
}

// stepEvents puts back the events of one exported step: those its extra
// lists, with what the step holds natively.
func stepEvents(st *atif.Step) ([]engine.Event, error) {
	var ex struct {
		BB *bbStep `json:"bbengine"`
	}
	if st.Extra == nil || json.Unmarshal(st.Extra, &ex) != nil || ex.BB == nil {
		return nil, errors.New("the step has no bbengine events")
	}
	entries := ex.BB.Events
	count := func(f func(e *bbEvent) bool) int {
		n := 0
		for i := range entries {
			if f(&entries[i]) {
				n++
			}
		}
		return n
	}
	isAssistant := func(e *bbEvent) bool { return e.Kind == engine.KindMessage && e.Role == "assistant" }
	thinking := count(func(e *bbEvent) bool { return e.Kind == engine.KindThinking })
	assistant := count(isAssistant)
	usage := count(func(e *bbEvent) bool { return e.Kind == engine.KindUsage && e.Usage != nil })
	var results []atif.ObservationResult
	if st.Observation != nil {
		for _, r := range st.Observation.Results {
			var rx struct {
				BB bbResult `json:"bbengine"`
			}
			if r.Extra != nil && json.Unmarshal(r.Extra, &rx) == nil && rx.BB.RefOnly {
				continue
			}
			results = append(results, r)
		}
	}
	kCall, kRes := 0, 0
	out := make([]engine.Event, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		ev := e.Event
		switch {
		case ev.Kind == engine.KindThinking:
			if thinking == 1 && st.ReasoningContent != nil {
				ev.Text = *st.ReasoningContent
			}
		case isAssistant(e):
			if assistant == 1 {
				ev.Text = st.Message.PlainText()
			}
		case ev.Kind == engine.KindMessage, ev.Kind == engine.KindSystem:
			ev.Text = st.Message.PlainText()
		case ev.Kind == engine.KindToolCall:
			if kCall >= len(st.ToolCalls) {
				return nil, fmt.Errorf("event %d: tool call %d is missing", i, kCall)
			}
			tc := &st.ToolCalls[kCall]
			kCall++
			if ev.Tool != nil {
				tool := *ev.Tool
				tool.ID, tool.Name = tc.ToolCallID, tc.FunctionName
				if !e.NoArgs && len(tool.Args) == 0 {
					tool.Args = tc.Arguments
				}
				ev.Tool = &tool
			}
		case ev.Kind == engine.KindToolResult:
			if kRes >= len(results) {
				return nil, fmt.Errorf("event %d: result %d is missing", i, kRes)
			}
			r := &results[kRes]
			kRes++
			if r.SourceCallID != nil && ev.Tool != nil {
				tool := *ev.Tool
				tool.ID = *r.SourceCallID
				ev.Tool = &tool
			}
			if r.Content != nil {
				ev.Text = r.Content.PlainText()
			}
		case ev.Kind == engine.KindUsage && ev.Usage != nil:
			if usage == 1 && st.Metrics != nil {
				u := *ev.Usage
				u.Input, u.Output, u.CacheRead = deref(st.Metrics.PromptTokens), deref(st.Metrics.CompletionTokens), deref(st.Metrics.CachedTokens)
				ev.Usage = &u
			}
		}
		out = append(out, ev)
	}
	return out, nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// foreign maps a foreign document to events.
type foreign struct {
	im   *engine.Imported
	prov engine.Provenance
	// threads are the thread numbers of the embedded trajectories, in
	// document order (pre-order), assigned before emission so that the
	// export lists them as the document did.
	threads map[*atif.Trajectory]int
	next    int
	time    int64
}

// trajectory numbers t and its embedded trajectories.
func (f *foreign) trajectory(t *atif.Trajectory, thread int) {
	if f.threads == nil {
		f.threads = map[*atif.Trajectory]int{}
	}
	f.threads[t] = thread
	f.next = thread
	for i := range t.SubagentTrajectories {
		s := &t.SubagentTrajectories[i]
		f.trajectory(s, f.next+1)
		call := ""
		if s.TrajectoryID != nil {
			call = refCall(t, *s.TrajectoryID)
		}
		id := ""
		if s.TrajectoryID != nil {
			id = *s.TrajectoryID
		}
		f.im.Session.Agents = append(f.im.Session.Agents, engine.Agent{Thread: f.threads[s], ID: id, Type: s.Agent.Name, Call: call})
	}
}

// refCall is the source_call_id of the first result of t that refers to
// the embedded trajectory id.
func refCall(t *atif.Trajectory, id string) string {
	for _, st := range t.Steps {
		if st.Observation == nil {
			continue
		}
		for _, r := range st.Observation.Results {
			for _, ref := range r.SubagentTrajectoryRef {
				if ref.TrajectoryID != nil && *ref.TrajectoryID == id && r.SourceCallID != nil {
					return *r.SourceCallID
				}
			}
		}
	}
	return ""
}

// emitAll emits t's events, each embedded trajectory right after the step
// that first refers to it (the rest after t's last step).
func (f *foreign) emitAll(t *atif.Trajectory, parent int) {
	thread := f.threads[t]
	done := map[int]bool{}
	root := *t
	root.Steps = nil
	if len(t.SubagentTrajectories) > 0 {
		root.SubagentTrajectories = nil
	}
	first := true
	for i := range t.Steps {
		st := &t.Steps[i]
		mark := atifMark{}
		if first {
			mark.Trajectory, mark.Parent = &root, parent
			first = false
		}
		f.step(st, thread, mark)
		if st.Observation == nil {
			continue
		}
		for _, r := range st.Observation.Results {
			for _, ref := range r.SubagentTrajectoryRef {
				for k := range t.SubagentTrajectories {
					s := &t.SubagentTrajectories[k]
					if !done[k] && ref.TrajectoryID != nil && s.TrajectoryID != nil && *s.TrajectoryID == *ref.TrajectoryID {
						done[k] = true
						f.emitAll(s, thread)
					}
				}
			}
		}
	}
	if first {
		// A trajectory without steps (invalid) still keeps its fields.
		f.add(engine.Event{Kind: engine.KindRecord, Thread: thread, Record: &engine.Record{Type: "atif/empty_trajectory", Known: true, Raw: json.RawMessage(`{}`)}}, &atifMark{Trajectory: &root, Parent: parent})
	}
	for k := range t.SubagentTrajectories {
		if !done[k] {
			f.emitAll(&t.SubagentTrajectories[k], thread)
		}
	}
}

func (f *foreign) add(ev engine.Event, mark *atifMark) {
	if ev.Time == 0 {
		ev.Time = f.time
	}
	f.time = ev.Time
	ev.Prov = f.prov
	if mark != nil {
		b, err := json.Marshal(map[string]*atifMark{"atif": mark})
		if err == nil {
			ev.Extra = b
		}
	}
	f.im.Events = append(f.im.Events, ev)
}

func contentParts(c *atif.Content) []llm.Part {
	var out []llm.Part
	for _, p := range c.Parts {
		switch p.Type {
		case atif.PartText:
		case atif.PartImage:
			lp := llm.Part{Type: llm.PartImage}
			if p.Source != nil {
				lp.MediaType, lp.URL = p.Source.MediaType, p.Source.Path
			}
			out = append(out, lp)
		default:
			raw, _ := json.Marshal(p)
			out = append(out, llm.Part{Type: llm.PartOther, Raw: raw})
		}
	}
	return out
}

// step emits one step's events; the first carries mark with the step's
// skeleton.
func (f *foreign) step(st *atif.Step, thread int, mark atifMark) {
	var t int64
	if st.Timestamp != nil {
		if tm, err := atif.ParseTime(*st.Timestamp); err == nil {
			t = tm.UnixNano()
		}
	}
	skel := &stepSkel{Step: *st}
	skel.ReasoningContent = nil
	if !st.Message.IsParts() {
		skel.Message = atif.Content{}
	}
	if st.ToolCalls != nil {
		skel.ToolCalls = make([]atif.ToolCall, len(st.ToolCalls))
		for i, tc := range st.ToolCalls {
			skel.ToolCalls[i] = atif.ToolCall{Extra: tc.Extra}
		}
	}
	if st.Observation != nil {
		obs := &atif.Observation{Results: slices.Clone(st.Observation.Results)}
		for i := range obs.Results {
			r := &obs.Results[i]
			r.SourceCallID = nil
			switch {
			case r.Content == nil:
				skel.NullContent = append(skel.NullContent, i)
			case !r.Content.IsParts():
				r.Content = nil
			}
		}
		skel.Observation = obs
	}
	mark.Step = skel
	var evs []engine.Event
	ev := func(e engine.Event) {
		e.Time, e.Thread = t, thread
		evs = append(evs, e)
	}
	msg := func(role, meta string) {
		e := engine.Event{Kind: engine.KindMessage, Role: role, Meta: meta, Text: st.Message.PlainText(), Parts: contentParts(&st.Message)}
		if role == "system" {
			e.Kind, e.Role = engine.KindSystem, "system"
		}
		ev(e)
	}
	switch st.Source {
	case atif.SourceUser:
		meta := ""
		if st.IsCopiedContext != nil && *st.IsCopiedContext {
			meta = "meta"
		}
		msg("user", meta)
	case atif.SourceAgent:
		if st.LLMCallCount == nil || *st.LLMCallCount != 0 {
			model := ""
			if st.ModelName != nil {
				model = *st.ModelName
			} else {
				model = f.agentModel(thread)
			}
			ev(engine.Event{Kind: engine.KindModelCall, Call: &engine.Call{Model: model, Complete: true, Status: 200}})
		}
		if st.ReasoningContent != nil {
			ev(engine.Event{Kind: engine.KindThinking, Role: "assistant", Text: *st.ReasoningContent})
		}
		if st.Message.IsParts() || st.Message.Text != "" {
			msg("assistant", "")
		}
		for _, tc := range st.ToolCalls {
			ev(engine.Event{Kind: engine.KindToolCall, Role: "assistant", Tool: &engine.Tool{ID: tc.ToolCallID, Name: tc.FunctionName, Args: tc.Arguments}})
		}
		if m := st.Metrics; m != nil && (m.PromptTokens != nil || m.CompletionTokens != nil || m.CachedTokens != nil) {
			ev(engine.Event{Kind: engine.KindUsage, Usage: &engine.Usage{Input: deref(m.PromptTokens), Output: deref(m.CompletionTokens), CacheRead: deref(m.CachedTokens)}})
		}
	default:
		msg("system", "")
	}
	if st.Observation != nil {
		names := map[string]string{}
		for _, tc := range st.ToolCalls {
			names[tc.ToolCallID] = tc.FunctionName
		}
		for _, r := range st.Observation.Results {
			e := engine.Event{Kind: engine.KindMessage, Role: "tool"}
			if r.SourceCallID != nil {
				id := *r.SourceCallID
				e = engine.Event{Kind: engine.KindToolResult, Role: "tool", Tool: &engine.Tool{ID: id, Name: names[id]}}
			}
			if r.Content != nil {
				e.Text, e.Parts = r.Content.PlainText(), contentParts(r.Content)
			}
			ev(e)
		}
	}
	if len(evs) == 0 {
		// An agent step with no model call, message, call or result: an
		// empty assistant message carries it.
		ev(engine.Event{Kind: engine.KindMessage, Role: "assistant"})
	}
	for i, e := range evs {
		if i == 0 {
			f.add(e, &mark)
		} else {
			f.add(e, nil)
		}
	}
}

// agentModel is the model_name of the agent of a thread's trajectory.
func (f *foreign) agentModel(thread int) string {
	for t, n := range f.threads {
		if n == thread && t.Agent.ModelName != nil {
			return *t.Agent.ModelName
		}
	}
	return ""
}

// summarize sets the session fields that follow from its events.
func summarize(s *engine.Session, events []engine.Event) {
	threads := map[int]bool{}
	models := map[string]*engine.ModelUsage{}
	var order []string
	var model string
	s.First, s.Last, s.Requests, s.Errors, s.Usage, s.Models = 0, 0, 0, 0, engine.Usage{}, nil
	for i := range events {
		ev := &events[i]
		threads[ev.Thread] = true
		if ev.Time != 0 && (s.First == 0 || ev.Time < s.First) {
			s.First = ev.Time
		}
		if ev.Time > s.Last {
			s.Last = ev.Time
		}
		switch ev.Kind {
		case engine.KindModelCall:
			s.Requests++
			model = ""
			if ev.Call != nil {
				model = ev.Call.Model
			}
			if models[model] == nil {
				models[model] = &engine.ModelUsage{Model: model}
				order = append(order, model)
			}
			models[model].Requests++
		case engine.KindUsage:
			if ev.Usage != nil {
				s.Usage.Add(*ev.Usage)
				if m := models[model]; m != nil {
					m.Usage.Add(*ev.Usage)
				}
			}
		case engine.KindError:
			s.Errors++
		}
	}
	s.Threads = len(threads)
	for _, m := range order {
		if m != "" {
			s.Models = append(s.Models, *models[m])
		}
	}
}

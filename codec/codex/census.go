package codex

import (
	"strconv"

	"github.com/bbengine/bbengine/codec/census"
)

// The source census of a rollout. Count applies these rules to the raw
// lines; an importer that follows them emits events whose census (see
// engine.Census) equals Count's.
//
//   - User prompts are the event_msg/user_message events and, since
//     Codex 0.169 writes none, the item_completed events of a
//     UserMessage item (Prompt); an item_completed UserMessage beside a
//     user_message (the line before or after it) is that prompt again
//     and is kept. A user-role message item written just before a
//     prompt event (the line before it; for a user_message, the line
//     before an item_completed UserMessage just before it) is the same
//     prompt, not another message: the pair is one prompt ("mirrored").
//   - Meta user messages are the other user-, developer- and
//     system-role message items: context Codex injected (AGENTS.md,
//     <environment_context>, skills, permissions and collaboration-mode
//     instructions). Text cannot tell them apart in redacted rollouts;
//     position can.
//   - Assistant messages are the assistant message items. An
//     agent_message event, or an item_completed of an AgentMessage item
//     (0.169), mirrors the item that follows it (Mirror; one of each may
//     stand in front of the item); one no item follows is an assistant
//     message of its own. Likewise agent_reasoning events and
//     item_completed Reasoning events mirror the reasoning item after
//     them, and thinking blocks are the reasoning items plus the
//     agent_reasoning and item_completed Reasoning events that mirror
//     none.
//   - Tool calls are the distinct call_ids of function_call,
//     custom_tool_call and local_shell_call items, plus one per
//     web_search_call (the provider ran it; its id is the call_id of the
//     web_search_end event just before it, or "web_search#<line>");
//     tool results the distinct call_ids of the output items.
//   - Model responses are the runs of model output (assistant messages,
//     reasoning, calls, unmirrored agent_message/agent_reasoning and
//     item_completed AgentMessage/Reasoning events) that no input (a
//     user, developer or system message item, a tool output, a prompt
//     event, a compaction) and no token_count increase interrupts, plus
//     the token_count increases that find no response waiting for its
//     usage (a model call with no recorded output). In every golden
//     rollout that has token_count events, the runs and the increases
//     are the same number. A token_usage_record (0.169, written after a
//     response's output items) names its response (response_id) but
//     neither starts nor ends one, and adds no tokens.
//   - Tokens are the deltas of the cumulative total_token_usage of
//     token_count events: a token_count whose total equals the previous
//     one is a repeat and adds nothing; one with any field smaller is a
//     reset (a resume) and adds its last_token_usage. TokensIn is input
//     minus cached input (Anthropic semantics), CacheRead the cached
//     input, TokensOut the output (reasoning included), CacheCreation 0.
//   - Errors are the event_msg/error events.
//   - Kept are the records with no timeline meaning of their own, kept
//     verbatim: session_meta, turn_context, compacted, world_state,
//     token_usage_record, legacy header and state lines, repeated or
//     null token_counts, response items of a known raw-only type
//     (tool_search_call, ghost_snapshot, …), and known event_msg types
//     (thread_settings_applied, task_started, item_completed of a Plan,
//     …) except the ones above and the events folded into their call:
//     an exec_command_end, patch_apply_end or mcp_tool_call_end, or
//     (0.169) an item_completed of a call's item (CommandExecution,
//     FileChange, McpToolCall, …, whose id is the call_id) folds into
//     the output item of its call_id, the first of its type per call
//     (EndCallID, FoldedEnds); a web_search_end into the
//     web_search_call just after it. Unknown are lines of a type
//     (envelope, item or event) the package does not know.
//   - UUIDs: rollouts have none (0).

// Tally is the census of a rollout, with the figures the golden
// manifest lists.
type Tally struct {
	Lines, ParseErrors int64
	// Types counts lines by "<type>" or "<type>/<payload type>".
	Types map[string]int64

	UserMessages   int64 // event_msg/user_message
	CompletedUser  int64 // item_completed UserMessage events that are prompts
	UserItems      int64 // user-role message items
	DeveloperItems int64 // developer- and system-role message items
	MirroredUser   int64 // user items mirrored by a prompt event
	AssistantItems int64
	AgentMessages  int64 // agent_message and item_completed AgentMessage events that mirror no item
	ReasoningItems int64
	AgentReasoning int64 // agent_reasoning and item_completed Reasoning events that mirror no item
	Calls, Outputs int64 // distinct call_ids of calls and outputs
	WebSearches    int64
	CallIDs        int64 // distinct over calls (web searches included) and outputs
	Compacted      int64
	Responses      int64
	Errors         int64
	Kept, Unknown  int64

	TokenCounts    int64 // token_count events with info
	DupTokenCounts int64 // of which repeats
	Resets         int64 // of which resets
	Final          TokenUsage
	NaiveLast      int64 // Σ last_token_usage.total_tokens (the wrong rule)
	Usage          TokenUsage
}

// Counts returns the census counts of t.
func (t *Tally) Counts() census.Counts {
	return census.Counts{
		Records:     t.Lines,
		ParseErrors: t.ParseErrors,
		UserPrompts: t.UserMessages + t.CompletedUser,
		MetaUser:    t.UserItems + t.DeveloperItems - t.MirroredUser,
		Assistant:   t.AssistantItems + t.AgentMessages,
		Responses:   t.Responses,
		Thinking:    t.ReasoningItems + t.AgentReasoning,
		ToolCalls:   t.Calls + t.WebSearches,
		ToolResults: t.Outputs,
		Errors:      t.Errors,
		CallIDs:     t.CallIDs,
		TokensIn:    t.Usage.Input - t.Usage.Cached,
		TokensOut:   t.Usage.Output,
		CacheRead:   t.Usage.Cached,
		Kept:        t.Kept,
		Unknown:     t.Unknown,
	}
}

// Count returns the source census of a rollout's lines (each without
// its line ending).
func Count(lines [][]byte) census.Counts {
	t := Census(lines)
	return t.Counts()
}

// Census tallies a rollout's lines by the rules above.
func Census(raw [][]byte) *Tally {
	t := &Tally{Types: map[string]int64{}, Lines: int64(len(raw))}
	lines := make([]Line, 0, len(raw))
	nums := make([]int64, 0, len(raw))
	for i, b := range raw {
		l, err := ParseLine(b)
		if err != nil {
			t.ParseErrors++
			continue
		}
		lines = append(lines, l)
		nums = append(nums, int64(i+1))
	}
	ends := FoldedEnds(lines)
	calls, outputs, ids := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var tok Tokens
	open, waiting := false, false
	output := func() {
		if !open {
			t.Responses++
			open, waiting = true, true
		}
	}
	for i := range lines {
		l := &lines[i]
		key := l.Type
		switch {
		case l.Item != nil:
			key += "/" + l.Item.Type
		case l.Event != nil:
			key += "/" + l.Event.Type
		}
		t.Types[key]++
		switch {
		case l.Item != nil:
			it := l.Item
			switch {
			case it.IsOutput():
				output()
			case it.IsInput():
				open = false
			}
			switch it.Type {
			case "message":
				switch it.Role {
				case "assistant":
					t.AssistantItems++
				case "user":
					t.UserItems++
				default:
					t.DeveloperItems++
				}
			case "reasoning":
				t.ReasoningItems++
			case "function_call", "custom_tool_call", "local_shell_call":
				calls[it.CallID], ids[it.CallID] = true, true
			case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
				outputs[it.CallID], ids[it.CallID] = true, true
			case "web_search_call":
				t.WebSearches++
				ids[WebSearchID(lines, i, nums[i])] = true
			default:
				if KnownItem(it.Type) {
					t.Kept++
				} else {
					t.Unknown++
				}
			}
		case l.Event != nil:
			ev := l.Event
			switch ev.Type {
			case "user_message":
				t.UserMessages++
				open = false
				if MirrorsUser(lines, i) >= 0 {
					t.MirroredUser++
				}
			case "item_completed":
				switch ev.ItemType() {
				case "UserMessage":
					if !Prompt(lines, i) {
						t.Kept++
						break
					}
					t.CompletedUser++
					open = false
					if MirrorsUser(lines, i) >= 0 {
						t.MirroredUser++
					}
				case "AgentMessage":
					if Mirror(lines, i) < 0 {
						t.AgentMessages++
						output()
					}
				case "Reasoning":
					if Mirror(lines, i) < 0 {
						t.AgentReasoning++
						output()
					}
				default:
					if !ends[i] {
						t.Kept++
					}
				}
			case "agent_message":
				if Mirror(lines, i) < 0 {
					t.AgentMessages++
					output()
				}
			case "agent_reasoning":
				if Mirror(lines, i) < 0 {
					t.AgentReasoning++
					output()
				}
			case "web_search_end":
				if Mirror(lines, i) < 0 {
					t.Kept++
				}
			case "token_count":
				if ev.Info == nil {
					t.Kept++
					break
				}
				t.TokenCounts++
				t.NaiveLast += ev.Info.Last.Total
				t.Final = ev.Info.Total
				d, step := tok.Add(ev.Info)
				switch step {
				case StepRepeat:
					t.DupTokenCounts++
					t.Kept++
					continue
				case StepReset:
					t.Resets++
				}
				t.Usage.add(d)
				if !waiting {
					t.Responses++
				}
				open, waiting = false, false
			case "error":
				t.Errors++
			default:
				switch {
				case ends[i]:
				case KnownEvent(ev.Type):
					t.Kept++
				default:
					t.Unknown++
				}
			}
		case l.Type == TypeCompacted:
			t.Compacted++
			t.Kept++
			open = false
		case l.Meta != nil, l.Turn != nil, l.Usage != nil, l.Type == TypeLegacyState, l.Type == TypeWorldState:
			t.Kept++
		default:
			t.Unknown++
		}
	}
	t.Calls, t.Outputs, t.CallIDs = int64(len(calls)), int64(len(outputs)), int64(len(ids))
	return t
}

func (u *TokenUsage) add(v TokenUsage) {
	u.Input += v.Input
	u.Cached += v.Cached
	u.Output += v.Output
	u.Reasoning += v.Reasoning
	u.Total += v.Total
}

// Step is what a token_count did to the running total.
type Step int

// The steps.
const (
	StepDelta  Step = iota // the total grew: the usage is the difference
	StepRepeat             // the total is unchanged: no usage
	StepReset              // a field shrank: the usage is last_token_usage
)

// Tokens turns the cumulative token_count totals of one rollout into
// per-call usage. The zero value is ready to use.
type Tokens struct {
	prev TokenUsage
	seen bool
}

// Add takes the next token_count's info and returns the usage it adds.
func (k *Tokens) Add(info *TokenInfo) (TokenUsage, Step) {
	cur, prev := info.Total, k.prev
	if k.seen && cur == prev {
		return TokenUsage{}, StepRepeat
	}
	k.prev = cur
	if k.seen && (cur.Input < prev.Input || cur.Cached < prev.Cached || cur.Output < prev.Output ||
		cur.Reasoning < prev.Reasoning || cur.Total < prev.Total) {
		return info.Last, StepReset
	}
	k.seen = true
	return TokenUsage{
		Input:     cur.Input - prev.Input,
		Cached:    cur.Cached - prev.Cached,
		Output:    cur.Output - prev.Output,
		Reasoning: cur.Reasoning - prev.Reasoning,
		Total:     cur.Total - prev.Total,
	}, StepDelta
}

// Prompt reports whether the event lines[i] is a user prompt: a
// user_message, or an item_completed of a UserMessage item (Codex 0.169
// writes no user_message) with no user_message event beside it.
func Prompt(lines []Line, i int) bool {
	ev := lines[i].Event
	switch {
	case ev == nil:
		return false
	case ev.Type == "user_message":
		return true
	case ev.ItemType() != "UserMessage":
		return false
	}
	return !isEvent(lines, i-1, "user_message") && !isEvent(lines, i+1, "user_message")
}

func isEvent(lines []Line, i int, typ string) bool {
	return i >= 0 && i < len(lines) && lines[i].Event != nil && lines[i].Event.Type == typ
}

// MirrorsUser returns the index of the user-role message item the
// prompt event lines[i] mirrors, or -1: the item just before it, or for
// a user_message the item before an item_completed UserMessage just
// before it.
func MirrorsUser(lines []Line, i int) int {
	j := i - 1
	if j > 0 && lines[i].Event != nil && lines[i].Event.Type == "user_message" &&
		lines[j].Event != nil && lines[j].Event.ItemType() == "UserMessage" {
		j--
	}
	if j < 0 {
		return -1
	}
	if p := lines[j].Item; p != nil && p.Type == "message" && p.Role == "user" {
		return j
	}
	return -1
}

// PromptOf returns the index of the prompt event that mirrors the user
// message item lines[i] (Prompt, MirrorsUser), or -1.
func PromptOf(lines []Line, i int) int {
	for j := i + 1; j <= i+2 && j < len(lines); j++ {
		if Prompt(lines, j) && MirrorsUser(lines, j) == i {
			return j
		}
	}
	return -1
}

// mirrors names the kind of item an event mirrors: an assistant
// message, a reasoning item or a web search call; "" for an event that
// mirrors none.
func mirrors(ev *EventMsg) string {
	switch ev.Type {
	case "agent_message":
		return "message"
	case "agent_reasoning":
		return "reasoning"
	case "web_search_end":
		return "web_search_call"
	case "item_completed":
		switch ev.ItemType() {
		case "AgentMessage":
			return "message"
		case "Reasoning":
			return "reasoning"
		}
	}
	return ""
}

// Mirror returns the index of the item the event lines[i] mirrors, or
// -1: an agent_message or item_completed AgentMessage mirrors the
// assistant message item after it, an agent_reasoning or
// item_completed Reasoning the reasoning item after it, a
// web_search_end the web_search_call after it. Between the event and
// the item may stand the other events that mirror the same item: a run
// of agent_reasoning events (one per summary part), and an
// item_completed beside the older event of its kind. Two agent_message
// events (or two item_completed events) in a row are two messages.
func Mirror(lines []Line, i int) int {
	ev := lines[i].Event
	if ev == nil {
		return -1
	}
	kind := mirrors(ev)
	if kind == "" {
		return -1
	}
	j := i + 1
	for ; j < len(lines); j++ {
		e := lines[j].Event
		if e == nil || mirrors(e) != kind || e.Type == ev.Type && ev.Type != "agent_reasoning" {
			break
		}
	}
	if j >= len(lines) || lines[j].Item == nil {
		return -1
	}
	it := lines[j].Item
	if it.Type != kind || kind == "message" && it.Role != "assistant" {
		return -1
	}
	return j
}

// WebSearchID returns the id of the web_search_call item lines[i] (at
// line number num): the call_id of the web_search_end event just before
// it, else "web_search#<num>".
func WebSearchID(lines []Line, i int, num int64) string {
	if i > 0 {
		if ev := lines[i-1].Event; ev != nil && ev.Type == "web_search_end" && ev.CallID != "" {
			return ev.CallID
		}
	}
	return "web_search#" + strconv.FormatInt(num, 10)
}

// EndEvent reports the event_msg types that say how a call ended, by
// call_id.
func EndEvent(t string) bool {
	switch t {
	case "exec_command_end", "patch_apply_end", "mcp_tool_call_end":
		return true
	}
	return false
}

// FoldedEnds marks the events that say how a call ended (EndCallID)
// that fold into the output item of their call: the first of each event
// type per call_id that has an output item anywhere in the rollout.
func FoldedEnds(lines []Line) []bool {
	outputs := map[string]bool{}
	for i := range lines {
		if it := lines[i].Item; it != nil && it.IsCallOutput() {
			outputs[it.CallID] = true
		}
	}
	folded := make([]bool, len(lines))
	seen := map[[2]string]bool{}
	for i := range lines {
		ev := lines[i].Event
		if ev == nil {
			continue
		}
		id := ev.EndCallID()
		if id == "" || !outputs[id] {
			continue
		}
		k := [2]string{ev.Type, id}
		if !seen[k] {
			seen[k] = true
			folded[i] = true
		}
	}
	return folded
}

package codex

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/census"
)

// Lines of the shapes Codex 0.169 writes (see
// agents/codex/testdata/codex-0.169.0-tool.jsonl), for the census rules
// the one real rollout does not reach.
const (
	v169UserItem    = `{"timestamp":"2026-11-27T17:13:55.373Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`
	v169UserDone    = `{"timestamp":"2026-11-27T17:13:55.374Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u1","content":[{"type":"text","text":"hi","text_elements":[]}]}}}`
	v169UserMessage = `{"timestamp":"2026-11-27T17:13:55.374Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}`
	v169AgentDone   = `{"timestamp":"2026-11-27T17:13:55.464Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"msg_2","content":[{"type":"Text","text":"done"}]}}}`
	v169AgentMsg    = `{"timestamp":"2026-11-27T17:13:55.464Z","type":"event_msg","payload":{"type":"agent_message","message":"done"}}`
	v169Assistant   = `{"timestamp":"2026-11-27T17:13:55.466Z","type":"response_item","payload":{"type":"message","id":"msg_2","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`
	v169ReasonDone  = `{"timestamp":"2026-11-27T17:13:55.397Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"Reasoning","id":"rs_1","summary_text":["think"],"raw_content":[]}}}`
	v169Reasoning   = `{"timestamp":"2026-11-27T17:13:55.398Z","type":"response_item","payload":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"content":null}}`
	v169Call        = `{"timestamp":"2026-11-27T17:13:55.398Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"call_1"}}`
	v169ExecDone    = `{"timestamp":"2026-11-27T17:13:55.443Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_1","command":["echo"],"aggregated_output":"hello\n","exit_code":0}}}`
	v169McpDone     = `{"timestamp":"2026-11-27T17:13:55.443Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"McpToolCall","id":"call_9","server":"s","tool":"t","arguments":{},"status":"completed"}}}`
	v169PlanDone    = `{"timestamp":"2026-11-27T17:13:55.443Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"Plan","id":"p1","text":"1. do"}}}`
	v169Output      = `{"timestamp":"2026-11-27T17:13:55.446Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"hello"}}`
	v169UsageA      = `{"timestamp":"2026-11-27T17:13:55.399Z","type":"token_usage_record","payload":{"thread_id":"t","turn_id":"u","response_id":"resp_A","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":10,"reasoning_output_tokens":0,"total_tokens":110}}}`
	v169UsageB      = `{"timestamp":"2026-11-27T17:13:55.467Z","type":"token_usage_record","payload":{"thread_id":"t","turn_id":"u","response_id":"resp_B","usage":{"input_tokens":120,"cached_input_tokens":100,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":125}}}`
	v169CountA      = `{"timestamp":"2026-11-27T17:13:55.446Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":10,"reasoning_output_tokens":0,"total_tokens":110},"last_token_usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":10,"reasoning_output_tokens":0,"total_tokens":110}}}}`
	v169CountB      = `{"timestamp":"2026-11-27T17:13:55.467Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":220,"cached_input_tokens":100,"cache_write_input_tokens":0,"output_tokens":15,"reasoning_output_tokens":0,"total_tokens":235},"last_token_usage":{"input_tokens":120,"cached_input_tokens":100,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":125}}}}`
	v169WorldState  = `{"timestamp":"2026-11-27T17:13:55.366Z","ordinal":4,"type":"world_state","payload":{"full":true,"state":{}}}`
	v169Settings    = `{"timestamp":"2026-11-27T17:13:55.367Z","ordinal":6,"type":"event_msg","payload":{"type":"thread_settings_applied","thread_id":"t","thread_settings":{"model":"gpt-5.5"}}}`
)

// TestCount0169 pins the census of 0.169's line types, alone and beside
// the older events they stand for.
func TestCount0169(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  census.Counts // Records is filled in
	}{
		{"prompt mirrors the user item", []string{v169UserItem, v169UserDone},
			census.Counts{UserPrompts: 1}},
		{"prompt alone", []string{v169UserDone},
			census.Counts{UserPrompts: 1}},
		{"item_completed after a user_message is kept", []string{v169UserItem, v169UserMessage, v169UserDone},
			census.Counts{UserPrompts: 1, Kept: 1}},
		{"item_completed before a user_message is kept", []string{v169UserItem, v169UserDone, v169UserMessage},
			census.Counts{UserPrompts: 1, Kept: 1}},
		{"new records are kept", []string{v169WorldState, v169Settings, v169UsageA, v169PlanDone},
			census.Counts{Kept: 4}},
		{"mirrored reasoning and answer", []string{v169ReasonDone, v169Reasoning, v169AgentDone, v169Assistant, v169UsageA, v169CountA},
			census.Counts{Assistant: 1, Thinking: 1, Responses: 1, TokensIn: 100, TokensOut: 10, Kept: 1}},
		{"agent_message and item_completed mirror one item", []string{v169AgentMsg, v169AgentDone, v169Assistant},
			census.Counts{Assistant: 1, Responses: 1}},
		{"item_completed and agent_message mirror one item", []string{v169AgentDone, v169AgentMsg, v169Assistant},
			census.Counts{Assistant: 1, Responses: 1}},
		{"unmirrored answer and reasoning", []string{v169ReasonDone, v169AgentDone, v169AgentDone, v169Assistant},
			census.Counts{Assistant: 2, Thinking: 1, Responses: 1}},
		{"a call's item_completed folds into its output", []string{v169Call, v169UsageA, v169ExecDone, v169Output, v169CountA},
			census.Counts{ToolCalls: 1, ToolResults: 1, CallIDs: 1, Responses: 1, TokensIn: 100, TokensOut: 10, Kept: 1}},
		{"a call's item_completed without output is kept", []string{v169Call, v169McpDone, v169ExecDone},
			census.Counts{ToolCalls: 1, CallIDs: 1, Responses: 1, Kept: 2}},
		{"a usage record mints no response", []string{v169Call, v169UsageA, v169Output, v169CountA, v169UsageB, v169CountB},
			census.Counts{ToolCalls: 1, ToolResults: 1, CallIDs: 1, Responses: 2, TokensIn: 120, TokensOut: 15, CacheRead: 100, Kept: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines [][]byte
			for _, s := range tt.lines {
				lines = append(lines, []byte(s))
			}
			tt.want.Records = int64(len(lines))
			if got := Count(lines); got != tt.want {
				t.Errorf("Count:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestParseLine0169 checks the typed fields of 0.169's line types.
func TestParseLine0169(t *testing.T) {
	l, err := ParseLine([]byte(v169UsageA))
	if err != nil || l.Usage == nil || l.Usage.ResponseID != "resp_A" || l.Usage.TurnID != "u" || l.Usage.Usage.Input != 100 || l.Usage.Usage.Total != 110 {
		t.Errorf("token_usage_record = %+v, %v", l.Usage, err)
	}
	l, err = ParseLine([]byte(v169UserDone))
	if err != nil || l.Event.ItemType() != "UserMessage" || Text(l.Event.Item.Content) != "hi" || l.Event.EndCallID() != "" {
		t.Errorf("item_completed UserMessage = %+v, %v", l.Event, err)
	}
	l, err = ParseLine([]byte(v169ReasonDone))
	if err != nil || l.Event.ItemType() != "Reasoning" || strings.Join(l.Event.Item.SummaryText, "") != "think" {
		t.Errorf("item_completed Reasoning = %+v, %v", l.Event, err)
	}
	l, err = ParseLine([]byte(v169ExecDone))
	if err != nil || l.Event.EndCallID() != "call_1" {
		t.Errorf("item_completed CommandExecution = %+v, %v", l.Event, err)
	}
	l, err = ParseLine([]byte(v169WorldState))
	if err != nil || l.Type != TypeWorldState || !KnownType(l.Type) || l.Item != nil || l.Event != nil {
		t.Errorf("world_state = %+v, %v", l, err)
	}
	// Another event's "item" is not read.
	l, err = ParseLine([]byte(`{"type":"event_msg","payload":{"type":"raw_response_item","item":"x"}}`))
	if err != nil || l.Event.Item != nil {
		t.Errorf("raw_response_item = %+v, %v", l.Event, err)
	}
	// An item of another shape keeps its type and id.
	l, err = ParseLine([]byte(`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u2","content":"x"}}}`))
	if err != nil || !reflect.DeepEqual(*l.Event.Item, TurnItem{Type: "UserMessage", ID: "u2"}) {
		t.Errorf("item_completed of another shape = %+v, %v", l.Event.Item, err)
	}
	if _, err := ParseLine([]byte(`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":1}}}`)); err == nil {
		t.Error("an item_completed whose item type is a number parses")
	}
}

package claude

import (
	"errors"

	"github.com/bbengine/bbengine/codec/census"
)

// Count computes the source census of the lines of one log file, by the
// rules of the data-loss check:
//
//   - Records: lines; ParseErrors: lines that are not JSON objects.
//   - UserPrompts and MetaUser: user lines by UserKind ("prompt", "meta").
//   - Responses: distinct ResponseKey (message.id + requestId) within
//     each thread (Threads: the importer's) of assistant lines that are
//     not Synthetic (a line without a message id is a response of its
//     own); Errors: Synthetic lines.
//   - Assistant: blocks of those lines other than thinking and tool use
//     (text, and blocks kept as parts); Thinking: thinking and
//     redacted_thinking blocks.
//   - ToolCalls: distinct tool_use and server_tool_use ids; ToolResults:
//     distinct tool_use_id of tool_result blocks of user lines; CallIDs:
//     distinct ids over both.
//   - Tokens: per response, the usage of its last line that has one
//     (last-wins: output_tokens grows over a response's lines), summed;
//     TokensIn is input_tokens (it excludes the cache).
//   - UUIDs: distinct uuid.
//   - Subagents: distinct agentId, plus the distinct roots (isSidechain,
//     no parentUuid or one not seen before in the file; by uuid) of
//     inline sidechains without an agentId.
//   - Kept: lines of a known type with no timeline meaning of their own:
//     every known type but user and assistant, except
//     system/compact_boundary (a compaction), and user lines without
//     content; Unknown: lines of an unknown type, and JSON objects whose
//     fields do not have the kinds this package decodes.
func Count(lines [][]byte) census.Counts {
	var c census.Counts
	type resp struct{ usage *Usage }
	resps := map[string]*resp{}
	var order []*resp
	calls, results, uuids, agents, seen := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	roots := map[string]bool{}
	var threads Threads
	for i, l := range lines {
		c.Records++
		r, err := ParseLine(l)
		if err != nil {
			if errors.Is(err, ErrShape) {
				c.Unknown++
				continue
			}
			c.ParseErrors++
			continue
		}
		if r.UUID != "" {
			uuids[r.UUID] = true
		}
		thread, _, _ := threads.Line("", i, &r)
		switch {
		case r.AgentID != "":
			agents[r.AgentID] = true
		case r.IsSidechain && (r.ParentUUID == "" || !seen[r.ParentUUID]) && (r.Type == "user" || r.Type == "assistant"):
			// A root written twice (the same uuid) is one subagent.
			if r.UUID == "" || !roots[r.UUID] {
				c.Subagents++
			}
			if r.UUID != "" {
				roots[r.UUID] = true
			}
		}
		if r.UUID != "" {
			seen[r.UUID] = true
		}
		switch {
		case !Types[r.Type]:
			c.Unknown++
		case r.Type == "user":
			switch r.UserKind() {
			case "prompt":
				c.UserPrompts++
			case "meta":
				c.MetaUser++
			case "":
				c.Kept++
			}
			if r.Message == nil {
				continue
			}
			for i := range r.Message.Content.Blocks {
				if b := &r.Message.Content.Blocks[i]; b.Type == "tool_result" {
					results[b.ToolUseID] = true
				}
			}
		case r.Type == "assistant":
			if r.Synthetic() {
				c.Errors++
				continue
			}
			key := ThreadResponseKey(thread, &r, i)
			p := resps[key]
			if p == nil {
				p = &resp{}
				order = append(order, p)
				resps[key] = p
			}
			if r.Message == nil {
				continue
			}
			if r.Message.Usage != nil {
				p.usage = r.Message.Usage
			}
			for i := range r.Message.Content.Blocks {
				switch b := &r.Message.Content.Blocks[i]; b.Type {
				case "thinking", "redacted_thinking":
					c.Thinking++
				case "tool_use", "server_tool_use":
					calls[b.ID] = true
				default:
					c.Assistant++
				}
			}
			if !r.Message.Content.List {
				c.Assistant++
			}
		case r.Type == "system" && r.Subtype == "compact_boundary":
		default:
			c.Kept++
		}
	}
	for _, p := range order {
		if u := p.usage; u != nil {
			c.TokensIn += u.InputTokens
			c.TokensOut += u.OutputTokens
			c.CacheRead += u.CacheReadInputTokens
			c.CacheCreation += u.CacheCreationInputTokens
		}
	}
	c.Responses = int64(len(order))
	c.ToolCalls, c.ToolResults, c.UUIDs = int64(len(calls)), int64(len(results)), int64(len(uuids))
	for id := range results {
		calls[id] = true
	}
	c.CallIDs = int64(len(calls))
	c.Subagents += int64(len(agents))
	return c
}

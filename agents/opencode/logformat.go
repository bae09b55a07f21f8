package opencode

import (
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/engine"
)

// The log format of source "opencode": a database is read row by row
// (readRows), a file of the JSON tree is a document (isDocument) of the
// session treeSession names, and the data-loss check counts a session's
// rows by countFiles.
func init() {
	engine.RegisterLogFormat(Source, engine.LogFormat{Rows: readRows, Session: treeSession, Census: countFiles,
		Document: isDocument, CheckDoc: checkDoc, Clean: cleanDoc})
}

// countFiles is the source census of one session: its records resolved
// (the last version of each row) and counted by count.
func countFiles(files []engine.ImportFile) census.Counts {
	_, datas, decode := sessionRecords(files)
	return count(resolve(datas, decode))
}

// count counts what a session's rows hold (design section 4.3):
//
//   - Records are the distinct rows (session, message, part); ParseErrors
//     the records, messages and parts that do not decode.
//   - UserPrompts are the user messages with a text part that is neither
//     synthetic nor ignored, and no compaction part; MetaUser the user
//     messages with a compaction part, plus those with a synthetic or
//     ignored text and no compaction part.
//   - Responses are the assistant messages; Assistant their non-empty
//     text parts; Thinking the non-empty reasoning parts.
//   - ToolCalls are the distinct callIDs of tool parts; ToolResults those
//     whose state is completed or error; CallIDs their union.
//   - Errors are the assistant messages with an error other than
//     MessageAbortedError, plus the retry parts.
//   - Tokens are the sum over step-finish parts, and over the tokens of an
//     assistant message with no step-finish: TokensIn input, CacheRead
//     cache.read, CacheCreation cache.write, TokensOut output+reasoning.
//   - UUIDs are the distinct ids of the rows events come from: the
//     messages that give an event (every assistant message; a user
//     message with text or a compaction part) and the parts that do
//     (every part but empty text and reasoning, compaction's, and file
//     parts a user message event holds).
//   - Subagents are the children the session row names.
//   - Kept are the step-start, patch, snapshot, agent, subtask and retry
//     parts, and the file parts of a user message with no text; Unknown
//     the parts of another type and the messages of another role.
//
// A session_message row counts as countV2 says.
func count(st *sessionState) census.Counts {
	var c census.Counts
	c.Records, c.ParseErrors = st.ids, st.bad
	msgs, parts := st.ordered()
	calls, results, uuids := map[string]bool{}, map[string]bool{}, map[string]bool{}
	if st.session != nil {
		c.Subagents = int64(len(st.session.Children))
	}
	for _, m := range msgs {
		if m.Table == "session_message" {
			countV2(&c, m, calls, results, uuids)
			continue
		}
		var d message
		if ok, odd := decodeLenient(m.Data, &d); !ok || odd {
			c.ParseErrors++
			if !ok {
				continue
			}
		}
		var ps []part
		var ids []string
		for _, p := range parts[m.ID] {
			var pd part
			if ok, odd := decodeLenient(p.Data, &pd); !ok || odd {
				c.ParseErrors++
				if !ok {
					continue
				}
			}
			ps = append(ps, pd)
			ids = append(ids, p.ID)
		}
		switch d.Role {
		case "user":
			prompt, meta, compaction := userText(ps)
			text := len(prompt) > 0 || len(meta) > 0
			switch {
			case compaction:
				c.MetaUser++
			default:
				if len(prompt) > 0 {
					c.UserPrompts++
				}
				if len(meta) > 0 {
					c.MetaUser++
				}
			}
			if text || compaction {
				uuids[m.ID] = true
			}
			for i, p := range ps {
				switch {
				case p.Type == "text":
				case p.Type == "compaction":
					uuids[ids[i]] = true
				case p.Type == "file":
					if !text && !compaction {
						c.Kept++
						uuids[ids[i]] = true
					}
				case keptParts[p.Type]:
					c.Kept++
					uuids[ids[i]] = true
				default:
					c.Unknown++
					uuids[ids[i]] = true
				}
			}
		case "assistant":
			c.Responses++
			uuids[m.ID] = true
			finished := false
			for i, p := range ps {
				switch p.Type {
				case "text":
					if p.Text != "" {
						c.Assistant++
						uuids[ids[i]] = true
					}
					continue
				case "reasoning":
					if p.Text != "" {
						c.Thinking++
						uuids[ids[i]] = true
					}
					continue
				case "tool":
					calls[p.CallID] = true
					if p.State != nil && (p.State.Status == "completed" || p.State.Status == "error") {
						results[p.CallID] = true
					}
				case "step-finish":
					finished = true
					if p.Tokens != nil {
						addTokens(&c, p.Tokens)
					}
				case "retry":
					c.Errors++
					c.Kept++
				default:
					if keptParts[p.Type] {
						c.Kept++
					} else {
						c.Unknown++
					}
				}
				uuids[ids[i]] = true
			}
			if !finished && d.Tokens != nil {
				addTokens(&c, d.Tokens)
			}
			if d.Error != nil && d.Error.Name != "MessageAbortedError" {
				c.Errors++
			}
		default:
			c.Unknown++
			uuids[m.ID] = true
		}
	}
	delete(uuids, "") // an event with no UUID has none
	c.ToolCalls, c.ToolResults, c.UUIDs = int64(len(calls)), int64(len(results)), int64(len(uuids))
	for id := range results {
		calls[id] = true
	}
	c.CallIDs = int64(len(calls))
	return c
}

func addTokens(c *census.Counts, t *tokens) {
	c.TokensIn += t.Input
	c.CacheRead += t.Cache.Read
	c.CacheCreation += t.Cache.Write
	c.TokensOut += t.Output + t.Reasoning
}

// countV2 counts a session_message row: a user row with text is a user
// prompt; a system or synthetic row with text, and a compaction row, a
// meta user message; a shell row a call (by its callID) and, completed,
// a result; an assistant row is a response, its non-empty text blocks
// assistant messages, its non-empty reasoning blocks thinking, its tool
// blocks calls (by id) and, completed or failed, results, its tokens
// tokens, and blocks of another type unknown; a row of another type is
// unknown. Its UUID is the row's id, when it gives an event.
func countV2(c *census.Counts, m *row, calls, results, uuids map[string]bool) {
	var d v2Data
	if ok, odd := decodeLenient(m.Data, &d); !ok || odd {
		c.ParseErrors++
		if !ok {
			return
		}
	}
	switch m.Type {
	case "user":
		if d.Text != "" {
			c.UserPrompts++
			uuids[m.ID] = true
		}
	case "system", "synthetic":
		if d.Text != "" {
			c.MetaUser++
			uuids[m.ID] = true
		}
	case "shell":
		calls[d.CallID] = true
		if d.Time.Completed != nil {
			results[d.CallID] = true
		}
		uuids[m.ID] = true
	case "compaction":
		c.MetaUser++
		uuids[m.ID] = true
	case "assistant":
		c.Responses++
		uuids[m.ID] = true
		for _, b := range d.Content {
			switch b.Type {
			case "text":
				if b.Text != "" {
					c.Assistant++
				}
			case "reasoning":
				if b.Text != "" {
					c.Thinking++
				}
			case "tool":
				calls[b.ID] = true
				if b.State != nil && (b.State.Status == "completed" || b.State.Status == "error") {
					results[b.ID] = true
				}
			default:
				c.Unknown++
			}
		}
		if d.Tokens != nil {
			addTokens(c, d.Tokens)
		}
	default:
		c.Unknown++
		uuids[m.ID] = true
	}
}

package gemini

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// The log format of source "gemini": a line is a JSON object
// (CheckLine), the session of a file is named as fileSession says, and
// the data-loss check counts each file by count.
func init() {
	engine.RegisterLogFormat(Source, engine.LogFormat{CheckLine: CheckLine, Session: fileSession, Census: countFiles,
		Document: isDocument, CheckDoc: CheckDoc})
}

// fileSession returns the session id of a log: "logs-<project>" for a
// project's logs.json, the sessionId of its first record when that is
// the metadata (or of the document, for a .json), else the name of a
// subagent's log (<id>.jsonl), else "" (the file's name).
func fileSession(path string, first []byte) string {
	if filepath.Base(path) == "logs.json" {
		return "logs-" + filepath.Base(filepath.Dir(path))
	}
	var v struct {
		SessionID string `json:"sessionId"`
	}
	if first != nil && json.Unmarshal(first, &v) == nil && v.SessionID != "" {
		return v.SessionID
	}
	if filepath.Base(filepath.Dir(filepath.Dir(path))) == "chats" {
		return strings.TrimSuffix(filepath.Base(path), ".jsonl")
	}
	return ""
}

// countFiles sums count over the records of each file, a document's
// records being the lines it stands for (expand; one that does not
// decode is a parse error), less the session-X.json files whose X.jsonl
// is there (sessionFiles).
func countFiles(files []engine.ImportFile) census.Counts {
	var total census.Counts
	for _, f := range sessionFiles(files) {
		lines := make([][]byte, 0, len(f.Records))
		var bad int64
		for _, r := range f.Records {
			if r.Kind != exchange.ImportDoc {
				lines = append(lines, r.Data)
				continue
			}
			more, err := expand(r.Data)
			if err != nil {
				bad++
			}
			lines = append(lines, more...)
		}
		c := count(lines)
		c.Records, c.ParseErrors = int64(len(f.Records)), c.ParseErrors+bad
		total.Add(c)
	}
	return total
}

// count is the source census of one session log. It applies the lines
// as the CLI's reader does (resolve) and counts every message that
// entered the conversation, in its last version, whether it still
// stands or a rewind or a checkpoint dropped it later (it happened: a
// dropped response was billed):
//
//   - Records are the lines (a document is one; see countFiles);
//     ParseErrors the lines that are no JSON object and those with a
//     member of another type than this version reads (read without it,
//     and counted).
//   - Kept are the lines that are no message (metadata, $set,
//     $rewindTo) and the info and warning messages; Unknown the lines
//     of no known kind and the messages of an unknown type.
//   - User prompts are the user messages that have text or no
//     functionResponse part, less the session contexts and the ones a
//     checkpoint brought in (a compression's summary): those are
//     MetaUser.
//   - Responses are the gemini messages no checkpoint brought in;
//     Assistant the gemini messages with text; Thinking their thoughts,
//     else the thought parts of their content.
//   - ToolCalls are the distinct ids of the gemini messages' toolCalls
//     (less the CLI's "<tool name>__" prefix; a call without an id is
//     one of its own); ToolResults the distinct ids of the calls that
//     carry a result and of the user messages' functionResponse parts.
//   - Errors are the error messages.
//   - Tokens are the sum of the gemini messages' tokens: TokensIn is
//     input plus tool less cached, CacheRead cached, TokensOut output
//     plus thoughts.
//   - UUIDs: message ids are not event UUIDs (0); Subagents 0 (a
//     subagent's log is a session of its own).
func count(raw [][]byte) census.Counts {
	var c census.Counts
	var lines []line
	for _, b := range raw {
		c.Records++
		l, odd, err := censusLine(b)
		if err != nil {
			c.ParseErrors++
			continue
		}
		if odd {
			c.ParseErrors++ // read but for those members, and kept
		}
		lines = append(lines, l)
		switch l.kind {
		case lineMeta, lineSet, lineRewind:
			c.Kept++
		case lineUnknown:
			c.Unknown++
		}
	}
	conv := resolve(lines)
	calls, results := map[string]bool{}, map[string]bool{}
	for _, e := range conv.entries {
		m := e.msg
		ps := parts(m.Content)
		switch m.Type {
		case "user":
			responses := 0
			for _, p := range ps {
				if p.FunctionResponse != nil {
					responses++
					results[wireID(p.FunctionResponse.Name, p.FunctionResponse.ID)] = true
				}
			}
			t := text(ps)
			switch {
			case responses > 0 && t == "":
			case sessionContext(t) || e.checkpointed:
				c.MetaUser++
			default:
				c.UserPrompts++
			}
		case "gemini":
			if !e.checkpointed {
				c.Responses++
			}
			c.Thinking += int64(thoughts(m, ps))
			if text(ps) != "" {
				c.Assistant++
			}
			for j, tc := range m.ToolCalls {
				id := wireID(tc.Name, tc.ID)
				if id == "" {
					id = syntheticID(m.ID, j)
				}
				calls[id] = true
				if hasResult(tc.Result) {
					results[id] = true
				}
			}
			if tk := m.Tokens; tk != nil {
				c.TokensIn += tk.Input + tk.Tool - tk.Cached
				c.CacheRead += tk.Cached
				c.TokensOut += tk.Output + tk.Thoughts
			}
		case "error":
			c.Errors++
		case "info", "warning":
			c.Kept++
		default:
			c.Unknown++
		}
	}
	c.ToolCalls, c.ToolResults = int64(len(calls)), int64(len(results))
	for id := range results {
		calls[id] = true
	}
	c.CallIDs = int64(len(calls))
	return c
}

package gemini

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/codec/agentlog"
)

// A session log of Gemini CLI (0.43 and later: chatRecordingService's
// append-only JSONL, ~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl,
// a subagent's in chats/<parent session id>/<id>.jsonl) holds one JSON
// object a line, of these kinds, told apart in the order the CLI's own
// reader (loadConversationRecord) tries them:
//
//	{"$rewindTo": ID}             drops message ID and every one after it
//	                              (all of them when ID is not there)
//	{"id": ID, "type": …, …}      a message; a later line with the same id
//	                              replaces it where it stands
//	{"$set": {…}}                 patches the metadata; "$set.messages"
//	                              replaces the whole list (a checkpoint)
//	{"sessionId", "projectHash",  the metadata (the first line; a resume
//	 "startTime", "kind", …}      of a .json session writes it again)
//
// Anything else is a line of an unknown kind. The messages left at the
// end, in order, are the conversation.

// Older versions (before 0.43) wrote a session as one JSON document,
// chats/session-<time>-<id8>.json: the metadata with the messages in
// "messages". Each project directory also holds logs.json, an array of
// the prompts typed in it ({sessionId, messageId, type, message,
// timestamp}), which 0.61 still writes. expand turns both into the lines
// the JSONL log would hold: a session document into its metadata line
// and a line per message; logs.json into a message line per entry (id
// "<sessionId>#<messageId>", content its message).

// Kinds of line.
const (
	lineRewind  = "$rewindTo"
	lineMessage = "message"
	lineSet     = "$set"
	lineMeta    = "metadata"
	lineUnknown = "unknown"
)

// ErrNotRecord reports JSON that is no object: every line of a session
// log is one.
var ErrNotRecord = errors.New("not a Gemini CLI session record: not a JSON object")

// CheckLine reports whether b, one line without its line ending, is a
// record: a JSON object. A line that is not JSON fails with an
// *agentlog.SyntaxError naming the column. An object of a kind this
// package does not know passes (it is kept as an unknown record).
func CheckLine(b []byte) error {
	_, err := agentlog.Fields(b)
	return err
}

// message is a message record, as the CLI writes it (MessageRecord).
type message struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Model     string          `json:"model"`
	Thoughts  []struct {
		Subject     string `json:"subject"`
		Description string `json:"description"`
		Timestamp   string `json:"timestamp"`
	} `json:"thoughts"`
	Tokens    *tokens    `json:"tokens"`
	ToolCalls []toolCall `json:"toolCalls"`
}

// tokens is a response's usage, copied by the CLI from usageMetadata:
// input promptTokenCount (cached included), output candidatesTokenCount,
// cached cachedContentTokenCount, thoughts thoughtsTokenCount, tool
// toolUsePromptTokenCount.
type tokens struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Cached   int64 `json:"cached"`
	Thoughts int64 `json:"thoughts"`
	Tool     int64 `json:"tool"`
	Total    int64 `json:"total"`
}

type toolCall struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args"`
	Result        json.RawMessage `json:"result"`
	Status        string          `json:"status"`
	Timestamp     string          `json:"timestamp"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
}

// part is a google.genai Part, as far as the log holds it.
type part struct {
	Text             *string         `json:"text"`
	Thought          bool            `json:"thought"`
	InlineData       json.RawMessage `json:"inlineData"`
	FileData         json.RawMessage `json:"fileData"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// meta is the metadata a log states (ConversationRecord without its
// messages).
type meta struct {
	SessionID   string   `json:"sessionId"`
	ProjectHash string   `json:"projectHash"`
	StartTime   string   `json:"startTime"`
	LastUpdated string   `json:"lastUpdated"`
	Kind        string   `json:"kind"`
	Summary     string   `json:"summary"`
	Directories []string `json:"directories"`
}

// line is one parsed record.
type line struct {
	kind string
	msg  *message   // lineMessage
	set  []*message // lineSet with "messages"
	// rewind is the id of a $rewindTo.
	rewind string
	meta   meta // lineMeta, lineSet (the fields it patches)
	// bad are the paths of the members that did not decode, as
	// ".thoughts[0].timestamp" ("$set.messages[1]" for a checkpoint's
	// message that is no object with a string id): they are left unset,
	// the rest of the record is read.
	bad []string
}

// parseLine classifies one record by its keys, and decodes it leniently
// (decodeLenient): a member of another type than this version reads is
// left unset and named in bad, so that a newer CLI's odd field does not
// cost its message. The error is for a line that is no JSON object.
func parseLine(b []byte) (line, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return line{}, err
	}
	isString := func(k string) bool {
		v, ok := probe[k]
		return ok && len(v) > 0 && v[0] == '"'
	}
	var l line
	switch {
	case isString("$rewindTo"):
		l.kind = lineRewind
		json.Unmarshal(probe["$rewindTo"], &l.rewind)
	case isString("id"):
		var m message
		decodeLenient(b, &m, "", &l.bad)
		l.kind, l.msg = lineMessage, &m
	case len(probe["$set"]) > 0 && probe["$set"][0] == '{':
		l.kind = lineSet
		var set struct {
			meta
			Messages []json.RawMessage `json:"messages"`
		}
		decodeLenient(probe["$set"], &set, "$set", &l.bad)
		l.meta = set.meta
		if set.Messages != nil {
			l.set = []*message{}
			for i, raw := range set.Messages {
				var m message
				path := "$set.messages[" + strconv.Itoa(i) + "]"
				if !decodeLenient(raw, &m, path, &l.bad) || m.ID == "" {
					if m.ID == "" && !slices.Contains(l.bad, path) {
						l.bad = append(l.bad, path)
					}
					continue
				}
				l.set = append(l.set, &m)
			}
		}
	case isString("sessionId") && isString("projectHash"):
		l.kind = lineMeta
		decodeLenient(b, &l.meta, "", &l.bad)
	default:
		l.kind = lineUnknown
	}
	return l, nil
}

// entry is a message and the lines that wrote it (indexes into the
// parsed lines): at, the line whose version stands; all, every line that
// wrote the id since it entered the list; pos, the line that brought it
// in (its first, or the checkpoint that listed it first).
type entry struct {
	msg     *message
	at, pos int
	all     []int
	// checkpointed is set when a checkpoint brought the message in:
	// history the CLI rewrote (a compression's summary and the model's
	// acknowledgement, the session context), not a turn of its own.
	checkpointed bool
}

// conversation is what a log says once every line is applied.
type conversation struct {
	meta meta
	// msgs is the conversation, in order.
	msgs []*entry
	// entries are every message that entered the list, standing or
	// dropped, in the order of pos: what happened.
	entries []*entry
	// rewrites are the lines that dropped messages: how many stood
	// before them that they kept, and how many they dropped.
	rewrites map[int]rewrite
}

// rewrite is what a $rewindTo or a checkpoint did to the list.
type rewrite struct {
	kept, dropped int
}

// resolve applies lines (the records that parsed) as the CLI's reader
// does.
func resolve(lines []line) *conversation {
	c := &conversation{rewrites: map[int]rewrite{}}
	byID := map[string]*entry{}
	drop := func(e *entry) { delete(byID, e.msg.ID) }
	put := func(m *message, i int) {
		if e, ok := byID[m.ID]; ok {
			e.msg, e.at = m, i
			e.all = append(e.all, i)
			return
		}
		e := &entry{msg: m, at: i, pos: i, all: []int{i}}
		byID[m.ID] = e
		c.msgs = append(c.msgs, e)
		c.entries = append(c.entries, e)
	}
	for i, l := range lines {
		switch l.kind {
		case lineRewind:
			k := 0
			for k < len(c.msgs) && c.msgs[k].msg.ID != l.rewind {
				k++
			}
			if k == len(c.msgs) {
				k = 0 // not found: the CLI clears the list
			}
			for _, e := range c.msgs[k:] {
				drop(e)
			}
			if len(c.msgs) > k {
				c.rewrites[i] = rewrite{kept: k, dropped: len(c.msgs) - k}
			}
			c.msgs = c.msgs[:k]
		case lineMessage:
			put(l.msg, i)
		case lineSet:
			if l.set != nil {
				// A checkpoint: the messages it lists replace the list;
				// one it keeps keeps its history.
				keep := map[string]bool{}
				for _, m := range l.set {
					keep[m.ID] = true
				}
				old := c.msgs
				c.msgs = nil
				var rw rewrite
				for _, e := range old {
					if !keep[e.msg.ID] {
						drop(e)
						rw.dropped++
					} else {
						rw.kept++
					}
				}
				if rw.dropped > 0 {
					c.rewrites[i] = rw
				}
				for _, m := range l.set {
					if e, ok := byID[m.ID]; ok {
						e.msg, e.at = m, i
						e.all = append(e.all, i)
						c.msgs = append(c.msgs, e)
						continue
					}
					e := &entry{msg: m, at: i, pos: i, all: []int{i}, checkpointed: true}
					byID[m.ID] = e
					c.msgs = append(c.msgs, e)
					c.entries = append(c.entries, e)
				}
			}
			c.meta.patch(l.meta)
		case lineMeta:
			c.meta.patch(l.meta)
		}
	}
	return c
}

// patch sets the fields of m that o has.
func (m *meta) patch(o meta) {
	for _, f := range []struct{ dst, src *string }{
		{&m.SessionID, &o.SessionID}, {&m.ProjectHash, &o.ProjectHash}, {&m.StartTime, &o.StartTime},
		{&m.LastUpdated, &o.LastUpdated}, {&m.Kind, &o.Kind}, {&m.Summary, &o.Summary},
	} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	if o.Directories != nil {
		m.Directories = o.Directories
	}
}

// parts decodes a message's content: a string is one text part.
func parts(raw json.RawMessage) []part {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		return []part{{Text: &s}}
	}
	// Each part is read member by member (decodeLenient): one odd
	// member costs only itself.
	var bad []string
	if raw[0] == '{' {
		var p part
		if decodeLenient(raw, &p, "", &bad) {
			return []part{p}
		}
		return nil
	}
	var ps []part
	decodeValue(raw, reflect.ValueOf(&ps).Elem(), "", &bad)
	return ps
}

// thoughts returns the number of thoughts of a gemini message: its
// thoughts, else the thought parts of its content (a checkpoint writes
// the history's parts as the content and keeps the thoughts).
func thoughts(m *message, ps []part) int {
	if len(m.Thoughts) > 0 {
		return len(m.Thoughts)
	}
	n := 0
	for _, p := range ps {
		if p.Thought && p.Text != nil {
			n++
		}
	}
	return n
}

// text joins the text of the parts that are no thought.
func text(ps []part) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Text != nil && !p.Thought {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// sessionContext reports whether a user message's text is the context
// the CLI puts first in every session (<session_context> with the date,
// the OS and the workspace directories), not the user's words.
func sessionContext(s string) bool {
	return strings.HasPrefix(strings.TrimSpace(s), "<session_context>")
}

// workspaceDirs returns the workspace directories a <session_context>
// lists.
func workspaceDirs(s string) []string {
	_, rest, ok := strings.Cut(s, "**Workspace Directories:**\n")
	if !ok {
		return nil
	}
	var out []string
	for _, l := range strings.Split(rest, "\n") {
		d, ok := strings.CutPrefix(strings.TrimSpace(l), "- ")
		if !ok || strings.HasPrefix(d, "**") {
			break
		}
		out = append(out, d)
	}
	return out
}

// projectDir returns the project's directory: of the directories the
// log names (candidates), the one whose SHA-256 is the log's
// projectHash (the CLI's getProjectHash of the project root), else the
// first. "" when the log names none: the tmp/<project> directory's name
// is a hash or a short slug of the path, which does not give it back.
func projectDir(hash string, candidates []string) string {
	for _, d := range candidates {
		sum := sha256.Sum256([]byte(d))
		if hex.EncodeToString(sum[:]) == hash {
			return d
		}
	}
	if len(candidates) > 0 {
		return candidates[0]
	}
	return ""
}

// ErrNotDocument reports a document that is neither a session (a JSON
// object) nor logs.json (a JSON array).
var ErrNotDocument = errors.New("not a Gemini CLI session or logs.json: neither a JSON object nor an array")

// CheckDoc reports whether b, a whole .json file, is a document of the
// CLI's: a JSON object (a session) or array (logs.json). A syntax error
// is an *agentlog.SyntaxError with its offset in b.
func CheckDoc(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &agentlog.SyntaxError{Offset: max(se.Offset-1, 0), Msg: se.Error(), Truncated: se.Offset >= int64(len(b))}
		}
		return err
	}
	switch v.(type) {
	case map[string]any, []any:
		return nil
	}
	return ErrNotDocument
}

// isDocument reports whether path is a whole-document file: a .json.
func isDocument(path string) bool { return strings.HasSuffix(path, ".json") }

// expand returns the lines a document stands for (see above); the error
// is for a document that does not decode.
func expand(doc []byte) ([][]byte, error) {
	doc = bytes.TrimSpace(doc)
	if len(doc) > 0 && doc[0] == '[' {
		var entries []struct {
			SessionID string          `json:"sessionId"`
			MessageID json.RawMessage `json:"messageId"`
			Type      string          `json:"type"`
			Message   json.RawMessage `json:"message"`
			Timestamp string          `json:"timestamp"`
		}
		if err := json.Unmarshal(doc, &entries); err != nil {
			return nil, err
		}
		out := make([][]byte, 0, len(entries))
		for _, e := range entries {
			content := e.Message
			if len(content) == 0 {
				content = json.RawMessage(`""`)
			}
			b, err := json.Marshal(struct {
				ID        string          `json:"id"`
				Timestamp string          `json:"timestamp,omitempty"`
				Type      string          `json:"type"`
				Content   json.RawMessage `json:"content"`
			}{e.SessionID + "#" + string(e.MessageID), e.Timestamp, e.Type, content})
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		return out, nil
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	var msgs []json.RawMessage
	if raw, ok := v["messages"]; ok {
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, err
		}
		delete(v, "messages")
	}
	head, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := [][]byte{head}
	for _, m := range msgs {
		out = append(out, m)
	}
	return out, nil
}

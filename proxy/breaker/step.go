package breaker

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"io"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/codec/llm"
	"github.com/go-json-experiment/json/jsontext"
)

// step is what one model call request says about its conversation: which
// thread it belongs to and, unless it is the thread's first call, what
// the call before it did (the last assistant turn) and what came of it
// (the tool results and prompts after it). Only the tail of the
// conversation is decoded: the rest is skipped by a scanner.
type step struct {
	// thread identifies the conversation: a hash of its first message.
	thread uint64
	// key is a hash of the tail and the conversation's length; a retried
	// request repeats it.
	key uint64
	// turn is the assistant turn the tail starts with (nil for a
	// thread's first call); after are the messages that follow it.
	turn  *llm.Message
	after []llm.Message
	// cwd is the agent's working directory, when the request states it
	// (Claude Code's system prompt, Codex's environment context).
	cwd string
}

var seed = maphash.MakeSeed()

// conversation returns the name of the member holding the conversation
// and of the one holding the system prompt, by protocol.
func conversation(api llm.API) (msgs, system string) {
	switch api {
	case llm.AnthropicMessages:
		return "messages", "system"
	case llm.OpenAIChat:
		return "messages", ""
	case llm.OpenAIResponses:
		return "input", "instructions"
	case llm.Gemini:
		return "contents", "systemInstruction"
	}
	return "", ""
}

// readStep reads the step of a request body; ok is false when the body is
// not a conversation this package reads (the call is then only counted).
func readStep(api llm.API, body []byte) (st step, ok bool) {
	msgsKey, sysKey := conversation(api)
	if msgsKey == "" {
		return st, false
	}
	d := jsontext.NewDecoder(bytes.NewBuffer(body))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return st, false
	}
	var elems [][2]int64 // offsets of each element of the conversation
	var system []byte
	for d.PeekKind() != '}' {
		k, err := d.ReadToken()
		if err != nil {
			return st, false
		}
		switch name := k.String(); {
		case name == msgsKey && d.PeekKind() == '[':
			d.ReadToken()
			for d.PeekKind() != ']' {
				start := d.InputOffset()
				if err := d.SkipValue(); err != nil {
					return st, false
				}
				// The offset before a value includes the comma before it.
				for start < int64(len(body)) && strings.IndexByte(", \t\r\n", body[start]) >= 0 {
					start++
				}
				elems = append(elems, [2]int64{start, d.InputOffset()})
			}
			if _, err := d.ReadToken(); err != nil {
				return st, false
			}
		case name == sysKey && sysKey != "":
			v, err := d.ReadValue()
			if err != nil {
				return st, false
			}
			system = v
		default:
			if err := d.SkipValue(); err != nil {
				return st, false
			}
		}
	}
	if len(elems) == 0 {
		return st, false
	}
	raw := func(i int) []byte { return body[elems[i][0]:elems[i][1]] }
	// The tail: the last run of assistant-side elements and what follows.
	end := len(elems)
	i := end
	for i > 0 && !assistantSide(raw(i-1)) {
		i--
	}
	start := i
	for start > 0 && assistantSide(raw(start-1)) {
		start--
	}
	if i == 0 {
		start = 0 // no assistant turn yet
	}
	tail, err := decode(api, msgsKey, body, elems[start:])
	if err != nil {
		return st, false
	}
	var first []llm.Message
	if start == 0 {
		first = tail
	} else if first, err = decode(api, msgsKey, body, elems[:1]); err != nil {
		return st, false
	}
	if len(first) > 0 {
		st.thread = hashMessage(&first[0])
	}
	// The key covers the tail and the conversation's length: a retry
	// repeats both; a new call that repeats the last one word for word
	// (Gemini sends no call ids) is two messages longer.
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(strconv.Itoa(len(elems)))
	for j := range tail {
		writeMessage(&h, &tail[j])
	}
	st.key = h.Sum64()
	for j := range tail {
		m := &tail[j]
		if st.turn == nil && start < i && assistantRole(m.Role) {
			merged := *m
			// A Responses turn is several items; the decoder groups them,
			// but keep every assistant part before the results together.
			for j+1 < len(tail) && assistantRole(tail[j+1].Role) {
				j++
				merged.Parts = append(append([]llm.Part(nil), merged.Parts...), tail[j].Parts...)
			}
			st.turn = &merged
			st.after = tail[j+1:]
			break
		}
	}
	if st.turn == nil {
		st.after = tail
	}
	st.cwd = workingDir(system, body)
	return st, true
}

// decode decodes the elements at offsets as a conversation of api.
func decode(api llm.API, key string, body []byte, offs [][2]int64) ([]llm.Message, error) {
	var b bytes.Buffer
	b.WriteString(`{"` + key + `":[`)
	for i, o := range offs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(body[o[0]:o[1]])
	}
	b.WriteString("]}")
	req, err := llm.DecodeRequest(api, b.Bytes())
	if err != nil {
		return nil, err
	}
	return req.Messages, nil
}

// assistantSide reports whether a conversation element is the model's:
// an assistant (or Gemini model) message, or a Responses item the model
// produced (function_call, reasoning, …).
func assistantSide(raw []byte) bool {
	d := jsontext.NewDecoder(bytes.NewBuffer(raw))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	var role, typ string
	for d.PeekKind() != '}' {
		k, err := d.ReadToken()
		if err != nil {
			return false
		}
		switch key := k.String(); key {
		case "role", "type":
			v, err := d.ReadToken()
			if err != nil {
				return false
			}
			if v.Kind() == '"' {
				if key == "role" {
					role = v.String()
				} else {
					typ = v.String()
				}
			}
		default:
			if err := d.SkipValue(); err != nil && err != io.EOF {
				return false
			}
		}
	}
	if role != "" {
		return assistantRole(role)
	}
	switch {
	case typ == "reasoning":
		return true
	case strings.HasSuffix(typ, "_call"):
		return true // function_call, custom_tool_call, local_shell_call, web_search_call
	}
	return false
}

func assistantRole(r string) bool { return r == "assistant" || r == "model" }

// hashMessage hashes what a message says, not how it was sent (cache
// markers and key order do not change it).
func hashMessage(m *llm.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	writeMessage(&h, m)
	return h.Sum64()
}

func writeMessage(h *maphash.Hash, m *llm.Message) {
	h.WriteString(m.Role)
	h.WriteByte(0)
	for i := range m.Parts {
		writePart(h, &m.Parts[i])
	}
	h.WriteByte(1)
}

func writePart(h *maphash.Hash, p *llm.Part) {
	for _, s := range []string{string(p.Type), p.Text, p.ID, p.Name, string(p.Input), p.SHA256, p.URL, p.Data} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	if p.IsError {
		h.WriteByte(2)
	}
	for i := range p.Content {
		writePart(h, &p.Content[i])
	}
}

// workingDir finds the agent's working directory in a request: the line
// of Claude Code's environment that states it (2.1.330 sends " - Primary
// working directory: /path" in a message of role system in the
// conversation; earlier versions "Working directory: /path" in the
// system prompt), or a Codex "<cwd>/path</cwd>" in the environment
// context.
func workingDir(system, body []byte) string {
	for _, m := range []struct {
		in          []byte
		open, close string
	}{{body, `Primary working directory: `, `\n`}, {system, `Working directory: `, `\n`}, {body, `<cwd>`, `</cwd>`}} {
		i := bytes.Index(m.in, []byte(m.open))
		if i < 0 {
			continue
		}
		rest := m.in[i+len(m.open):]
		j := bytes.Index(rest, []byte(m.close))
		if q := bytes.IndexByte(rest, '"'); q >= 0 && (j < 0 || q < j) {
			j = q
		}
		if j <= 0 || j > 4096 {
			continue
		}
		var dir string
		if json.Unmarshal(append(append([]byte{'"'}, rest[:j]...), '"'), &dir) != nil {
			continue
		}
		if dir = strings.TrimSpace(dir); strings.HasPrefix(dir, "/") {
			return dir
		}
	}
	return ""
}

package breaker

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"io"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/codec/jsonscan"
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

// scanned is what readStep remembers of a body it read, so that the
// session's next body, which resends it, is split at memory speed
// (jsonscan.Resplit). It is not changed once made.
type scanned struct {
	api    llm.API
	layout *jsonscan.Layout
	// system is the span of the system prompt member when it comes
	// before the conversation (then the next body that matches the
	// layout's head has it at the same place), or {0, 0}.
	system [2]int
	// thread is the hash of the first message, when decoded from the
	// first element alone (hasThread).
	thread    uint64
	hasThread bool
}

// readStep reads the step of a request body; ok is false when the body is
// not a conversation this package reads (the call is then only counted).
func readStep(api llm.API, body []byte) (st step, ok bool) {
	st, ok, _, _ = readStepFrom(api, body, nil)
	return st, ok
}

// readStepFrom is readStep for a body that may resend one of prev, what
// it remembered of earlier bodies of the session: the resent elements
// are checked by hash, not scanned (the result is the same). next is
// what to remember of body, or nil; before is the one of prev that body
// resends, or nil.
func readStepFrom(api llm.API, body []byte, prev []*scanned) (st step, ok bool, next, before *scanned) {
	msgsKey, sysKey := conversation(api)
	if msgsKey == "" {
		return st, false, nil, nil
	}
	var system []byte
	sysAfter := false // a system member follows the conversation
	member := func(name, value []byte) {
		if sysKey != "" && string(name) == sysKey {
			system, sysAfter = value, true
		}
	}
	var (
		open  int
		spans [][2]int
	)
	if len(prev) > 0 {
		layouts := make([]*jsonscan.Layout, len(prev))
		for i, p := range prev {
			if p.api == api {
				layouts[i] = p.layout
			}
		}
		if l, from, ok := jsonscan.ResplitLayout(seed, body, msgsKey, member, layouts...); ok {
			// The members before the conversation are those of the
			// body it resends (Resplit checked their hash).
			before = prev[from]
			if !sysAfter && before.system[1] > 0 {
				system = body[before.system[0]:before.system[1]]
			}
			open = l.Open
			spans = make([][2]int, len(l.Starts))
			for i, s := range l.Starts {
				spans[i] = [2]int{s, s + l.Lens[i]}
			}
			next = &scanned{api: api, layout: l, system: before.system}
		}
	}
	if next == nil {
		system = nil
		var found bool
		var sysBefore [2]int // the last system member's span before the conversation
		var sysSpans [][2]int
		open, spans, found = jsonscan.Split(body, msgsKey, func(name, value []byte) {
			if sysKey != "" && string(name) == sysKey {
				system = value
				at := cap(body) - cap(value)
				sysSpans = append(sysSpans, [2]int{at, at + len(value)})
			}
		})
		if !found {
			return st, false, nil, nil
		}
		for _, sp := range sysSpans {
			if sp[1] <= open {
				sysBefore = sp
			}
		}
		next = &scanned{api: api, layout: jsonscan.NewLayout(seed, body, open, spans), system: sysBefore}
	}
	elems := spans
	if len(elems) == 0 {
		return st, false, nil, nil
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
		return st, false, nil, nil
	}
	if start == 0 {
		if len(tail) > 0 {
			st.thread = hashMessage(&tail[0])
		}
	} else if before != nil && before.hasThread && len(before.layout.Starts) > 0 && before.layout.Starts[0] == elems[0][0] &&
		before.layout.Lens[0] == elems[0][1]-elems[0][0] && before.layout.Hashes[0] == next.layout.Hashes[0] {
		st.thread = before.thread // the same first element
	} else {
		first, err := decode(api, msgsKey, body, elems[:1])
		if err != nil {
			return st, false, nil, nil
		}
		if len(first) > 0 {
			st.thread = hashMessage(&first[0])
		}
	}
	if start > 0 {
		next.thread, next.hasThread = st.thread, true
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
	return st, true, next, before
}

// decode decodes the elements at offsets as a conversation of api.
func decode(api llm.API, key string, body []byte, offs [][2]int) ([]llm.Message, error) {
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

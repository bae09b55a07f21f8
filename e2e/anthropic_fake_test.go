package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic Messages API shapes, as much as the fakes need.

type amsgRequest struct {
	Model     string          `json:"model"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []amessage      `json:"messages"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Metadata struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

type amessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or blocks
}

type ablock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // tool_result: a string or blocks
	IsError   bool            `json:"is_error,omitempty"`
}

// blocks returns a message's content as blocks (a string is one text
// block).
func (m amessage) blocks() []ablock {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []ablock{{Type: "text", Text: s}}
	}
	var bs []ablock
	json.Unmarshal(m.Content, &bs)
	return bs
}

// text returns the text of a tool_result's content.
func (b ablock) resultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var bs []ablock
	json.Unmarshal(b.Content, &bs)
	var parts []string
	for _, c := range bs {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "")
}

// toolResults maps tool_use_id to tool_result blocks across the
// conversation.
func (r *amsgRequest) toolResults() map[string]ablock {
	out := map[string]ablock{}
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.blocks() {
			if b.Type == "tool_result" {
				out[b.ToolUseID] = b
			}
		}
	}
	return out
}

// allText is every text block and the system prompt, joined, for
// matching markers.
func (r *amsgRequest) allText() string {
	var sb strings.Builder
	sb.Write(r.System)
	for _, m := range r.Messages {
		for _, b := range m.blocks() {
			sb.WriteString(b.Text)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

func (r *amsgRequest) hasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// areply is what a fake answers to one Messages request.
type areply struct {
	id     string
	model  string
	blocks []ablock // text or tool_use (Input set)
	stop   string
	usage  ausage
}

type ausage struct {
	Input, Output, CacheRead, CacheCreation int64
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func event(name, data string) string {
	return "event: " + name + "\ndata: " + data + "\n\n"
}

// chunks cuts s into n roughly equal pieces (at least one).
func chunks(s string, n int) []string {
	if n < 1 || len(s) < n {
		return []string{s}
	}
	var out []string
	size := (len(s) + n - 1) / n
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	return append(out, s)
}

// sse renders a reply as the Messages API streams it: message_start, a
// ping, each block as start/deltas/stop, message_delta with the stop
// reason and output usage, message_stop.
func (a areply) sse() []string {
	u := a.usage
	ev := []string{
		event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%s,"type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1,"service_tier":"standard"}}}`,
			jsonString(a.id), jsonString(a.model), u.Input, u.CacheCreation, u.CacheRead)),
		event("ping", `{"type": "ping"}`),
	}
	for i, b := range a.blocks {
		switch b.Type {
		case "text":
			ev = append(ev, event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i)))
			for _, c := range chunks(b.Text, 3) {
				ev = append(ev, event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, jsonString(c))))
			}
		case "tool_use":
			ev = append(ev, event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}`, i, jsonString(b.ID), jsonString(b.Name))))
			for _, c := range chunks(string(b.Input), 3) {
				ev = append(ev, event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, jsonString(c))))
			}
		}
		ev = append(ev, event("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)))
	}
	ev = append(ev,
		event("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":%d}}`, jsonString(a.stop), u.Output)),
		event("message_stop", `{"type":"message_stop"}`))
	return ev
}

// json renders a reply as a non-streaming Messages response.
func (a areply) json() string {
	type blk struct {
		Type  string          `json:"type"`
		Text  *string         `json:"text,omitempty"`
		ID    string          `json:"id,omitempty"`
		Name  string          `json:"name,omitempty"`
		Input json.RawMessage `json:"input,omitempty"`
	}
	var content []blk
	for _, b := range a.blocks {
		if b.Type == "text" {
			t := b.Text
			content = append(content, blk{Type: "text", Text: &t})
		} else {
			content = append(content, blk{Type: b.Type, ID: b.ID, Name: b.Name, Input: b.Input})
		}
	}
	body, _ := json.Marshal(map[string]any{
		"id": a.id, "type": "message", "role": "assistant", "model": a.model, "content": content,
		"stop_reason": a.stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": a.usage.Input, "output_tokens": a.usage.Output,
			"cache_read_input_tokens": a.usage.CacheRead, "cache_creation_input_tokens": a.usage.CacheCreation},
	})
	return string(body)
}

// write sends the reply streamed or whole, as the request asked.
func (a areply) write(w http.ResponseWriter, stream bool) {
	w.Header().Set("Request-Id", "req_e2e_"+a.id)
	if stream {
		writeSSE(w, a.sse())
		return
	}
	writeJSON(w, http.StatusOK, a.json())
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	writeJSON(w, status, string(b))
}

// messagesAPI serves the Messages API around a scripted model: token
// counts, connectivity probes (HEAD and GET answer like a reachable
// API), a 400 for a body that is not a request, a 404 for anything
// else; model answers each decoded POST /v1/messages.
func messagesAPI(model func(s *seen, req *amsgRequest, w http.ResponseWriter)) func(s *seen, w http.ResponseWriter) {
	return func(s *seen, w http.ResponseWriter) {
		switch {
		case s.Method == http.MethodPost && s.Path == "/v1/messages/count_tokens":
			writeJSON(w, http.StatusOK, fmt.Sprintf(`{"input_tokens":%d}`, len(s.Body)/4+1))
		case s.Method == http.MethodPost && s.Path == "/v1/messages":
			var req amsgRequest
			if err := json.Unmarshal(s.Body, &req); err != nil {
				anthropicError(w, http.StatusBadRequest, "invalid_request_error", "body: "+err.Error())
				return
			}
			model(s, &req, w)
		case s.Method == http.MethodHead || s.Method == http.MethodGet:
			writeJSON(w, http.StatusOK, `{}`)
		default:
			anthropicError(w, http.StatusNotFound, "not_found_error", "e2e fake: no route for "+s.Method+" "+s.Path)
		}
	}
}

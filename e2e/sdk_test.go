package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
)

// What the fake model says in every SDK test: text, then a tool call.
const (
	sdkText     = "Hello from the fake upstream! Let me check the weather."
	sdkToolName = "get_weather"
	sdkToolArgs = `{"city":"Paris","unit":"celsius"}`
)

// openaiChatSSE is a chat completions stream as the API sends it with
// stream_options.include_usage: a role chunk, content deltas, tool call
// deltas, the finish chunk, a usage chunk with no choices, [DONE].
func openaiChatSSE() []string {
	const head = `{"id":"chatcmpl-E2E1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-5-2025-08-07","service_tier":"default","system_fingerprint":null,"choices":[`
	chunk := func(choice string) string {
		return "data: " + head + choice + `],"usage":null}` + "\n\n"
	}
	ev := []string{chunk(`{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`)}
	for _, c := range chunks(sdkText, 4) {
		ev = append(ev, chunk(`{"index":0,"delta":{"content":`+jsonString(c)+`},"logprobs":null,"finish_reason":null}`))
	}
	ev = append(ev, chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_E2E1","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}`))
	for _, c := range chunks(sdkToolArgs, 3) {
		ev = append(ev, chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+jsonString(c)+`}}]},"logprobs":null,"finish_reason":null}`))
	}
	ev = append(ev,
		chunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}`),
		"data: "+head+`],"usage":{"prompt_tokens":83,"completion_tokens":41,"total_tokens":124,"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":16,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`+"\n\n",
		"data: [DONE]\n\n")
	return ev
}

var openaiChatUsage = exchange.Usage{InputTokens: 83, OutputTokens: 41, CacheReadTokens: 64, TotalTokens: 124}

// openaiResponsesSSE is a Responses API stream: created, in_progress, a
// message item with text deltas, a function call item with argument
// deltas, completed with usage.
func openaiResponsesSSE() []string {
	seq := 0
	ev := func(typ, fields string) string {
		s := fmt.Sprintf("event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, seq, fields)
		seq++
		return s
	}
	resp := func(status, output, usage string) string {
		return `"response":{"id":"resp_E2E1","object":"response","created_at":1767225600,"status":"` + status + `","background":false,"error":null,"incomplete_details":null,"instructions":null,"model":"gpt-5-2025-08-07","output":[` + output + `],"parallel_tool_calls":true,"previous_response_id":null,"store":true,"temperature":1.0,"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":` + usage + `,"user":null,"metadata":{}}`
	}
	msgItem := func(status, text string) string {
		content := ""
		if status == "completed" {
			content = `{"type":"output_text","annotations":[],"logprobs":[],"text":` + jsonString(text) + `}`
		}
		return `{"id":"msg_E2E1","type":"message","status":"` + status + `","content":[` + content + `],"role":"assistant"}`
	}
	fcItem := func(status, args string) string {
		return `{"id":"fc_E2E1","type":"function_call","status":"` + status + `","arguments":` + jsonString(args) + `,"call_id":"call_E2E2","name":"get_weather"}`
	}
	out := []string{
		ev("response.created", resp("in_progress", "", "null")),
		ev("response.in_progress", resp("in_progress", "", "null")),
		ev("response.output_item.added", `"output_index":0,"item":`+msgItem("in_progress", "")),
		ev("response.content_part.added", `"item_id":"msg_E2E1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`),
	}
	for _, c := range chunks(sdkText, 4) {
		out = append(out, ev("response.output_text.delta", `"item_id":"msg_E2E1","output_index":0,"content_index":0,"delta":`+jsonString(c)+`,"logprobs":[]`))
	}
	out = append(out,
		ev("response.output_text.done", `"item_id":"msg_E2E1","output_index":0,"content_index":0,"text":`+jsonString(sdkText)+`,"logprobs":[]`),
		ev("response.content_part.done", `"item_id":"msg_E2E1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":`+jsonString(sdkText)+`}`),
		ev("response.output_item.done", `"output_index":0,"item":`+msgItem("completed", sdkText)),
		ev("response.output_item.added", `"output_index":1,"item":`+fcItem("in_progress", "")),
	)
	for _, c := range chunks(sdkToolArgs, 3) {
		out = append(out, ev("response.function_call_arguments.delta", `"item_id":"fc_E2E1","output_index":1,"delta":`+jsonString(c)))
	}
	out = append(out,
		ev("response.function_call_arguments.done", `"item_id":"fc_E2E1","output_index":1,"arguments":`+jsonString(sdkToolArgs)),
		ev("response.output_item.done", `"output_index":1,"item":`+fcItem("completed", sdkToolArgs)),
		ev("response.completed", resp("completed", msgItem("completed", sdkText)+","+fcItem("completed", sdkToolArgs),
			`{"input_tokens":91,"input_tokens_details":{"cached_tokens":32},"output_tokens":57,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":148}`)),
	)
	return out
}

var openaiResponsesUsage = exchange.Usage{InputTokens: 91, OutputTokens: 57, CacheReadTokens: 32, TotalTokens: 148}

var anthropicReply = areply{
	id: "msg_01E2eSdk", model: "claude-sonnet-4-5", stop: "tool_use",
	usage: ausage{Input: 472, Output: 89, CacheRead: 128, CacheCreation: 256},
	blocks: []ablock{
		{Type: "text", Text: sdkText},
		{Type: "tool_use", ID: "toolu_01E2eWeather", Name: sdkToolName, Input: json.RawMessage(sdkToolArgs)},
	},
}

var anthropicUsage = exchange.Usage{InputTokens: 472, OutputTokens: 89, CacheReadTokens: 128, CacheCreationTokens: 256, TotalTokens: 472 + 89 + 128 + 256} // cached tokens count in the total

// sdkUpstream answers each SDK's streaming request.
func sdkUpstream(s *seen, w http.ResponseWriter) {
	var body struct {
		Stream        bool `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	json.Unmarshal(s.Body, &body)
	switch {
	case s.Method != http.MethodPost:
		writeJSON(w, http.StatusMethodNotAllowed, `{"error":{"message":"POST only"}}`)
	case !body.Stream:
		writeJSON(w, http.StatusBadRequest, `{"error":{"message":"e2e fake: want stream: true"}}`)
	case s.Path == "/v1/messages":
		anthropicReply.write(w, true)
	case s.Path == "/v1/chat/completions":
		if !body.StreamOptions.IncludeUsage {
			writeJSON(w, http.StatusBadRequest, `{"error":{"message":"e2e fake: want stream_options.include_usage"}}`)
			return
		}
		w.Header().Set("X-Request-Id", "req_e2e_chat")
		writeSSE(w, openaiChatSSE())
	case s.Path == "/v1/responses":
		w.Header().Set("X-Request-Id", "req_e2e_responses")
		writeSSE(w, openaiResponsesSSE())
	default:
		writeJSON(w, http.StatusNotFound, `{"error":{"message":"e2e fake: no route"}}`)
	}
}

// runNode runs a script in node/ against the proxy and decodes the JSON
// line it prints.
func runNode(t *testing.T, dir, baseURL string, env []string, out any, args ...string) {
	t.Helper()
	node := requireNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "E2E_BASE_URL=" + baseURL}, env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("node %s ran for %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		logOutput(t, "stdout", stdout.Bytes())
		logOutput(t, "stderr", stderr.Bytes())
		t.Fatalf("node %s: %v", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), out); err != nil {
		logOutput(t, "stderr", stderr.Bytes())
		t.Fatalf("node %s printed %q: %v", strings.Join(args, " "), stdout.String(), err)
	}
}

// sdkRig starts the fake upstream, the proxy and the tripwire.
func sdkRig(t *testing.T) (string, *fake, *rig, *tripwire) {
	dir := requireNodeModules(t)
	up := newFake(t, sdkUpstream)
	rg := newRig(t, up.URL)
	tw := newTripwire(t)
	loopbackOnly(t, up.URL)
	loopbackOnly(t, rg.srv.URL)
	return dir, up, rg, tw
}

// checkOne asserts the WAL holds exactly the one exchange the upstream
// saw, recorded byte for byte, with the usage the upstream sent.
func checkOne(t *testing.T, up *fake, rg *rig, tw *tripwire, provider, path string, usage exchange.Usage, secret string) *recorded {
	t.Helper()
	reqs := up.requests()
	ex := rg.readWAL(t)
	if len(reqs) != 1 || len(ex) != 1 {
		t.Fatalf("upstream saw %d requests, WAL holds %d exchanges; want 1 and 1", len(reqs), len(ex))
	}
	x := ex[0]
	checkExchange(t, x, reqs)
	if x.Start.Provider != provider || x.Start.Path != path || !x.Start.Stream {
		t.Errorf("request start: provider %q path %q stream %v", x.Start.Provider, x.Start.Path, x.Start.Stream)
	}
	if x.End.Usage == nil || *x.End.Usage != usage {
		t.Errorf("ResponseEnd.Usage %+v, the upstream sent %+v", x.End.Usage, usage)
	}
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("the client tried to reach the outside: %v", a)
	}
	scanFiles(t, rg.dir, secret)
	return x
}

func TestAnthropicSDKStream(t *testing.T) {
	dir, up, rg, tw := sdkRig(t)
	key := "sk-ant-api03-fake" + randomHex(24) + "-E2E"
	var got struct {
		Text        string            `json:"text"`
		Events      []string          `json:"events"`
		ID          string            `json:"id"`
		StopReason  string            `json:"stop_reason"`
		Content     []json.RawMessage `json:"content"`
		Usage       map[string]any    `json:"usage"`
		RequestID   *string           `json:"request_id"`
		BbRequestID *string           `json:"bb_request_id"`
	}
	runNode(t, dir, rg.srv.URL, append(tw.env(), "ANTHROPIC_API_KEY="+key), &got, filepath.Join(dir, "anthropic.mjs"))
	if got.Text != sdkText || got.ID != anthropicReply.id || got.StopReason != "tool_use" || len(got.Content) != 2 {
		t.Fatalf("SDK assembled %+v", got)
	}
	var tool struct {
		Type, ID, Name string
		Input          json.RawMessage
	}
	json.Unmarshal(got.Content[1], &tool)
	if tool.Type != "tool_use" || tool.Name != sdkToolName || !sameJSON(tool.Input, sdkToolArgs) {
		t.Errorf("tool call %+v", tool)
	}
	if got.Usage["input_tokens"] != 472.0 || got.Usage["output_tokens"] != 89.0 || got.Usage["cache_read_input_tokens"] != 128.0 {
		t.Errorf("SDK usage %v", got.Usage)
	}
	x := checkOne(t, up, rg, tw, "anthropic", "/v1/messages", anthropicUsage, key)
	if got.BbRequestID == nil || *got.BbRequestID != x.Start.RequestID {
		t.Errorf("the client saw X-Bb-Request-Id %v, the WAL recorded %q", got.BbRequestID, x.Start.RequestID)
	}
	// SDK 1.x sends the key as Authorization: Bearer (0.x sent X-Api-Key).
	hdr := up.requests()[0].Header
	switch {
	case hdr.Get("X-Api-Key") == key:
		if h := x.Start.Headers["X-Api-Key"]; len(h) != 1 || h[0] != "[redacted:api_key]" {
			t.Errorf("recorded X-Api-Key %v", h)
		}
	case hdr.Get("Authorization") == "Bearer "+key:
		if h := x.Start.Headers["Authorization"]; len(h) != 1 || h[0] != "[redacted:authorization]" {
			t.Errorf("recorded Authorization %v", h)
		}
	default:
		t.Errorf("the upstream did not get the key unchanged in X-Api-Key or Authorization: %v", hdr)
	}
	if hdr.Get("Anthropic-Version") == "" {
		t.Errorf("no Anthropic-Version header: %v", hdr)
	}
	if x.Start.SessionSource != "minted" {
		t.Errorf("session %q from %q: the SDK sends no session", x.Start.SessionID, x.Start.SessionSource)
	}
}

func TestOpenAISDKChatStream(t *testing.T) {
	dir, up, rg, tw := sdkRig(t)
	key := "sk-proj-fake" + randomHex(24)
	var got struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
		ToolCalls    []struct {
			ID, Name, Arguments string
		} `json:"tool_calls"`
		Usage map[string]any `json:"usage"`
	}
	runNode(t, dir, rg.srv.URL, append(tw.env(), "OPENAI_API_KEY="+key), &got, filepath.Join(dir, "openai.mjs"), "chat")
	if got.Text != sdkText || got.FinishReason != "tool_calls" || len(got.ToolCalls) != 1 {
		t.Fatalf("SDK assembled %+v", got)
	}
	if c := got.ToolCalls[0]; c.ID != "call_E2E1" || c.Name != sdkToolName || c.Arguments != sdkToolArgs {
		t.Errorf("tool call %+v", c)
	}
	if got.Usage["prompt_tokens"] != 83.0 || got.Usage["completion_tokens"] != 41.0 || got.Usage["total_tokens"] != 124.0 {
		t.Errorf("SDK usage %v", got.Usage)
	}
	x := checkOne(t, up, rg, tw, "openai", "/v1/chat/completions", openaiChatUsage, key)
	if h := x.Start.Headers["Authorization"]; len(h) != 1 || h[0] != "[redacted:authorization]" {
		t.Errorf("recorded Authorization %v", h)
	}
	if x.Start.Model != "gpt-5" {
		t.Errorf("model %q", x.Start.Model)
	}
}

func TestOpenAISDKResponsesStream(t *testing.T) {
	dir, up, rg, tw := sdkRig(t)
	key := "sk-proj-fake" + randomHex(24)
	var got struct {
		Text      string   `json:"text"`
		Events    []string `json:"events"`
		Status    string   `json:"status"`
		ToolCalls []struct {
			ID, Name, Arguments string
		} `json:"tool_calls"`
		Usage map[string]any `json:"usage"`
	}
	runNode(t, dir, rg.srv.URL, append(tw.env(), "OPENAI_API_KEY="+key), &got, filepath.Join(dir, "openai.mjs"), "responses")
	if got.Text != sdkText || got.Status != "completed" || len(got.ToolCalls) != 1 {
		t.Fatalf("SDK assembled %+v", got)
	}
	if c := got.ToolCalls[0]; c.ID != "call_E2E2" || c.Name != sdkToolName || c.Arguments != sdkToolArgs {
		t.Errorf("tool call %+v", c)
	}
	if got.Usage["input_tokens"] != 91.0 || got.Usage["output_tokens"] != 57.0 || got.Usage["total_tokens"] != 148.0 {
		t.Errorf("SDK usage %v", got.Usage)
	}
	if want := len(openaiResponsesSSE()); len(got.Events) != want {
		t.Errorf("SDK saw %d events, the upstream sent %d: %v", len(got.Events), want, got.Events)
	}
	checkOne(t, up, rg, tw, "openai", "/v1/responses", openaiResponsesUsage, key)
}

func sameJSON(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

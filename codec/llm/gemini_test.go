package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// geminiRecorded is one model call of a gemini-cli .responses file, framed as
// the wire would carry it.
type geminiRecorded struct {
	method string
	// chunks are the chunks of a streamed call as sent; object is the
	// body of a generateContent call.
	chunks []json.RawMessage
	object []byte
}

// sse frames the chunks as an alt=sse stream.
func (c *geminiRecorded) sse() []byte {
	var b bytes.Buffer
	for _, ch := range c.chunks {
		b.WriteString("data: ")
		b.Write(ch)
		b.WriteString("\r\n\r\n")
	}
	return b.Bytes()
}

// array frames the chunks as a streamGenerateContent JSON array, laid out
// as the API lays it out.
func (c *geminiRecorded) array() []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i, ch := range c.chunks {
		if i > 0 {
			b.WriteString("\n,\r\n")
		}
		b.Write(ch)
	}
	b.WriteString("]")
	return b.Bytes()
}

// readGeminiCalls reads a gemini-cli .responses file.
func readGeminiCalls(tb testing.TB, path string) []geminiRecorded {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var calls []geminiRecorded
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var line struct {
			Method   string          `json:"method"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			tb.Fatalf("%s line %d: %v", path, len(calls)+1, err)
		}
		c := geminiRecorded{method: line.Method}
		switch line.Method {
		case "generateContentStream":
			if err := json.Unmarshal(line.Response, &c.chunks); err != nil {
				tb.Fatal(err)
			}
		case "generateContent":
			c.object = line.Response
		default:
			tb.Fatalf("%s: method %q", path, line.Method)
		}
		calls = append(calls, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return calls
}

// geminiFixtures returns the gemini-cli files by name.
func geminiFixtures(tb testing.TB) map[string][]geminiRecorded {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(streamsDir(tb, "gemini", "gemini-cli"), "*.responses"))
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string][]geminiRecorded)
	for _, f := range files {
		out[filepath.Base(f)] = readGeminiCalls(tb, f)
	}
	return out
}

func TestGeminiCLIResponses(t *testing.T) {
	fixtures := geminiFixtures(t)
	if len(fixtures) != len(geminiCLIWant) {
		t.Errorf("%d files, want %d", len(fixtures), len(geminiCLIWant))
	}
	for name, calls := range fixtures {
		t.Run(name, func(t *testing.T) {
			wants, ok := geminiCLIWant[name]
			if !ok {
				t.Fatalf("no expectations for %s", name)
			}
			if len(calls) != len(wants) {
				t.Fatalf("%d calls, want %d", len(calls), len(wants))
			}
			for i, c := range calls {
				label := fmt.Sprintf("call %d", i)
				if c.object != nil {
					r, err := DecodeResponse(Gemini, c.object)
					if err != nil {
						t.Fatalf("%s: %v", label, err)
					}
					if r.Stream {
						t.Errorf("%s: Stream set for a generateContent body", label)
					}
					checkResponse(t, label, r, wants[i])
					continue
				}
				sse, err := DecodeResponse(Gemini, c.sse())
				if err != nil {
					t.Fatalf("%s sse: %v", label, err)
				}
				checkResponse(t, label+" sse", sse, wants[i])
				arr, err := DecodeResponse(Gemini, c.array())
				if err != nil {
					t.Fatalf("%s array: %v", label, err)
				}
				if !sse.Stream || !reflect.DeepEqual(arr, sse) {
					t.Errorf("%s: array decodes to\n%s\nSSE to\n%s", label, mustJSON(arr), mustJSON(sse))
				}
			}
		})
	}
}

func TestGeminiTruncation(t *testing.T) {
	for name, calls := range geminiFixtures(t) {
		for i, c := range calls {
			if c.object != nil {
				continue
			}
			for _, form := range []string{"sse", "array"} {
				t.Run(fmt.Sprintf("%s/call=%d/%s", name, i, form), func(t *testing.T) {
					body := c.sse()
					// The first event is complete at its blank line, the
					// first array element at its closing brace.
					firstEvent := bytes.Index(body, []byte("\r\n\r\n")) + 4
					if form == "array" {
						body = c.array()
						firstEvent = 1 + len(c.chunks[0])
					}
					full, err := DecodeResponse(Gemini, body)
					if err != nil {
						t.Fatal(err)
					}
					// Every call here finishes in its last chunk, which
					// has arrived once its closing brace has.
					stop := bytes.LastIndexByte(body, '}') + 1
					for _, n := range cutPoints(body) {
						label := fmt.Sprintf("cut at %d of %d", n, len(body))
						r, err := DecodeResponse(Gemini, body[:n])
						if err != nil {
							if n >= firstEvent {
								t.Errorf("%s: %v", label, err)
							}
							continue
						}
						if r.Complete != (n >= stop) {
							t.Errorf("%s: Complete = %v, the last chunk ends at %d", label, r.Complete, stop)
						}
						if r.Complete && !reflect.DeepEqual(r.Parts, full.Parts) {
							t.Errorf("%s: complete, but parts %s, want %s", label, mustJSON(r.Parts), mustJSON(full.Parts))
						}
						checkPrefix(t, label, r.Parts, full.Parts)
					}
				})
			}
		}
	}
}

// geminiAllParts is a request with every part type, snake_case spellings,
// and keys of every kind.
const geminiAllParts = `{
  "systemInstruction": {"role": "user", "parts": [{"text": "You are a CLI agent."}, {"text": "Be brief."}]},
  "contents": [
    {"role": "user", "parts": [
      {"text": "Describe these."},
      {"inlineData": {"mimeType": "image/png", "data": "aGVsbG8="}},
      {"inline_data": {"mime_type": "application/pdf", "data": "JVBERi0xLjQK"}},
      {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://bucket/v.mp4"}},
      {"file_data": {"mime_type": "image/jpeg", "file_uri": "https://example.com/a.jpg"}},
      {"inlineData": {"mimeType": "image/webp", "data": "-_-_"}}
    ]},
    {"role": "model", "parts": [
      {"thought": true, "text": "Thinking it over."},
      {"text": "Calling a tool.", "thoughtSignature": "sigA"},
      {"functionCall": {"name": "read_file", "args": { "path" : "a.txt" }, "id": "call-1"}, "thoughtSignature": "sigB"},
      {"function_call": {"name": "list_dir"}},
      {"text": "", "thoughtSignature": "sigC"},
      {"text": "", "thought_signature": "sigD"},
      {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
      {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
      {"videoMetadata": {"startOffset": "1s"}},
      {"thought": true},
      {}
    ]},
    {"role": "user", "parts": [
      {"functionResponse": {"name": "read_file", "id": "call-1", "response": {"output": "file body"}}},
      {"functionResponse": {"name": "list_dir", "response": {"error": "no such dir"}}},
      {"function_response": {"name": "stat", "response": {"size": 3, "mode": "0644"}}},
      {"functionResponse": {"name": "noop", "response": {"result": {"nested": true}}}},
      {"functionResponse": {"name": "fail", "response": {"error": {"code": 2}, "detail": "x"}}}
    ]},
    {"role": "function", "parts": [{"functionResponse": {"name": "old", "response": {"content": "legacy role"}}}]},
    {"parts": [{"text": "No role."}]},
    {"role": "model", "parts": [{"text": "x", "thought": "yes"}]}
  ],
  "tools": [
    {"functionDeclarations": [{"name": "read_file", "parameters": {"type": "OBJECT"}}, {"name": "list_dir"}]},
    {"googleSearch": {}},
    {"codeExecution": {}, "function_declarations": [{"name": "stat"}]}
  ],
  "generationConfig": {"temperature": 0.2, "maxOutputTokens": 8192, "thinkingConfig": {"includeThoughts": true, "thinkingBudget": -1}},
  "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
  "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
  "cachedContent": "cachedContents/abc",
  "session_id": "s-1"
}`

func TestGeminiRequestParts(t *testing.T) {
	r, err := DecodeRequest(Gemini, []byte(geminiAllParts))
	if err != nil {
		t.Fatal(err)
	}
	if r.API != Gemini || r.Model != "" || r.Stream {
		t.Errorf("API %q Model %q Stream %v", r.API, r.Model, r.Stream)
	}
	if want := "You are a CLI agent.\n\nBe brief."; r.System != want {
		t.Errorf("System = %q, want %q", r.System, want)
	}
	if want := []string{"read_file", "list_dir", "googleSearch", "codeExecution", "stat"}; !reflect.DeepEqual(r.Tools, want) {
		t.Errorf("Tools = %q, want %q", r.Tools, want)
	}
	wantParams := []Param{
		{"cachedContent", json.RawMessage(`"cachedContents/abc"`)},
		{"generationConfig.maxOutputTokens", json.RawMessage(`8192`)},
		{"generationConfig.temperature", json.RawMessage(`0.2`)},
		{"generationConfig.thinkingConfig", json.RawMessage(`{"includeThoughts":true,"thinkingBudget":-1}`)},
		{"safetySettings", json.RawMessage(`[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]`)},
		{"session_id", json.RawMessage(`"s-1"`)},
		{"toolConfig", json.RawMessage(`{"functionCallingConfig":{"mode":"AUTO"}}`)},
	}
	if !reflect.DeepEqual(r.Params, wantParams) {
		t.Errorf("Params =\n%s\nwant\n%s", mustJSON(r.Params), mustJSON(wantParams))
	}
	want := []struct {
		role  string
		parts []wantPart
	}{
		{"user", []wantPart{
			{Type: PartText, Text: "Describe these."},
			{Type: PartImage, MediaType: "image/png", Size: 5, SHA256: sha("hello")},
			{Type: PartDocument, MediaType: "application/pdf", Size: 9, SHA256: sha("%PDF-1.4\n")},
			{Type: PartDocument, MediaType: "video/mp4", URL: "gs://bucket/v.mp4"},
			{Type: PartImage, MediaType: "image/jpeg", URL: "https://example.com/a.jpg"},
			{Type: PartImage, MediaType: "image/webp", Size: 3, SHA256: sha("\xfb\xff\xbf")},
		}},
		{"assistant", []wantPart{
			{Type: PartThinking, Text: "Thinking it over."},
			{Type: PartText, Text: "Calling a tool.", Signature: "sigA"},
			{Type: PartToolCall, ID: "call-1", Name: "read_file", Input: `{"path":"a.txt"}`, Signature: "sigB"},
			// The empty signed parts: sigC goes to the unsigned call
			// before it; sigD finds that part signed and stands alone.
			{Type: PartToolCall, Name: "list_dir", Signature: "sigC"},
			{Type: PartThinking, Signature: "sigD"},
			{Type: PartServerToolCall, Name: "code_execution", Input: `{"language":"PYTHON","code":"print(1)"}`},
			{Type: PartServerToolResult, Name: "code_execution", Raw: `{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1\n"}}`},
			{Type: PartOther, Raw: `{"videoMetadata":{"startOffset":"1s"}}`},
		}},
		{"user", []wantPart{
			{Type: PartToolResult, ID: "call-1", Name: "read_file", Text: "file body"},
			{Type: PartToolResult, Name: "list_dir", Text: "no such dir", IsError: true},
			{Type: PartToolResult, Name: "stat", Text: `{"size":3,"mode":"0644"}`},
			{Type: PartToolResult, Name: "noop", Text: `{"result":{"nested":true}}`},
			{Type: PartToolResult, Name: "fail", Text: `{"error":{"code":2},"detail":"x"}`, IsError: true},
		}},
		{"user", []wantPart{{Type: PartToolResult, Name: "old", Text: "legacy role"}}},
		{"user", []wantPart{{Type: PartText, Text: "No role."}}},
		{"assistant", []wantPart{{Type: PartOther, Raw: `{"text":"x","thought":"yes"}`}}},
	}
	if len(r.Messages) != len(want) {
		t.Fatalf("%d messages, want %d: %s", len(r.Messages), len(want), mustJSON(r.Messages))
	}
	for i, w := range want {
		if r.Messages[i].Role != w.role {
			t.Errorf("message %d: role %q, want %q", i, r.Messages[i].Role, w.role)
		}
		checkParts(t, fmt.Sprintf("message %d", i), r.Messages[i].Parts, w.parts)
	}

	// The same request compact or indented decodes the same.
	var compact, indented bytes.Buffer
	if err := json.Compact(&compact, []byte(geminiAllParts)); err != nil {
		t.Fatal(err)
	}
	if err := json.Indent(&indented, []byte(geminiAllParts), "", "\t"); err != nil {
		t.Fatal(err)
	}
	for _, body := range [][]byte{compact.Bytes(), indented.Bytes()} {
		again, err := DecodeRequest(Gemini, body)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Errorf("reformatted body decodes to\n%s\nnot\n%s", mustJSON(again), mustJSON(r))
		}
	}
}

func TestGeminiRequestShapes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		system     string
		params     string
	}{
		{
			name: "snake_case keys", body: `{"system_instruction": {"parts": [{"text": "sys"}]}, "generation_config": {"top_k": 3}}`,
			system: "sys", params: `[{"name":"generation_config.top_k","value":3}]`,
		},
		{
			name: "system as a string, null config", body: `{"systemInstruction": "plain", "generationConfig": null, "labels": {"a": "b"}}`,
			system: "plain", params: `[{"name":"labels","value":{"a":"b"}}]`,
		},
		{
			name: "config of the wrong kind is one param", body: `{"generationConfig": [1]}`,
			params: `[{"name":"generationConfig","value":[1]}]`,
		},
		{
			name: "model in the body is a param, not the model", body: `{"model": "gemini-2.5-pro", "contents": []}`,
			params: `[{"name":"model","value":"gemini-2.5-pro"}]`,
		},
	} {
		r, err := DecodeRequest(Gemini, []byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if r.System != tc.system || mustJSON(r.Params) != tc.params || r.Model != "" || len(r.Messages) != 0 {
			t.Errorf("%s: got %s\nwant system %q params %s", tc.name, mustJSON(r), tc.system, tc.params)
		}
	}
}

func TestGeminiRequestErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{``, "at byte 0: unexpected end of JSON input"},
		{`{"contents": [}`, "at byte 15: invalid character '}' looking for beginning of value"},
		{`[]`, "at byte 1: want object, got array"},
		{`null`, "at byte 0: want object, got null"},
		{`{"contents": {}}`, "contents: want array, got object"},
		{`{"contents": [{"role": "user", "parts": [{"text": "a"}]}, {"role": ["model"]}]}`, "contents[1].role: want string, got array"},
		{`{"contents": [{"parts": "hi"}]}`, "contents[0].parts: want array, got string"},
		{`{"systemInstruction": 3}`, "systemInstruction: want object or string, got number"},
		{`{"systemInstruction": {"parts": 3}}`, "systemInstruction.parts: want array, got number"},
		{`{"tools": [{"functionDeclarations": {"name": "x"}}]}`, "tools[0].functionDeclarations: want array, got object"},
		{`{"tools": ["googleSearch"]}`, "tools: want object, got string"},
	} {
		_, err := DecodeRequest(Gemini, []byte(tc.body))
		want := "gemini request: " + tc.want
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", tc.body, err, want)
		}
	}
}

// TestGeminiTurnSentBack: the model turn of a response, sent back as
// history in the next request, decodes to the parts the response did.
func TestGeminiTurnSentBack(t *testing.T) {
	chunks := []string{
		`{"candidates":[{"content":{"parts":[{"text":"AR NAR"}],"role":"model"},"index":0}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"Er8B"}],"role":"model"},"finishReason":"STOP","index":0}]}`,
	}
	resp, err := DecodeResponse(Gemini, []byte("["+strings.Join(chunks, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeRequest(Gemini, []byte(`{"contents":[{"role":"model","parts":[{"text":"AR NAR"},{"text":"","thoughtSignature":"Er8B"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req.Messages[0].Parts, resp.Parts) {
		t.Errorf("request turn %s, response %s", mustJSON(req.Messages[0].Parts), mustJSON(resp.Parts))
	}
	checkParts(t, "response", resp.Parts, []wantPart{{Type: PartText, Text: "AR NAR", Signature: "Er8B"}})
}

func TestGeminiResponseEdges(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want wantResponse
		// choices, when set, are the parts of the further candidates.
		choices [][]wantPart
	}{
		{
			name: "error body",
			body: `{"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}`,
			want: wantResponse{Error: &APIError{Type: "RESOURCE_EXHAUSTED", Code: "429", Message: "Resource has been exhausted"}, Complete: true},
		},
		{
			name: "error in an array after a chunk",
			body: `[{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}],"responseId":"r1","modelVersion":"gemini-2.5-pro"},
				{"error": {"code": "UNAVAILABLE", "message": "overloaded", "status": "UNAVAILABLE"}}]`,
			want: wantResponse{
				ID: "r1", Model: "gemini-2.5-pro",
				Parts: []wantPart{{Type: PartText, Text: "Hi", Partial: true}},
				Error: &APIError{Type: "UNAVAILABLE", Code: "UNAVAILABLE", Message: "overloaded"}, Events: 2,
			},
		},
		{
			name: "error event in SSE",
			body: "data: {\"error\": {\"code\": 500, \"message\": \"internal\", \"status\": \"INTERNAL\"}}\n\n",
			want: wantResponse{Error: &APIError{Type: "INTERNAL", Code: "500", Message: "internal"}, Events: 1},
		},
		{
			name: "blocked prompt",
			body: `{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}}`,
			want: wantResponse{StopReason: "SAFETY", Usage: Usage{Input: 7}, Complete: true},
		},
		{
			name: "blocked prompt in a stream",
			body: `data: {"promptFeedback": {"blockReason": "OTHER"}}` + "\n\n",
			want: wantResponse{StopReason: "OTHER", Complete: true, Events: 1},
		},
		{
			name: "two candidates, one unfinished",
			body: `[{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0},{"content":{"parts":[{"text":"b"}]},"index":1}]},
				{"candidates":[{"content":{"parts":[{"text":"A"}]},"index":1},{"content":{"parts":[{"text":"c"}]},"finishReason":"MAX_TOKENS","index":0}]}]`,
			want: wantResponse{
				Parts:      []wantPart{{Type: PartText, Text: "ac"}},
				StopReason: "MAX_TOKENS", Events: 2,
			},
			choices: [][]wantPart{{{Type: PartText, Text: "bA", Partial: true}}},
		},
		{
			name: "model output of every kind, joined across chunks",
			body: "data: " + `{"candidates":[{"content":{"parts":[{"thought":true,"text":"x"},{"thought":true,"text":"y"},{"text":"t1"}]}}]}` + "\n\n" +
				"data: " + `{"candidates":[{"content":{"parts":[{"text":"t2","thoughtSignature":"S"},{"text":"t3"},{"inlineData":{"mimeType":"image/png","data":"aGVsbG8"}}]}}]}` + "\n\n" +
				"data: " + `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f"}},{"functionCall":{"name":"g","args":{}}},{"executableCode":{"code":"1"}},{"mystery":1},{"text":5}]}}]}` + "\n\n" +
				"data: " + `[1, 2]` + "\n\n" +
				"data: " + `{"candidates":[{"content":{"parts":[]},"finishReason":"STOP","groundingMetadata":{"webSearchQueries":["q"]}}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"thoughtsTokenCount":2,"cachedContentTokenCount":4}}` + "\n\n",
			want: wantResponse{
				Parts: []wantPart{
					{Type: PartThinking, Text: "xy"},
					{Type: PartText, Text: "t1t2", Signature: "S"},
					{Type: PartText, Text: "t3"},
					{Type: PartImage, MediaType: "image/png", Size: 5, SHA256: sha("hello")},
					{Type: PartToolCall, Name: "f"},
					{Type: PartToolCall, Name: "g", Input: `{}`},
					{Type: PartServerToolCall, Name: "code_execution", Input: `{"code":"1"}`},
					{Type: PartOther, Raw: `{"mystery":1}`},
					{Type: PartOther, Raw: `{"text":5}`},
					{Type: PartOther, Raw: `[1,2]`},
					{Type: PartOther, Raw: `{"groundingMetadata":{"webSearchQueries":["q"]}}`},
				},
				StopReason: "STOP", Usage: Usage{Input: 10, Output: 5, CacheRead: 4, Reasoning: 2}, Complete: true, Events: 5,
			},
		},
		{
			name: "empty array",
			body: ` []`,
			want: wantResponse{},
		},
		{
			name: "array cut after its first chunk",
			body: `[{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]},{"candidates":[{"content":{"parts":[{"text":"lo"`,
			want: wantResponse{Parts: []wantPart{{Type: PartText, Text: "Hel", Partial: true}}, Events: 1},
		},
		{
			name: "a signature after a signed part stands alone",
			body: `data: {"candidates":[{"content":{"parts":[{"text":"a","thoughtSignature":"S1"},{"text":"","thoughtSignature":"S2"},{"text":""}]},"finishReason":"STOP"}]}`,
			want: wantResponse{
				Parts:      []wantPart{{Type: PartText, Text: "a", Signature: "S1"}, {Type: PartThinking, Signature: "S2"}},
				StopReason: "STOP", Complete: true, Events: 1,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeResponse(Gemini, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			checkResponse(t, tc.name, r, tc.want)
			if len(r.Choices) != len(tc.choices) {
				t.Fatalf("%d choices, want %d", len(r.Choices), len(tc.choices))
			}
			for i := range tc.choices {
				checkParts(t, fmt.Sprintf("choice %d", i+1), r.Choices[i], tc.choices[i])
			}
		})
	}
}

func TestGeminiResponseErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{``, "at byte 0: no events in 0 bytes"},
		{`{"candidates": [`, "at byte 16: unexpected end of JSON input"},
		{`{"candidates": 5}`, "at byte 16: candidates: want array, got number"},
		{`[{"candidates": [`, "chunk 1 at byte 1: unexpected EOF"},
		{`[{"candidates": ]`, "chunk 1: at byte 16: invalid character ']' looking for beginning of value"},
		{"data: {\"candidates\": [\n\n", "event 1 at byte 0: unexpected end of JSON input"},
	} {
		_, err := DecodeResponse(Gemini, []byte(tc.body))
		want := "gemini response: " + tc.want
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", tc.body, err, want)
		}
	}
}

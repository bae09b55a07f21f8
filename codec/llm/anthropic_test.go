package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// streamsDir returns the shared provider-streams folder (a sibling of the
// repository), skipping the test when it is missing.
func streamsDir(tb testing.TB, sub ...string) string {
	tb.Helper()
	dir := filepath.Join(append([]string{"..", "..", "..", "shared", "provider-streams"}, sub...)...)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("shared fixtures not found: %v", err)
	}
	return dir
}

// readFixture reads a file of the shared provider-streams folder.
func readFixture(tb testing.TB, sub ...string) []byte {
	tb.Helper()
	path := streamsDir(tb, sub...)
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// wantPart is what a test expects of a Part. Text is compared exactly
// unless Len is set, when the text must have Prefix and Suffix and Len
// bytes; Signature is compared exactly unless SigLen is set, when it must
// start with Signature and have SigLen bytes. Raw is compared exactly
// unless RawPrefix or RawSuffix is set.
type wantPart struct {
	Type              PartType
	Text              string
	Prefix, Suffix    string
	Len               int
	Signature         string
	SigLen            int
	Data, ID, Name    string
	Input             string
	IsError           bool
	MediaType, URL    string
	Size              int64
	SHA256            string
	Raw               string
	RawPrefix, RawSfx string
	Partial           bool
	Content           []wantPart
}

// checkParts reports every difference between got and want.
func checkParts(t *testing.T, label string, got []Part, want []wantPart) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d parts, want %d: %s", label, len(got), len(want), mustJSON(got))
		return
	}
	for i, w := range want {
		g := got[i]
		at := fmt.Sprintf("%s: part %d (%s)", label, i, g.Type)
		eq := func(field string, got, want any) {
			t.Helper()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s = %#v, want %#v", at, field, got, want)
			}
		}
		eq("Type", g.Type, w.Type)
		if w.Len > 0 {
			if !strings.HasPrefix(g.Text, w.Prefix) || !strings.HasSuffix(g.Text, w.Suffix) || len(g.Text) != w.Len {
				t.Errorf("%s: Text = %q (%d bytes), want %q…%q (%d bytes)", at, g.Text, len(g.Text), w.Prefix, w.Suffix, w.Len)
			}
		} else {
			eq("Text", g.Text, w.Text)
		}
		if w.SigLen > 0 {
			if !strings.HasPrefix(g.Signature, w.Signature) || len(g.Signature) != w.SigLen {
				t.Errorf("%s: Signature = %q, want %q… (%d bytes)", at, g.Signature, w.Signature, w.SigLen)
			}
		} else {
			eq("Signature", g.Signature, w.Signature)
		}
		eq("Data", g.Data, w.Data)
		eq("ID", g.ID, w.ID)
		eq("Name", g.Name, w.Name)
		eq("Input", string(g.Input), w.Input)
		eq("IsError", g.IsError, w.IsError)
		eq("MediaType", g.MediaType, w.MediaType)
		eq("URL", g.URL, w.URL)
		eq("Size", g.Size, w.Size)
		eq("SHA256", g.SHA256, w.SHA256)
		if w.RawPrefix != "" || w.RawSfx != "" {
			if !bytes.HasPrefix(g.Raw, []byte(w.RawPrefix)) || !bytes.HasSuffix(g.Raw, []byte(w.RawSfx)) {
				t.Errorf("%s: Raw = %s, want %s…%s", at, g.Raw, w.RawPrefix, w.RawSfx)
			}
		} else {
			eq("Raw", string(g.Raw), w.Raw)
		}
		eq("Partial", g.Partial, w.Partial)
		checkParts(t, at+" content", g.Content, w.Content)
	}
}

// mustJSON renders v for failure messages.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// sha returns the hex SHA-256 of s.
func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// wantResponse is what a test expects of a Response besides its parts.
type wantResponse struct {
	ID, Model   string
	Parts       []wantPart
	StopReason  string
	StopDetails string
	Usage       Usage
	Complete    bool
	Events      int
	Error       *APIError
}

// checkResponse reports every difference between r and w.
func checkResponse(t *testing.T, label string, r *Response, w wantResponse) {
	t.Helper()
	eq := func(field string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s = %#v, want %#v", label, field, got, want)
		}
	}
	eq("ID", r.ID, w.ID)
	eq("Model", r.Model, w.Model)
	eq("StopReason", r.StopReason, w.StopReason)
	eq("StopDetails", string(r.StopDetails), w.StopDetails)
	eq("Usage", r.Usage, w.Usage)
	eq("Complete", r.Complete, w.Complete)
	eq("Events", r.Events, w.Events)
	eq("Error", r.Error, w.Error)
	checkParts(t, label, r.Parts, w.Parts)
}

// anthropicSDKPythonWant holds the facts of each anthropic-sdk-python
// stream, read off the files.
var anthropicSDKPythonWant = map[string]wantResponse{
	"basic_response.txt": {
		ID: "msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK", Model: "claude-3-opus-latest",
		Parts:      []wantPart{{Type: PartText, Text: "Hello there!"}},
		StopReason: "end_turn", Usage: Usage{Input: 11, Output: 6}, Complete: true, Events: 9,
	},
	"tool_use_response.txt": {
		ID: "msg_019Q1hrJbZG26Fb9BQhrkHEr", Model: "claude-sonnet-4-20250514",
		Parts: []wantPart{
			{Type: PartText, Text: "I'll check the current weather in Paris for you."},
			{Type: PartToolCall, ID: "toolu_01NRLabsLyVHZPKxbKvkfSMn", Name: "get_weather", Input: `{"location":"Paris"}`},
		},
		StopReason: "tool_use", Usage: Usage{Input: 377, Output: 65}, Complete: true, Events: 15,
	},
	"incomplete_partial_json_response.txt": {
		ID: "msg_01UdjYBBipA9omjYhicnevgq", Model: "claude-3-7-sonnet-20250219",
		Parts: []wantPart{
			{Type: PartText, Text: "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now."},
			{
				Type: PartToolCall, ID: "toolu_01EKqbqmZrGRXy18eN7m9kvY", Name: "make_file", Partial: true,
				Text: "{\"filename\": \"taxes.txt\", \"lines_of_text\": [\n\"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s\",\n\"\",\n\"## INTRODUCTION\",\n\"\",\n\"Filing taxes",
			},
		},
		StopReason: "max_tokens", Usage: Usage{Input: 450, Output: 124}, Complete: true, Events: 16,
	},
	"compaction_response.txt": {
		ID: "msg_01CompactionEncryptedContent01", Model: "claude-opus-4-7",
		Parts: []wantPart{
			{Type: PartCompaction, Text: "Earlier conversation summarized.", Data: "EpwBCioIDxgCEAEYASJALd_opaque_compaction_payload"},
			{Type: PartText, Text: "Hello there!"},
		},
		StopReason: "end_turn", Usage: Usage{Input: 30, Output: 8}, Complete: true, Events: 10,
	},
	"refusal_response.txt": {
		ID: "msg_01RefusalTestMessage123456789", Model: "claude-opus-4-7",
		Parts:       []wantPart{{Type: PartText}},
		StopReason:  "refusal",
		StopDetails: `{"type":"refusal","category":"cyber","explanation":"This request was refused due to policy."}`,
		Usage:       Usage{Input: 20}, Complete: true, Events: 5,
	},
	"fallback_response.txt": {
		ID: "msg_01FallbackModelRelabel000001", Model: "claude-opus-4-7",
		Parts: []wantPart{
			{Type: PartOther, Raw: `{"type":"fallback","from":{"model":"claude-opus-4-7"},"to":{"model":"claude-sonnet-4-5"},"trigger":{"type":"refusal","category":null}}`},
			{Type: PartText, Text: "Hello there!"},
		},
		StopReason: "end_turn", Usage: Usage{Input: 25, Output: 8}, Complete: true, Events: 8,
	},
	"fallback_credit_response.txt": {
		ID: "msg_01FallbackCreditUsage0000001", Model: "claude-sonnet-4-5",
		Parts:      []wantPart{{Type: PartText, Text: "Hello there!"}},
		StopReason: "end_turn", Usage: Usage{Input: 25, Output: 8}, Complete: true, Events: 6,
	},
	"stream-a-refusal.sse": {
		ID: "msg_fixture_a_0001", Model: "claude-fable-5",
		Parts: []wantPart{
			{
				Type:      PartThinking,
				Text:      "Simple educational question about what a solar eclipse is. This is benign general knowledge — definitions are fine. Also the user called me \"claudius\" — I'm Claude. Minor correction or just roll with it politely.",
				Signature: "c3ludGhldGljLXNpZ25hdHVyZS1maXh0dXJlLWEtbm90LWEtcmVhbC1zaWduYXR1cmU=",
			},
			{Type: PartText, Text: "Hi"},
		},
		StopReason:  "refusal",
		StopDetails: `{"type":"refusal","category":null,"explanation":null,"fallback_credit_token":"tok_synthetic_fixture_a","fallback_has_prefill_claim":true}`,
		Usage:       Usage{Input: 28, Output: 106, Reasoning: 67}, Complete: true, Events: 14,
	},
	"stream-a-toolrefusal.sse": {
		ID: "msg_fixture_atool_0001", Model: "claude-fable-5",
		Parts: []wantPart{
			{Type: PartServerToolCall, ID: "srvtoolu_fixture_a_0001", Name: "web_search", Input: `{"query":"solar eclipse viewing safety news 2026"}`},
			{
				Type: PartServerToolResult, ID: "srvtoolu_fixture_a_0001",
				RawPrefix: `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_fixture_a_0001","content":[{"type":"web_search_result","title":"How to Watch a Solar Eclipse Safely | Example Observatory","url":"https://www.example.com/eclipse-viewing-safety",`,
				RawSfx:    `,"page_age":"1 week ago"}],"caller":{"type":"direct"}}`,
			},
			{Type: PartText, Text: "Here's a summary of this year's solar eclipses and how"},
		},
		StopReason:  "refusal",
		StopDetails: `{"type":"refusal","category":null,"explanation":null,"fallback_credit_token":"tok_synthetic_fixture_a","fallback_has_prefill_claim":true}`,
		// message_delta reports input_tokens 28 against message_start's
		// 612; the later, cumulative figure wins.
		Usage: Usage{Input: 28, Output: 106, Reasoning: 67}, Complete: true, Events: 18,
	},
	"stream-b-fallback.sse": {
		ID: "msg_fixture_b_0001", Model: "claude-opus-4-8",
		Parts: []wantPart{{
			Type: PartText, Len: 1312,
			Prefix: " there! Happy to explain.\n\n**Solar eclipses** happen when",
			Suffix: "Just let me know what's sparking your interest!",
		}},
		StopReason: "end_turn", Usage: Usage{Input: 31, Output: 547}, Complete: true, Events: 21,
	},
}

func TestAnthropicSDKPythonStreams(t *testing.T) {
	dir := streamsDir(t, "anthropic", "anthropic-sdk-python")
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(anthropicSDKPythonWant) {
		t.Errorf("%d files in %s, want %d", len(files), dir, len(anthropicSDKPythonWant))
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			want, ok := anthropicSDKPythonWant[name]
			if !ok {
				t.Fatalf("no expectations for %s", name)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r, err := DecodeResponse(AnthropicMessages, body)
			if err != nil {
				t.Fatal(err)
			}
			if r.API != AnthropicMessages || !r.Stream {
				t.Errorf("API %q Stream %v", r.API, r.Stream)
			}
			checkResponse(t, name, r, want)
		})
	}
}

// cassette is a go-vcr v1 cassette, as much of it as the tests read.
type cassette struct {
	Interactions []struct {
		Request struct {
			Body string `yaml:"body"`
			URL  string `yaml:"url"`
		} `yaml:"request"`
		Response struct {
			Body string `yaml:"body"`
			Code int    `yaml:"code"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// readCassette reads a cassette of the anthropic-sdk-go folder.
func readCassette(tb testing.TB, name string) cassette {
	tb.Helper()
	var c cassette
	if err := yaml.Unmarshal(readFixture(tb, "anthropic", "anthropic-sdk-go", name), &c); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return c
}

// cassetteWant is what one interaction decodes to.
type cassetteWant struct {
	req  *Request
	resp wantResponse
}

var (
	sfTool     = []string{"get_weather"}
	sfMaxToken = []Param{{Name: "max_tokens", Value: json.RawMessage(`512`)}}
	sfAsk      = Message{Role: "user", Parts: []Part{{Type: PartText, Text: "Weather in SF in fahrenheit?"}}}
	sfCall     = Part{Type: PartToolCall, ID: "toolu_01RaX2WYWRWCbaeFHssmGJXG", Name: "get_weather", Input: json.RawMessage(`{"city":"San Francisco","units":"fahrenheit"}`)}
)

var anthropicCassetteWant = map[string][]cassetteWant{
	"tool_runner_next_streaming.yaml": {{
		req: &Request{
			API: AnthropicMessages, Model: "claude-3-7-sonnet-latest", Stream: true, Tools: sfTool, Params: sfMaxToken,
			Messages: []Message{{Role: "user", Parts: []Part{{Type: PartText, Text: "Weather in SF?"}}}},
		},
		resp: wantResponse{
			ID: "msg_01P7nF1bmxyzFZjF8zwbUDBM", Model: "claude-3-7-sonnet-20250219",
			Parts: []wantPart{
				{Type: PartText, Text: "I'd be happy to check the weather in San Francisco for you. Let me get that information for you right away."},
				{Type: PartToolCall, ID: "toolu_017QoD96fYwGzCWvLfaPADWg", Name: "get_weather", Input: `{"city":"San Francisco"}`},
			},
			StopReason: "tool_use", Usage: Usage{Input: 394, Output: 79}, Complete: true, Events: 25,
		},
	}},
	"tool_runner_streaming_all.yaml": {
		{
			req: &Request{
				API: AnthropicMessages, Model: "claude-3-7-sonnet-latest", Stream: true, Tools: sfTool, Params: sfMaxToken,
				Messages: []Message{sfAsk},
			},
			resp: wantResponse{
				ID: "msg_01H1pwRRkQxKbUGKi785gT4M", Model: "claude-3-7-sonnet-20250219",
				Parts: []wantPart{
					{Type: PartText, Text: "I'll get the current weather in San Francisco for you in Fahrenheit."},
					{Type: PartToolCall, ID: sfCall.ID, Name: "get_weather", Input: string(sfCall.Input)},
				},
				StopReason: "tool_use", Usage: Usage{Input: 397, Output: 89}, Complete: true, Events: 24,
			},
		},
		{
			req: &Request{
				API: AnthropicMessages, Model: "claude-3-7-sonnet-latest", Stream: true, Tools: sfTool, Params: sfMaxToken,
				Messages: []Message{
					sfAsk,
					{Role: "assistant", Parts: []Part{{Type: PartText, Text: "I'll get the current weather in San Francisco for you in Fahrenheit."}, sfCall}},
					{Role: "user", Parts: []Part{{Type: PartToolResult, ID: sfCall.ID, Text: "The weather in San Francisco is 68 degrees fahrenheit."}}},
				},
			},
			resp: wantResponse{
				ID: "msg_01Hh7yjeiaEaEREnpywjByCo", Model: "claude-3-7-sonnet-20250219",
				Parts:      []wantPart{{Type: PartText, Text: "The current weather in San Francisco is 68 degrees Fahrenheit."}},
				StopReason: "end_turn", Usage: Usage{Input: 509, Output: 19}, Complete: true, Events: 11,
			},
		},
	},
}

func TestAnthropicSDKGoCassettes(t *testing.T) {
	streamsDir(t, "anthropic", "anthropic-sdk-go")
	for name, wants := range anthropicCassetteWant {
		t.Run(name, func(t *testing.T) {
			c := readCassette(t, name)
			if len(c.Interactions) != len(wants) {
				t.Fatalf("%d interactions, want %d", len(c.Interactions), len(wants))
			}
			var prev *Response
			for i, in := range c.Interactions {
				label := fmt.Sprintf("interaction %d", i)
				u, err := url.Parse(in.Request.URL)
				if err != nil {
					t.Fatal(err)
				}
				if api := Detect(u.Path); api != AnthropicMessages {
					t.Errorf("%s: Detect(%q) = %q", label, u.Path, api)
				}
				req, err := DecodeRequest(AnthropicMessages, []byte(in.Request.Body))
				if err != nil {
					t.Fatalf("%s request: %v", label, err)
				}
				if !reflect.DeepEqual(req, wants[i].req) {
					t.Errorf("%s request:\n got %s\nwant %s", label, mustJSON(req), mustJSON(wants[i].req))
				}
				resp, err := DecodeResponse(AnthropicMessages, []byte(in.Response.Body))
				if err != nil {
					t.Fatalf("%s response: %v", label, err)
				}
				checkResponse(t, label, resp, wants[i].resp)
				// The assistant turn sent back in the next request is the
				// previous response, and decodes to the same parts.
				if prev != nil {
					turn := req.Messages[len(req.Messages)-2]
					if !reflect.DeepEqual(turn.Parts, prev.Parts) {
						t.Errorf("%s: assistant turn %s, previous response %s", label, mustJSON(turn.Parts), mustJSON(prev.Parts))
					}
				}
				prev = resp
			}
		})
	}
}

// anthropicStreams returns every Anthropic SSE body of the shared folder,
// by name.
func anthropicStreams(tb testing.TB) map[string][]byte {
	tb.Helper()
	dir := streamsDir(tb, "anthropic")
	out := make(map[string][]byte)
	files, _ := filepath.Glob(filepath.Join(dir, "anthropic-sdk-python", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	for name := range anthropicCassetteWant {
		for i, in := range readCassette(tb, name).Interactions {
			out[fmt.Sprintf("%s#%d", name, i)] = []byte(in.Response.Body)
		}
	}
	return out
}

// cutPoints returns the prefix lengths a truncation test tries: every
// length for a short body, about 600 spread over a long one, and always
// the lengths around each blank line and closing brace near the end.
func cutPoints(body []byte) []int {
	step := max(1, len(body)/600)
	var cuts []int
	for n := 0; n <= len(body); n += step {
		cuts = append(cuts, n)
	}
	for n := max(0, len(body)-64); n <= len(body); n++ {
		cuts = append(cuts, n)
	}
	return cuts
}

// checkPrefix checks the parts decoded from a prefix of a stream against
// those of the whole: the same parts in the same order, each finished
// part equal, the unfinished last one a prefix of its whole.
func checkPrefix(t *testing.T, label string, got, full []Part) {
	t.Helper()
	if len(got) > len(full) {
		t.Errorf("%s: %d parts, whole stream has %d", label, len(got), len(full))
		return
	}
	for i, g := range got {
		f := full[i]
		if !g.Partial {
			if !reflect.DeepEqual(g, f) {
				t.Errorf("%s: part %d = %s, whole stream has %s", label, i, mustJSON(g), mustJSON(f))
			}
			continue
		}
		bad := g.Type != f.Type || g.ID != f.ID || g.Name != f.Name ||
			!strings.HasPrefix(f.Signature, g.Signature)
		switch {
		case len(g.Input) > 0:
			// Tool input that parses is all of it.
			bad = bad || !bytes.Equal(g.Input, f.Input)
		case len(f.Input) > 0:
			// Unparsed input arrives as sent, the whole compacted: not
			// comparable.
		default:
			bad = bad || !strings.HasPrefix(f.Text, g.Text)
		}
		if bad {
			t.Errorf("%s: partial part %d = %s, whole stream has %s", label, i, mustJSON(g), mustJSON(f))
		}
	}
}

func TestAnthropicTruncation(t *testing.T) {
	for name, body := range anthropicStreams(t) {
		t.Run(name, func(t *testing.T) {
			full, err := DecodeResponse(AnthropicMessages, body)
			if err != nil {
				t.Fatal(err)
			}
			firstEvent := bytes.Index(body, []byte("\n\n")) + 2
			// Every stream here ends in message_stop; it has arrived
			// once its closing brace has.
			stop := bytes.LastIndexByte(body, '}') + 1
			for _, n := range cutPoints(body) {
				label := fmt.Sprintf("cut at %d of %d", n, len(body))
				r, err := DecodeResponse(AnthropicMessages, body[:n])
				if err != nil {
					if n >= firstEvent {
						t.Errorf("%s: %v", label, err)
					}
					continue
				}
				if r.Complete != (n >= stop) {
					t.Errorf("%s: Complete = %v, message_stop ends at %d", label, r.Complete, stop)
				}
				if r.ID != full.ID || r.Model != full.Model {
					t.Errorf("%s: ID %q model %q", label, r.ID, r.Model)
				}
				checkPrefix(t, label, r.Parts, full.Parts)
			}
		})
	}
}

package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// decodeInPieces writes body to a Decoder in pieces of n bytes.
func decodeInPieces(api API, body []byte, n int, opts *DecoderOptions) (*Response, error) {
	d := NewDecoder(api, opts)
	for len(body) > 0 {
		k := min(n, len(body))
		d.Write(body[:k])
		body = body[k:]
	}
	return d.Close()
}

// sameDecode checks that a Decoder fed body in pieces of several sizes
// returns what DecodeResponse returns for the whole body.
func sameDecode(t testing.TB, api API, body []byte) {
	t.Helper()
	want, wantErr := DecodeResponse(api, body)
	for _, n := range []int{1, 2, 3, 7, 64, len(body) + 1} {
		got, err := decodeInPieces(api, body, max(n, 1), nil)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("%s, pieces of %d bytes: error %v, want %v\nbody %q", api, n, err, wantErr, body)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s, pieces of %d bytes:\n got %+v\nwant %+v\nbody %q", api, n, got, want, body)
		}
	}
}

var decoderCases = []struct {
	api  API
	body string
}{
	{AnthropicMessages, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":3}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n" +
		"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo ☃\"}}\r\n\r\n" +
		": a comment\r" +
		"event: content_block_stop\rdata: {\"type\":\"content_block_stop\",\"index\":0}\r\r" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\ndata: \"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}"},
	{AnthropicMessages, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}\n\ndata: {\"type\":\"mystery\",\"x\":1}\n\ndata: {\"type\":\"content_bl"},
	{AnthropicMessages, "data: not json\n\n"},
	{AnthropicMessages, "\n\n  "},
	{AnthropicMessages, "  {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}"},
	{OpenAIChat, "data: {\"id\":\"c\",\"model\":\"g\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\"\"}}]}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":2}\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n" +
		"data: [DONE]\n\n"},
	{OpenAIChat, "data: {\"id\":\"c\",\"choices\":[{\"index\":1,\"delta\":{\"content\":\"second\"}},{\"index\":0,\"delta\":{\"content\":\"first\"}}]}\n\ndata: {\"choi"},
	{OpenAIChat, "data: {bad}\n\n"},
	{OpenAIResponses, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\"}}\n\n"},
	{OpenAIResponses, "data: [1,2\n\n"},
	{Gemini, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\r\n\r\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"b\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":2}}\r\n\r\n"},
	{Gemini, "[{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}"},
}

// TestDecoderMatchesDecodeResponse: a body written to a Decoder in pieces
// of any size decodes as DecodeResponse decodes it whole, for every
// protocol, line ending and way of being cut short, and for every shared
// provider stream fixture.
func TestDecoderMatchesDecodeResponse(t *testing.T) {
	for i, c := range decoderCases {
		t.Run(fmt.Sprintf("%d-%s", i, c.api), func(t *testing.T) { sameDecode(t, c.api, []byte(c.body)) })
	}
	for dir, api := range map[string]API{"anthropic": AnthropicMessages, "openai": OpenAIChat, "gemini": Gemini} {
		files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "provider-streams", dir, "*", "*"))
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			for _, a := range []API{api, OpenAIResponses} {
				t.Run(filepath.Base(path)+"-"+string(a), func(t *testing.T) { sameDecode(t, a, b) })
			}
		}
	}
}

// memSpill is a Spill in memory, for tests.
type memSpill struct {
	buf       *bytes.Buffer
	committed *[]string
	aborted   *int
}

func (m memSpill) Write(p []byte) (int, error) { return m.buf.Write(p) }
func (m memSpill) Commit() (string, error) {
	sum := sha256.Sum256(m.buf.Bytes())
	*m.committed = append(*m.committed, m.buf.String())
	return hex.EncodeToString(sum[:]), nil
}
func (m memSpill) Abort() { *m.aborted++ }

func anthropicTextStream(deltas []string, stop bool) []byte {
	var b bytes.Buffer
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for _, d := range deltas {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", d)
	}
	if stop {
		b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}
	return b.Bytes()
}

// TestDecoderSpillsLongText: a streamed text longer than the limit goes
// whole to the spill; the part keeps its first bytes, cut at a character
// boundary, and names the whole by length, digest and trimmed key.
func TestDecoderSpillsLongText(t *testing.T) {
	var committed []string
	aborted := 0
	opts := &DecoderOptions{TextLimit: 10, NewSpill: func() (Spill, error) {
		return memSpill{buf: new(bytes.Buffer), committed: &committed, aborted: &aborted}, nil
	}}
	deltas := []string{"  ab", "cdé", "fghij", "klmnop  \n"}
	whole := strings.Join(deltas, "")
	r, err := decodeInPieces(AnthropicMessages, anthropicTextStream(deltas, true), 5, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Parts[0]
	sum := sha256.Sum256([]byte(whole))
	if p.Text != "  abcdéfg" || p.TextBytes != int64(len(whole)) || p.TextSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("part %+v, want text %q, %d bytes, sha256 %x", p, "  abcdéfg", len(whole), sum)
	}
	if p.TrimSHA256 != TrimKey(whole) {
		t.Errorf("TrimSHA256 %s, want TrimKey %s", p.TrimSHA256, TrimKey(whole))
	}
	if len(committed) != 1 || committed[0] != whole || aborted != 0 {
		t.Errorf("committed %q, aborted %d; want the whole text once", committed, aborted)
	}

	// A short text stays whole, with nothing spilled.
	committed = nil
	r, err = decodeInPieces(AnthropicMessages, anthropicTextStream([]string{"short"}, true), 3, opts)
	if err != nil || r.Parts[0].Text != "short" || r.Parts[0].TextBytes != 0 || len(committed) != 0 {
		t.Errorf("short text: %+v, %v, committed %q", r.Parts, err, committed)
	}

	// OpenAI tool call arguments too long to hold are kept as cut text.
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"write\",\"arguments\":\"{\\\"content\\\":\\\"0123456789abcdef\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"
	r, err = decodeInPieces(OpenAIChat, []byte(body), 4, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Parts[0]; p.Type != PartToolCall || p.Input != nil || p.Name != "write" || p.TextBytes != 30 || len(p.Text) != 10 {
		t.Errorf("tool call %+v", p)
	}

	// A spill that cannot be opened is an error; the response is still
	// returned, its text cut.
	bad := &DecoderOptions{TextLimit: 4, NewSpill: func() (Spill, error) { return nil, errors.New("disk full") }}
	r, err = decodeInPieces(AnthropicMessages, anthropicTextStream(deltas, true), 64, bad)
	if err == nil || !strings.Contains(err.Error(), "disk full") || r == nil || r.Parts[0].Text != "  ab" {
		t.Errorf("spill error: %v, %+v", err, r)
	}
}

// FuzzDecoder: any body, written to a Decoder in two pieces split
// anywhere, decodes as DecodeResponse decodes it whole.
func FuzzDecoder(f *testing.F) {
	for _, c := range decoderCases {
		f.Add(uint8(0), []byte(c.body), uint16(len(c.body)/2))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte, split uint16) {
		apis := []API{AnthropicMessages, OpenAIChat, OpenAIResponses, Gemini}
		api := apis[int(which)%len(apis)]
		want, wantErr := DecodeResponse(api, body)
		k := min(int(split), len(body))
		d := NewDecoder(api, nil)
		d.Write(body[:k])
		d.Write(body[k:])
		got, err := d.Close()
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("split at %d: got %+v, %v; want %+v, %v", k, got, err, want, wantErr)
		}
	})
}

// TestJSONStringLong: a long JSON string unquotes as encoding/json
// unquotes it, escapes, invalid UTF-8 and lone surrogates included.
func TestJSONStringLong(t *testing.T) {
	pad := strings.Repeat("abc ", longString/4)
	for _, lit := range []string{
		`"` + pad + `\n\t\"\\\/\u00e9\ud83d\ude00 é"`,
		`"` + pad + "\xff\xfe" + `"`,
		`"` + pad + `\ud800 lone"`,
		` "` + pad + `" `,
	} {
		var want string
		wantErr := json.Unmarshal([]byte(lit), &want)
		got, ok := jsonString([]byte(lit))
		if wantErr != nil || !ok || got != want {
			t.Errorf("jsonString(%.20q…): %q… %v; encoding/json %q… %v", lit[len(lit)-20:], got[max(len(got)-20, 0):], ok, want[max(len(want)-20, 0):], wantErr)
		}
	}
}

// TestDecodeRequestWithSpills: a long message text of an Anthropic
// request, as a string or a text block, goes whole to the spill while it
// is unquoted in pieces; cut anywhere among escapes, surrogate pairs and
// multi-byte characters, it is the text DecodeRequest gives, and the
// rest of the request decodes the same.
func TestDecodeRequestWithSpills(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 300<<10; i++ {
		fmt.Fprintf(&b, "line %d: \\\"quoted\\\" tab\\t é ☃ \\u00e9\\ud83d\\ude00 😀 \\\\ back\\n", i)
	}
	lit := `"` + b.String() + `"`
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":` + lit + `},{"role":"assistant","content":"short"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":` + lit + `,"cache_control":{"type":"ephemeral"}},{"type":"text","text":"tail"}]}]}`,
	} {
		want, err := DecodeRequest(AnthropicMessages, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		var committed []string
		aborted := 0
		got, err := DecodeRequestWith(AnthropicMessages, []byte(body), &DecoderOptions{TextLimit: 1000, NewSpill: func() (Spill, error) {
			return memSpill{buf: new(bytes.Buffer), committed: &committed, aborted: &aborted}, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		whole := want.Messages[0].Parts[0].Text
		p := got.Messages[0].Parts[0]
		sum := sha256.Sum256([]byte(whole))
		if len(committed) != 1 || committed[0] != whole || aborted != 0 {
			t.Fatalf("spilled %d texts (aborted %d); the first differs from the whole text", len(committed), aborted)
		}
		if p.Type != PartText || !strings.HasPrefix(whole, p.Text) || len(p.Text) < 996 || p.TextBytes != int64(len(whole)) ||
			p.TextSHA256 != hex.EncodeToString(sum[:]) || p.TrimSHA256 != TrimKey(whole) {
			t.Errorf("part: %d bytes of text, %d in all, sha256 %s", len(p.Text), p.TextBytes, p.TextSHA256)
		}
		p.Text, p.TextBytes, p.TextSHA256, p.TrimSHA256 = whole, 0, "", ""
		got.Messages[0].Parts[0] = p
		if !reflect.DeepEqual(got, want) {
			t.Errorf("request:\n got %+v\nwant %+v", got.Messages[1:], want.Messages[1:])
		}
	}
}

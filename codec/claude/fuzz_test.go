package claude

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzClaudeLine: ParseLine never panics; a line it decodes encodes
// (MarshalJSON) to a line that decodes to an equal Record.
func FuzzClaudeLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}`,
		`{"type":"assistant","requestId":"r","message":{"id":"m","model":"claude-opus-4-7","content":[{"type":"thinking","thinking":"","signature":"EpAx"}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":9}}}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"},"caller":{"type":"direct"}},{"type":"mystery","x":[1,2]}]}}`,
		`{"type":"user","toolUseResult":{"stdout":"a","persistedOutputPath":"/x/tool-results/t.txt"},"message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},{"type":"tool_reference","tool_name":"Read"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}],"is_error":true}]}}`,
		`{"type":"system","subtype":"compact_boundary","logicalParentUuid":"p","compactMetadata":{"trigger":"auto","preTokens":170251}}`,
		`{"type":"progress","data":{"type":"agent_progress","agentId":"a1"}}`,
		`{"type":"queue-operation","operation":"enqueue","content":[{"type":"text","text":"q"}]}`,
		`{"type":"summary","summary":"Title","leafUuid":"l"}`,
		`{"type":"user","message":5}`,
		`{"type":"x","type":"y","s":"\ud800"}`,
		"{\"message\":{\"content\":[{\"\":[{\"\":{\"0\":\"\xc3\"}}],\"\":true}]}}",
		`{not json`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseLine(b)
		// A line CheckLine passes is an object ParseLine reads (its
		// fields may still have unexpected kinds).
		if cerr := CheckLine(b); cerr == nil && errors.Is(err, ErrLine) {
			t.Fatalf("CheckLine passes a line ParseLine cannot read: %v", err)
		}
		if err != nil {
			if !errors.Is(err, ErrLine) && !errors.Is(err, ErrShape) {
				t.Fatalf("error %v wraps neither ErrLine nor ErrShape", err)
			}
			return
		}
		r.Kind()
		r.UserKind()
		Count([][]byte{b})
		enc, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("encode %+v: %v", r, err)
		}
		back, err := ParseLine(enc)
		if err != nil {
			t.Fatalf("re-parse %s: %v", enc, err)
		}
		normalize(&r)
		normalize(&back)
		if !reflect.DeepEqual(r, back) {
			t.Fatalf("round trip differs:\n%#v\n%#v\n%s", r.Message, back.Message, enc)
		}
	})
}

// normalize puts a Record's raw JSON fields in one form (an encoding
// may reformat them, and replaces invalid UTF-8).
func normalize(r *Record) {
	for _, v := range []*jsontext.Value{&r.ToolUseResult, &r.CompactMetadata, &r.Content} {
		normValue(v)
	}
	if r.Message != nil {
		normContent(&r.Message.Content)
	}
}

func normContent(c *Content) {
	for i := range c.Blocks {
		b := &c.Blocks[i]
		normValue(&b.Input)
		normValue(&b.Source)
		normValue(&b.Raw)
		if b.Content != nil {
			normContent(b.Content)
		}
	}
}

func normValue(v *jsontext.Value) {
	if len(*v) == 0 {
		*v = nil
		return
	}
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf, options)
	if err := enc.WriteValue(*v); err != nil {
		return
	}
	c := jsontext.Value(bytes.TrimSpace(buf.Bytes()))
	if err := c.Compact(options); err == nil {
		*v = c
	}
}

package llm

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

// checkDecodedParts fails t when a part holds JSON that is not valid, or
// tool input that is not compact.
func checkDecodedParts(t *testing.T, parts []Part) {
	t.Helper()
	for i, p := range parts {
		if len(p.Input) > 0 {
			if !json.Valid(p.Input) {
				t.Fatalf("part %d: invalid Input %q", i, p.Input)
			}
			if again := compactJSON(p.Input); !bytes.Equal(again, p.Input) {
				t.Fatalf("part %d: Input %q is not compact", i, p.Input)
			}
		}
		if len(p.Raw) > 0 && !json.Valid(p.Raw) {
			t.Fatalf("part %d: invalid Raw %q", i, p.Raw)
		}
		checkDecodedParts(t, p.Content)
	}
}

// checkResponseInvariants fails t when r, decoded from body without
// error, breaks a promise of Response.
func checkResponseInvariants(t *testing.T, api API, r *Response) {
	t.Helper()
	if r == nil || r.API != api {
		t.Fatalf("response %#v", r)
	}
	if !r.Stream && r.Events != 0 {
		t.Fatalf("Events %d for a JSON document", r.Events)
	}
	if len(r.StopDetails) > 0 && !json.Valid(r.StopDetails) {
		t.Fatalf("invalid StopDetails %q", r.StopDetails)
	}
	checkDecodedParts(t, r.Parts)
	for _, c := range r.Choices {
		checkDecodedParts(t, c)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("Marshal: %v", err)
	}
}

// fuzzResponse decodes body twice, and a prefix of it, checking that
// nothing panics, that decoding is deterministic, and the invariants.
func fuzzResponse(t *testing.T, api API, body []byte) {
	r1, err1 := DecodeResponse(api, body)
	r2, err2 := DecodeResponse(api, body)
	if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
		t.Fatalf("errors differ: %v, %v", err1, err2)
	}
	if !reflect.DeepEqual(r1, r2) {
		t.Fatalf("decodes differ:\n%s\n%s", mustJSON(r1), mustJSON(r2))
	}
	if err1 == nil {
		checkResponseInvariants(t, api, r1)
	}
	if r, err := DecodeResponse(api, body[:len(body)/2]); err == nil {
		checkResponseInvariants(t, api, r)
	}
}

// fuzzRequest decodes body twice, checking that nothing panics, that
// decoding is deterministic, and that every JSON value it keeps is valid
// and compact, and stays valid when marshaled again.
func fuzzRequest(t *testing.T, api API, body []byte) {
	r1, err1 := DecodeRequest(api, body)
	r2, err2 := DecodeRequest(api, body)
	if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
		t.Fatalf("errors differ: %v, %v", err1, err2)
	}
	if !reflect.DeepEqual(r1, r2) {
		t.Fatalf("decodes differ:\n%s\n%s", mustJSON(r1), mustJSON(r2))
	}
	if err1 != nil {
		return
	}
	for _, m := range r1.Messages {
		checkDecodedParts(t, m.Parts)
		for _, p := range m.Parts {
			if len(p.Input) == 0 {
				continue
			}
			out, err := json.Marshal(p.Input)
			if err != nil || !json.Valid(out) {
				t.Fatalf("Input %q marshals to %q, %v", p.Input, out, err)
			}
		}
	}
	for _, p := range r1.Params {
		if !json.Valid(p.Value) || !bytes.Equal(compactJSON(p.Value), p.Value) {
			t.Fatalf("param %s: value %q not valid compact JSON", p.Name, p.Value)
		}
	}
	if _, err := json.Marshal(r1); err != nil {
		t.Fatalf("Marshal: %v", err)
	}
}

// addFixtures seeds f with every file under the shared provider-streams
// folder dir, when it is there.
func addFixtures(f *testing.F, dir ...string) {
	files, _ := filepath.Glob(filepath.Join(append([]string{"..", "..", "..", "shared", "provider-streams"}, append(dir, "*")...)...))
	for _, path := range files {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
}

// FuzzAnthropicResponse: arbitrary bodies never panic and decode
// deterministically into responses that keep their promises.
func FuzzAnthropicResponse(f *testing.F) {
	addFixtures(f, "anthropic", "anthropic-sdk-python")
	f.Add(sse("message_start", anthStart,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":" 1}"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"message_stop", anthStop))
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzResponse(t, AnthropicMessages, body)
	})
}

// FuzzAnthropicRequest: arbitrary bodies never panic and decode
// deterministically; kept JSON is valid and compact.
func FuzzAnthropicRequest(f *testing.F) {
	f.Add([]byte(anthropicAllBlocks))
	for name := range anthropicCassetteWant {
		path := filepath.Join("..", "..", "..", "shared", "provider-streams", "anthropic", "anthropic-sdk-go", name)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var c cassette
		if yaml.Unmarshal(b, &c) == nil {
			for _, in := range c.Interactions {
				f.Add([]byte(in.Request.Body))
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzRequest(t, AnthropicMessages, body)
	})
}

// FuzzScanned: what roleContent and anthropicBlock.scan read of a
// conversation element or a content block, when they say they can, is
// what json.Unmarshal reads.
func FuzzScanned(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`, `{"ROLE":"a","Role":"b","content":[1]}`, `{"role":null,"content":null}`,
		`{"role":"\u0075ser","c\u006fntent":{}}`, `{"role":7}`, `null`, `{"role":"a\xffb"}`, `{"content":1,"content":2}`,
		` { "role" : "x" , "content" : [ ] } `, `{"role":"x",}`,
		`{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}`,
		`{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"ok"}]}`,
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"},"source":{"url":"u"}}`,
		`{"type":"compaction","content":"c","encrypted_content":"e","encrypted_content":null}`,
		`{"TYPE":"text","Text":"a","text":null,"is_error":null}`, `{"type":"text","te\u017ft":"x"}`, `{"is_error":"yes"}`,
		// A null role after a string one leaves the string; a role of
		// another kind before a string one is an error all the same.
		`{"role":"user","role":null}`, `{"role":"user","ROLE":null,"content":[]}`, `{"role":1,"role":"user"}`,
		`{"role":[],"Role":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, item []byte) {
		if role, content, ok := roleContent(item, "content"); ok {
			var m struct {
				Role    string  `json:"role"`
				Content rawJSON `json:"content"`
			}
			if err := json.Unmarshal(item, &m); err != nil {
				t.Fatalf("roleContent read %q, json.Unmarshal fails: %v", item, err)
			}
			if m.Role != role || !bytes.Equal(m.Content, content) {
				t.Fatalf("%q: roleContent %q %q, json.Unmarshal %q %q", item, role, content, m.Role, m.Content)
			}
		}
		var got anthropicBlock
		if got.scan(item) {
			var want anthropicBlock
			if err := json.Unmarshal(item, &want); err != nil {
				t.Fatalf("scan read %q, json.Unmarshal fails: %v", item, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q:\nscan           %+v\njson.Unmarshal %+v", item, got, want)
			}
		}
	})
}

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

package llm

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The fuzz targets check that no input panics, that decoding is
// deterministic (twice gives equal results) and that every decoded value
// marshals as JSON. Seeds are the hand-written files under
// testdata/fuzz/<name>/ and, when the shared folder exists, its fixtures.

func FuzzChatResponse(f *testing.F) {
	for _, b := range oaiChatFixtures(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) { oaiFuzzResponse(t, OpenAIChat, body) })
}

func FuzzResponsesResponse(f *testing.F) {
	for _, b := range oaiResponsesFixtures(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) { oaiFuzzResponse(t, OpenAIResponses, body) })
}

func FuzzChatRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { oaiFuzzRequest(t, OpenAIChat, body) })
}

func FuzzResponsesRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { oaiFuzzRequest(t, OpenAIResponses, body) })
}

func oaiFuzzResponse(t *testing.T, api API, body []byte) {
	r1, err1 := DecodeResponse(api, body)
	r2, err2 := DecodeResponse(api, body)
	oaiSameResult(t, r1, err1, r2, err2)
	if err1 == nil && r1.API != api {
		t.Fatalf("API %q, want %q", r1.API, api)
	}
}

func oaiFuzzRequest(t *testing.T, api API, body []byte) {
	r1, err1 := DecodeRequest(api, body)
	r2, err2 := DecodeRequest(api, body)
	oaiSameResult(t, r1, err1, r2, err2)
}

// oaiSameResult fails unless two decodings agree, and unless a result
// marshals as JSON.
func oaiSameResult[T any](t *testing.T, r1 *T, err1 error, r2 *T, err2 error) {
	t.Helper()
	if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
		t.Fatalf("errors differ: %v, %v", err1, err2)
	}
	if err1 != nil {
		if r1 != nil {
			t.Fatal("a result with an error")
		}
		return
	}
	if r1 == nil {
		t.Fatal("no result and no error")
	}
	if !reflect.DeepEqual(r1, r2) {
		t.Fatalf("results differ:\n%+v\n%+v", r1, r2)
	}
	if _, err := json.Marshal(r1); err != nil {
		t.Fatalf("result does not marshal: %v", err)
	}
}

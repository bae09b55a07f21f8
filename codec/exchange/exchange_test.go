package exchange

import (
	"reflect"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	rs := RequestStart{RequestID: "req_1", Method: "POST", Path: "/v1/messages", Headers: Headers{"X-Api-Key": {"[redacted:api_key]"}},
		Provider: "anthropic", Upstream: "https://api.anthropic.com/v1/messages", SessionID: "s", SessionSource: "minted", Stream: true, BodyBytes: 10, Mode: "lossless", Redaction: RedactionVersion, Time: 5}
	b, err := Encode(&rs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRequestStart(b)
	if err != nil || !reflect.DeepEqual(got, rs) || got.V != Version {
		t.Fatalf("got %+v, %v", got, err)
	}
	end := ResponseEnd{Status: 200, Duration: 9, Chunks: 3, Complete: true, Usage: &Usage{InputTokens: 1, OutputTokens: 2}}
	b, _ = Encode(&end)
	if got, err := DecodeResponseEnd(b); err != nil || !reflect.DeepEqual(got, end) {
		t.Fatalf("end: %+v %v", got, err)
	}
	if _, err := DecodeError([]byte("{")); err == nil {
		t.Fatal("malformed payload accepted")
	}
	if _, err := Encode(42); err == nil {
		t.Fatal("Encode accepted an int")
	}
}

// FuzzDecode: no payload panics a decoder, and whatever decodes re-encodes
// and decodes to the same value.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"request_id":"r","method":"POST","path":"/v1/messages","session_id":"s","mode":"lossless"}`))
	f.Add([]byte(`{"v":1,"status":200,"duration_ns":5,"usage":{"input_tokens":3}}`))
	f.Add([]byte(`{"v":1,"stage":"upstream","error":"dial tcp: refused"}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeRequestStart(b); err == nil {
			enc, err := Encode(&r)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := DecodeRequestStart(enc)
			r.V = Version
			if err != nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("request start round trip: %+v vs %+v (%v)", r, r2, err)
			}
		}
		if r, err := DecodeResponseEnd(b); err == nil {
			enc, _ := Encode(&r)
			r2, err := DecodeResponseEnd(enc)
			r.V = Version
			if err != nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("response end round trip: %+v vs %+v (%v)", r, r2, err)
			}
		}
		DecodeResponseStart(b)
		DecodeError(b)
	})
}

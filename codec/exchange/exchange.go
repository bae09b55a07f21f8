package exchange

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Version is the payload version written in every object's "v".
const Version = 1

// RedactionVersion names the rule set that redacted a recorded exchange;
// it changes whenever the built-in rules do.
const RedactionVersion = "r2"

// Headers maps canonical header names to their values.
type Headers map[string][]string

// RequestStart opens an exchange.
type RequestStart struct {
	V         int     `json:"v"`
	RequestID string  `json:"request_id"`
	Method    string  `json:"method"`
	Path      string  `json:"path"`            // as the client sent it
	Query     string  `json:"query,omitempty"` // redacted
	Proto     string  `json:"proto,omitempty"`
	Headers   Headers `json:"headers,omitempty"` // redacted, X-Bb-* removed
	Client    string  `json:"client,omitempty"`  // remote address
	Provider  string  `json:"provider"`          // anthropic, openai, gemini, or a route name
	Upstream  string  `json:"upstream"`          // URL the request went to
	// SessionID and SessionSource say which session the exchange belongs
	// to and where that came from: "x-bb-session-id", a header name, "body"
	// (metadata.user_id), "run" (a proxy started by bbengine run for one
	// task), "continued" (the conversation of an earlier request without
	// an id, which this one continues) or "minted".
	SessionID     string `json:"session_id"`
	SessionSource string `json:"session_source"`
	TaskID        string `json:"task_id,omitempty"`
	RunID         string `json:"run_id,omitempty"`
	// Goal is the session goal the request's X-Bb-Session-Goal header
	// stated (percent-decoded, redacted, one line of at most MaxGoal
	// bytes).
	Goal      string `json:"goal,omitempty"`
	Model     string `json:"model,omitempty"`
	Stream    bool   `json:"stream,omitempty"`
	BodyBytes int64  `json:"body_bytes"`
	// Decoded is true when the request body frames hold the decoded
	// body, not the bytes sent: the client compressed it (Headers keep
	// its Content-Encoding) and it held a secret, so the recorder
	// decompressed it to redact it. Unscanned says why a compressed body
	// was recorded as sent without a secret scan (an unknown encoding, a
	// damaged body).
	Decoded   bool   `json:"decoded,omitempty"`
	Unscanned string `json:"unscanned,omitempty"`
	Mode      string `json:"mode"`      // capture mode: lossless, degrade, privacy, passthrough
	Redaction string `json:"redaction"` // RedactionVersion
	Time      int64  `json:"time_ns"`   // when the request arrived
}

// ResponseStart records the upstream's status line and headers.
type ResponseStart struct {
	V       int     `json:"v"`
	Status  int     `json:"status"`
	Proto   string  `json:"proto,omitempty"`
	Headers Headers `json:"headers,omitempty"` // redacted; Content-Encoding says how body chunks are encoded unless ResponseEnd.Decoded
	TTFB    int64   `json:"ttfb_ns"`           // request arrival to response headers
}

// Usage is the token usage seen in a response, in the provider's terms
// mapped to common names.
type Usage struct {
	InputTokens         int64 `json:"input_tokens,omitempty"`
	OutputTokens        int64 `json:"output_tokens,omitempty"`
	CacheReadTokens     int64 `json:"cache_read_tokens,omitempty"`
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty"`
	TotalTokens         int64 `json:"total_tokens,omitempty"`
}

// IsZero reports whether no usage was seen.
func (u Usage) IsZero() bool { return u == Usage{} }

// ResponseEnd closes an exchange, whether it completed or not.
type ResponseEnd struct {
	V      int   `json:"v"`
	Status int   `json:"status"`
	TTFB   int64 `json:"ttfb_ns,omitempty"`
	// Duration is request arrival to the last response byte (or failure).
	Duration      int64 `json:"duration_ns"`
	RequestBytes  int64 `json:"request_bytes"`
	ResponseBytes int64 `json:"response_bytes"`
	Chunks        int64 `json:"chunks"`
	// DroppedChunks counts body chunks not recorded (degrade mode under
	// pressure); DroppedBytes their size.
	DroppedChunks int64 `json:"dropped_chunks,omitempty"`
	DroppedBytes  int64 `json:"dropped_bytes,omitempty"`
	// Decoded is true when the response body frames hold the decoded
	// body, not the bytes sent: the upstream compressed it and it held a
	// secret, so it was decompressed to redact it. Unscanned says why a
	// compressed body was recorded as sent without a secret scan (an
	// unknown encoding, a damaged or oversized body).
	Decoded   bool   `json:"decoded,omitempty"`
	Unscanned string `json:"unscanned,omitempty"`
	// Complete is true when the upstream body ended cleanly and reached
	// the client.
	Complete bool   `json:"complete"`
	Error    string `json:"error,omitempty"`
	Usage    *Usage `json:"usage,omitempty"`
	Model    string `json:"model,omitempty"`
	// SessionID repeats the request's session for readers that only see
	// the end frame (passthrough mode).
	SessionID string `json:"session_id,omitempty"`
}

// Error records a failure of an exchange.
type Error struct {
	V int `json:"v"`
	// Stage is where it failed: "request" (reading the client's body),
	// "upstream" (connecting or waiting for headers), "response" (reading
	// the upstream body), "client" (the client went away), "record" (the
	// WAL refused a frame).
	Stage string `json:"stage"`
	Error string `json:"error"`
	// Received is how many body bytes had arrived at that stage.
	Received int64 `json:"received_bytes"`
	Status   int   `json:"status,omitempty"` // status sent to the client, if any
}

// ErrPayload reports a payload that is not a JSON object of the expected
// shape.
var ErrPayload = errors.New("exchange: malformed payload")

func decode(b []byte, v any, what string) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrPayload, what, err)
	}
	return nil
}

// DecodeRequestStart decodes a request start payload.
func DecodeRequestStart(b []byte) (RequestStart, error) {
	var r RequestStart
	return r, decode(b, &r, "request start")
}

// DecodeResponseStart decodes a response start payload.
func DecodeResponseStart(b []byte) (ResponseStart, error) {
	var r ResponseStart
	return r, decode(b, &r, "response start")
}

// DecodeResponseEnd decodes a response end payload.
func DecodeResponseEnd(b []byte) (ResponseEnd, error) {
	var r ResponseEnd
	return r, decode(b, &r, "response end")
}

// DecodeError decodes an error payload.
func DecodeError(b []byte) (Error, error) {
	var r Error
	return r, decode(b, &r, "error")
}

// Encode returns the JSON payload of v (one of the payload types), with
// V set to Version.
func Encode(v any) ([]byte, error) {
	return AppendPayload(nil, v)
}

package exchange

import (
	"fmt"
	"slices"

	"github.com/bbengine/bbengine/codec/jsonw"
)

// The Append functions write a payload as encoding/json's Marshal does,
// byte for byte (FuzzAppend compares them), without its reflection and
// its sorting of map keys through reflect: the proxy makes these frames
// on a request's path. V is written as Version.

// AppendRequestStart appends r's JSON payload to dst.
func AppendRequestStart(dst []byte, r *RequestStart) []byte {
	b := append(dst, '{')
	b = jsonw.Int(b, "v", Version)
	b = jsonw.Text(b, "request_id", r.RequestID)
	b = jsonw.Text(b, "method", r.Method)
	b = jsonw.Text(b, "path", r.Path)
	b = jsonw.OptText(b, "query", r.Query)
	b = jsonw.OptText(b, "proto", r.Proto)
	b = appendHeaders(b, r.Headers)
	b = jsonw.OptText(b, "client", r.Client)
	b = jsonw.Text(b, "provider", r.Provider)
	b = jsonw.Text(b, "upstream", r.Upstream)
	b = jsonw.Text(b, "session_id", r.SessionID)
	b = jsonw.Text(b, "session_source", r.SessionSource)
	b = jsonw.OptText(b, "task_id", r.TaskID)
	b = jsonw.OptText(b, "run_id", r.RunID)
	b = jsonw.OptText(b, "goal", r.Goal)
	b = jsonw.OptText(b, "model", r.Model)
	b = jsonw.OptBool(b, "stream", r.Stream)
	b = jsonw.Int(b, "body_bytes", r.BodyBytes)
	b = jsonw.OptBool(b, "decoded", r.Decoded)
	b = jsonw.OptText(b, "unscanned", r.Unscanned)
	b = jsonw.Text(b, "mode", r.Mode)
	b = jsonw.Text(b, "redaction", r.Redaction)
	b = jsonw.Int(b, "time_ns", r.Time)
	return append(b, '}')
}

// AppendResponseStart appends r's JSON payload to dst.
func AppendResponseStart(dst []byte, r *ResponseStart) []byte {
	b := append(dst, '{')
	b = jsonw.Int(b, "v", Version)
	b = jsonw.Int(b, "status", int64(r.Status))
	b = jsonw.OptText(b, "proto", r.Proto)
	b = appendHeaders(b, r.Headers)
	b = jsonw.Int(b, "ttfb_ns", r.TTFB)
	return append(b, '}')
}

// AppendResponseEnd appends r's JSON payload to dst.
func AppendResponseEnd(dst []byte, r *ResponseEnd) []byte {
	b := append(dst, '{')
	b = jsonw.Int(b, "v", Version)
	b = jsonw.Int(b, "status", int64(r.Status))
	b = jsonw.OptInt(b, "ttfb_ns", r.TTFB)
	b = jsonw.Int(b, "duration_ns", r.Duration)
	b = jsonw.Int(b, "request_bytes", r.RequestBytes)
	b = jsonw.Int(b, "response_bytes", r.ResponseBytes)
	b = jsonw.Int(b, "chunks", r.Chunks)
	b = jsonw.OptInt(b, "dropped_chunks", r.DroppedChunks)
	b = jsonw.OptInt(b, "dropped_bytes", r.DroppedBytes)
	b = jsonw.OptBool(b, "decoded", r.Decoded)
	b = jsonw.OptText(b, "unscanned", r.Unscanned)
	b = jsonw.Bool(b, "complete", r.Complete)
	b = jsonw.OptText(b, "error", r.Error)
	if u := r.Usage; u != nil {
		b = append(jsonw.Field(b, "usage"), '{')
		b = jsonw.OptInt(b, "input_tokens", u.InputTokens)
		b = jsonw.OptInt(b, "output_tokens", u.OutputTokens)
		b = jsonw.OptInt(b, "cache_read_tokens", u.CacheReadTokens)
		b = jsonw.OptInt(b, "cache_creation_tokens", u.CacheCreationTokens)
		b = jsonw.OptInt(b, "total_tokens", u.TotalTokens)
		b = append(b, '}')
	}
	b = jsonw.OptText(b, "model", r.Model)
	b = jsonw.OptText(b, "session_id", r.SessionID)
	return append(b, '}')
}

// AppendError appends r's JSON payload to dst.
func AppendError(dst []byte, r *Error) []byte {
	b := append(dst, '{')
	b = jsonw.Int(b, "v", Version)
	b = jsonw.Text(b, "stage", r.Stage)
	b = jsonw.Text(b, "error", r.Error)
	b = jsonw.Int(b, "received_bytes", r.Received)
	b = jsonw.OptInt(b, "status", int64(r.Status))
	return append(b, '}')
}

// appendHeaders appends the "headers" field unless h is empty
// (omitempty), its names sorted as encoding/json sorts map keys.
func appendHeaders(b []byte, h Headers) []byte {
	if len(h) == 0 {
		return b
	}
	var stack [32]string
	names := stack[:0]
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	b = append(jsonw.Field(b, "headers"), '{')
	for i, k := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonw.Str(b, k), ':')
		vs := h[k]
		if vs == nil {
			b = append(b, "null"...)
			continue
		}
		b = append(b, '[')
		for j, v := range vs {
			if j > 0 {
				b = append(b, ',')
			}
			b = jsonw.Str(b, v)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// AppendPayload appends the JSON payload of v (one of the payload types)
// to dst, with V set to Version.
func AppendPayload(dst []byte, v any) ([]byte, error) {
	switch p := v.(type) {
	case *RequestStart:
		p.V = Version
		return AppendRequestStart(dst, p), nil
	case *ResponseStart:
		p.V = Version
		return AppendResponseStart(dst, p), nil
	case *ResponseEnd:
		p.V = Version
		return AppendResponseEnd(dst, p), nil
	case *Error:
		p.V = Version
		return AppendError(dst, p), nil
	}
	return dst, fmt.Errorf("exchange: cannot encode %T", v)
}

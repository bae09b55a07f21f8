// Package llm decodes the wire formats of model providers, as recorded by
// the proxy, into one provider-neutral shape: a Request (system prompt,
// conversation, tools, parameters) and a Response (the assistant's parts,
// usage, stop reason, error). It knows four protocols:
//
//	AnthropicMessages  POST /v1/messages               SSE or JSON
//	OpenAIChat         POST /v1/chat/completions       SSE (data: only) or JSON
//	OpenAIResponses    POST /v1/responses              SSE (response.* events) or JSON
//	Gemini             POST …:generateContent          JSON
//	                   POST …:streamGenerateContent    SSE (alt=sse) or a JSON array
//
// Decoding is tolerant of what a flight recorder sees: a stream cut short
// (client gone, upstream reset) decodes as far as it goes, with
// Response.Complete false and the unfinished part marked Partial; unknown
// event and block types are kept as PartOther with their raw JSON, never
// dropped. Bodies must already be decompressed (see codec/httpbody).
//
// Token usage is normalized so that sessions compare across providers:
// Usage.Input counts every prompt token, cached ones included (Anthropic
// reports input_tokens without cache reads and writes, so they are added
// back); Usage.Output counts every generated token, reasoning included
// (Gemini reports thoughts apart, so they are added).
//
// It may import other codec packages (jsonscan) and nothing else of
// bbengine's.
package llm

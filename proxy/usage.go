package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/bbengine/bbengine/codec/exchange"
)

// usageKeys start the usage objects of the providers' responses:
// Anthropic and OpenAI "usage", Gemini "usageMetadata".
var usageKeys = [][]byte{[]byte(`"usage":`), []byte(`"usageMetadata":`)}

// sniffer finds token usage in a response body as it streams by. It runs
// in the recorder, never on the request path. Values merge by maximum, so
// seeing an object twice (it may sit in the carried tail) changes nothing,
// and Anthropic's message_start (input) and message_delta (output) combine.
type sniffer struct {
	tail  []byte
	buf   []byte
	usage exchange.Usage
}

const sniffTail = 2 << 10

func (s *sniffer) feed(p []byte) {
	s.buf = append(append(s.buf[:0], s.tail...), p...)
	data := s.buf
	for _, key := range usageKeys {
		for i := 0; ; {
			j := bytes.Index(data[i:], key)
			if j < 0 {
				break
			}
			i += j + len(key)
			s.decode(data[i:])
		}
	}
	if len(data) > sniffTail {
		data = data[len(data)-sniffTail:]
	}
	s.tail = append(s.tail[:0], data...)
}

// usageObject holds every provider's usage field names.
type usageObject struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	PromptTokens             int64 `json:"prompt_tokens"`
	CompletionTokens         int64 `json:"completion_tokens"`
	TotalTokens              int64 `json:"total_tokens"`
	PromptTokensDetails      struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
}

func (s *sniffer) decode(b []byte) {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var u usageObject
	if json.NewDecoder(bytes.NewReader(b)).Decode(&u) != nil {
		return // incomplete here; the tail brings it back next chunk
	}
	m := func(dst *int64, vs ...int64) {
		for _, v := range vs {
			if v > *dst {
				*dst = v
			}
		}
	}
	m(&s.usage.InputTokens, u.InputTokens, u.PromptTokens, u.PromptTokenCount)
	m(&s.usage.OutputTokens, u.OutputTokens, u.CompletionTokens, u.CandidatesTokenCount)
	m(&s.usage.CacheReadTokens, u.CacheReadInputTokens, u.PromptTokensDetails.CachedTokens, u.InputTokensDetails.CachedTokens, u.CachedContentTokenCount)
	m(&s.usage.CacheCreationTokens, u.CacheCreationInputTokens)
	m(&s.usage.TotalTokens, u.TotalTokens, u.TotalTokenCount)
}

// result returns the usage seen, or nil.
func (s *sniffer) result() *exchange.Usage {
	if s.usage.IsZero() {
		return nil
	}
	u := s.usage
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	return &u
}

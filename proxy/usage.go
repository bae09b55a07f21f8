package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/jsonscan"
)

// sniffer reads token usage from a response body as it streams by, in the
// recorder, never on the request path. It reads usage only where the
// providers put it, never from model output: for a server-sent event
// stream, each complete data line is decoded as one event; any other body
// is decoded as one JSON document (or an array of them, as Gemini's
// non-SSE stream) at the end. Values merge by maximum, so Anthropic's
// message_start (input) and message_delta (output) combine.
type sniffer struct {
	sse     bool
	line    []byte // SSE: the unfinished line
	skip    bool   // SSE: the current line grew past maxLine; ignore it
	body    []byte // JSON: the body so far
	tooBig  bool
	usage   exchange.Usage
	cacheIn bool // Anthropic style: input_tokens excludes cached tokens
}

const (
	maxSniffLine = 1 << 20
	maxSniffBody = 8 << 20
)

func (s *sniffer) feed(p []byte) {
	if !s.sse {
		if len(s.body)+len(p) > maxSniffBody {
			s.tooBig = true
			return
		}
		s.body = append(s.body, p...)
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(s.line)+len(p) > maxSniffLine {
				s.skip = true
				s.line = s.line[:0]
			} else if !s.skip {
				s.line = append(s.line, p...)
			}
			return
		}
		if !s.skip {
			if len(s.line) > 0 {
				s.line = append(s.line, p[:i]...)
				s.event(s.line)
			} else {
				s.event(p[:i])
			}
		}
		s.line, s.skip = s.line[:0], false
		p = p[i+1:]
	}
}

// event reads one SSE line.
func (s *sniffer) event(l []byte) {
	data, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"usage`)) {
		return
	}
	s.doc(bytes.TrimSpace(data))
}

// finish decodes a non-SSE body.
func (s *sniffer) finish() {
	if s.sse || s.tooBig {
		return
	}
	b := bytes.TrimSpace(s.body)
	if len(b) > 0 && b[0] == '[' {
		var docs []json.RawMessage
		if json.Unmarshal(b, &docs) == nil {
			for _, d := range docs {
				s.doc(d)
			}
		}
		return
	}
	s.doc(b)
}

// usageObject holds every provider's usage field names.
type usageObject struct {
	InputTokens              int64  `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	PromptTokens             int64  `json:"prompt_tokens"`
	CompletionTokens         int64  `json:"completion_tokens"`
	TotalTokens              int64  `json:"total_tokens"`
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
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

// doc reads the places usage sits in a response or an event: top-level
// usage (Anthropic message and message_delta, OpenAI chat), message.usage
// (Anthropic message_start), response.usage (OpenAI Responses),
// usageMetadata (Gemini).
func (s *sniffer) doc(b []byte) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	// Only the usage members are decoded: the rest of the document (the
	// model's reply) is passed over by a scanner that validates it as
	// encoding/json would, at memory speed. Names match as encoding/json
	// matches them, ignoring ASCII case, and a repeated member decodes
	// into the object already there.
	var e struct{ usage, meta, msg, resp *usageObject }
	into := func(dst **usageObject, v []byte) bool {
		if string(v) == "null" {
			*dst = nil
			return true
		}
		if *dst == nil {
			*dst = new(usageObject)
		}
		if u, ok := plainUsage(**dst, v); ok {
			**dst = u
			return true
		}
		return json.Unmarshal(v, *dst) == nil
	}
	nested := func(dst **usageObject, v []byte) bool {
		if string(v) == "null" {
			*dst = nil
			return true
		}
		if v[0] != '{' {
			return false
		}
		ok := true
		err := jsonscan.Fields(v, func(k, v []byte) bool {
			if bytes.EqualFold(k, []byte("usage")) {
				ok = into(dst, v)
			}
			return ok
		})
		return ok && err == nil
	}
	ok := true
	err := jsonscan.Fields(b, func(k, v []byte) bool {
		switch {
		case bytes.EqualFold(k, []byte("usage")):
			ok = into(&e.usage, v)
		case bytes.EqualFold(k, []byte("usageMetadata")):
			ok = into(&e.meta, v)
		case bytes.EqualFold(k, []byte("message")):
			ok = nested(&e.msg, v)
		case bytes.EqualFold(k, []byte("response")):
			ok = nested(&e.resp, v)
		}
		return ok
	})
	if !ok || err != nil {
		return
	}
	s.merge(e.usage)
	s.merge(e.meta)
	s.merge(e.msg)
	s.merge(e.resp)
}

func (s *sniffer) merge(u *usageObject) {
	if u == nil {
		return
	}
	m := func(dst *int64, vs ...int64) {
		for _, v := range vs {
			if v > *dst {
				*dst = v
			}
		}
	}
	var cacheRead, cacheCreate int64
	if u.CacheReadInputTokens != nil || u.CacheCreationInputTokens != nil {
		s.cacheIn = true
		if u.CacheReadInputTokens != nil {
			cacheRead = *u.CacheReadInputTokens
		}
		if u.CacheCreationInputTokens != nil {
			cacheCreate = *u.CacheCreationInputTokens
		}
	}
	// Gemini's input counts the prompt tokens of tool results (search)
	// apart, and its output the thinking tokens apart: both are billed,
	// and codec/llm counts them in (its Gemini usage).
	m(&s.usage.InputTokens, u.InputTokens, u.PromptTokens, u.PromptTokenCount+u.ToolUsePromptTokenCount)
	m(&s.usage.OutputTokens, u.OutputTokens, u.CompletionTokens, u.CandidatesTokenCount+u.ThoughtsTokenCount)
	m(&s.usage.CacheReadTokens, cacheRead, u.PromptTokensDetails.CachedTokens, u.InputTokensDetails.CachedTokens, u.CachedContentTokenCount)
	m(&s.usage.CacheCreationTokens, cacheCreate)
	m(&s.usage.TotalTokens, u.TotalTokens, u.TotalTokenCount)
}

// result returns the usage seen, or nil. When the provider gave no total,
// it is input plus output, plus the cached tokens where the input count
// excludes them (Anthropic), so totals compare across providers.
func (s *sniffer) result() *exchange.Usage {
	s.finish()
	if s.usage.IsZero() {
		return nil
	}
	u := s.usage
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
		if s.cacheIn {
			u.TotalTokens += u.CacheReadTokens + u.CacheCreationTokens
		}
	}
	return &u
}

// usageCounts are the names of the usageObject members plainUsage
// reads, in the order of plainUsage's counts; the two cached counts,
// *int64, come first. TestUsageCountsNames checks them against the
// struct's tags.
var usageCounts = [...]string{
	"cache_read_input_tokens", "cache_creation_input_tokens",
	"input_tokens", "output_tokens", "prompt_tokens", "completion_tokens", "total_tokens",
	"promptTokenCount", "candidatesTokenCount", "totalTokenCount", "cachedContentTokenCount",
	"thoughtsTokenCount", "toolUsePromptTokenCount",
}

// usageDetails are the nested members plainUsage leaves to
// json.Unmarshal.
var usageDetails = [...]string{"prompt_tokens_details", "input_tokens_details"}

// plainUsage decodes v, a usage object, into a copy of u as
// json.Unmarshal would, for the common case only: members named exactly
// as usageObject's, with non-negative integers (or null) as values. It
// reports false, having decided nothing, for anything else (a name that
// matches one only when case is ignored, a nested object, another kind
// of value, a syntax error), which json.Unmarshal then decodes.
// FuzzSnifferDoc compares the two.
func plainUsage(u usageObject, v []byte) (usageObject, bool) {
	if len(v) == 0 || v[0] != '{' {
		return u, false
	}
	cached := [...]**int64{&u.CacheReadInputTokens, &u.CacheCreationInputTokens}
	counts := [...]*int64{nil, nil, &u.InputTokens, &u.OutputTokens, &u.PromptTokens, &u.CompletionTokens,
		&u.TotalTokens, &u.PromptTokenCount, &u.CandidatesTokenCount, &u.TotalTokenCount,
		&u.CachedContentTokenCount, &u.ThoughtsTokenCount, &u.ToolUsePromptTokenCount}
	ok := true
	err := jsonscan.Fields(v, func(k, val []byte) bool {
		i := slices.Index(usageCounts[:], string(k))
		if i < 0 {
			// encoding/json matches names ignoring case.
			fold := func(name string) bool { return bytes.EqualFold(k, []byte(name)) }
			ok = !slices.ContainsFunc(usageCounts[:], fold) && !slices.ContainsFunc(usageDetails[:], fold)
			return ok // else a member usageObject does not have
		}
		if string(val) == "null" {
			if i < len(cached) {
				*cached[i] = nil
			}
			return true // null leaves an integer as it was
		}
		if len(val) > 18 || strings.Trim(string(val), "0123456789") != "" {
			ok = false // a sign, a fraction, another kind, or a long number
			return false
		}
		n, err := strconv.ParseInt(string(val), 10, 64)
		if ok = err == nil; !ok {
			return false
		}
		if i < len(cached) {
			c := n
			*cached[i] = &c
		} else {
			*counts[i] = n
		}
		return true
	})
	if !ok || err != nil {
		return u, false
	}
	return u, true
}

package proxy

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/redact"
)

// sensitiveHeaders are replaced by [redacted:<kind>] in what is recorded;
// they are always forwarded unchanged.
var sensitiveHeaders = map[string]string{
	"Authorization":             "authorization",
	"Proxy-Authorization":       "authorization",
	"X-Api-Key":                 "api_key",
	"Api-Key":                   "api_key",
	"Anthropic-Api-Key":         "api_key",
	"Openai-Api-Key":            "api_key",
	"X-Goog-Api-Key":            "api_key",
	"Cf-Aig-Authorization":      "authorization",
	"X-Auth-Token":              "token",
	"X-Amz-Security-Token":      "token",
	"Cookie":                    "cookie",
	"Set-Cookie":                "cookie",
	"Chatgpt-Account-Id":        "account_id",
	"Www-Authenticate":          "authorization",
	"Proxy-Authenticate":        "authorization",
	"Anthropic-Organization-Id": "organization",
	"Openai-Organization":       "organization",
}

// sensitiveQuery are query parameters redacted in the recorded query.
var sensitiveQuery = map[string]bool{"key": true, "api_key": true, "apikey": true, "access_token": true, "token": true}

// Redactor replaces secrets in recorded bytes (codec/redact) and in
// headers and queries. It is safe for concurrent use.
type Redactor struct {
	*redact.Redactor
	// clean remembers header values the rules found nothing in: an
	// agent sends the same dozen on every request. It holds no secret
	// (a value with one is never added), at most maxClean values of at
	// most maxCleanLen bytes.
	clean  sync.Map // string -> struct{}
	nclean atomic.Int64
}

const (
	maxClean    = 4096
	maxCleanLen = 512
)

// header redacts one header value.
func (r *Redactor) header(v string) string {
	if len(v) > maxCleanLen {
		return r.String(v)
	}
	if _, ok := r.clean.Load(v); ok {
		return v
	}
	red := r.String(v)
	if red == v && r.nclean.Load() < maxClean {
		if _, loaded := r.clean.LoadOrStore(v, struct{}{}); !loaded {
			r.nclean.Add(1)
		}
	}
	return red
}

// NewRedactor returns a redactor with the built-in rules plus extra
// patterns, each "kind=regexp" or a bare regexp (kind "custom").
func NewRedactor(extra []string) (*Redactor, error) {
	r, err := redact.New(extra)
	if err != nil {
		return nil, err
	}
	return &Redactor{Redactor: r}, nil
}

// Headers returns a copy of h fit for the log: sensitive headers replaced
// by a marker, X-Bb-* headers dropped, body rules applied to the rest.
func (r *Redactor) Headers(h http.Header) exchange.Headers {
	out := make(exchange.Headers, len(h))
	for k, vs := range h {
		if strings.HasPrefix(k, "X-Bb-") {
			continue
		}
		if kind, ok := sensitiveHeaders[k]; ok {
			red := make([]string, len(vs))
			for i := range vs {
				red[i] = "[redacted:" + kind + "]"
			}
			out[k] = red
			continue
		}
		// The values are shared with h unless one changes: h is the
		// request's header as it arrived (the outbound request has a
		// copy) or a clone of the response's, neither written after.
		out[k] = vs
		for i, v := range vs {
			if red := r.header(v); red != v {
				cp := slices.Clone(vs)
				cp[i] = red
				for j := i + 1; j < len(vs); j++ {
					cp[j] = r.header(vs[j])
				}
				out[k] = cp
				break
			}
		}
	}
	return out
}

// Query returns the raw query with secret parameters redacted.
func (r *Redactor) Query(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return r.String(raw)
	}
	changed := false
	for k, vs := range q {
		if sensitiveQuery[strings.ToLower(k)] {
			for i := range vs {
				vs[i] = "[redacted:api_key]"
			}
			changed = true
		}
	}
	if !changed {
		return r.String(raw)
	}
	return r.String(q.Encode())
}

// maxHold bounds how many bytes a stream holds back waiting for the rest
// of a possible secret; maxPEM how long a private key block may be.
const (
	maxHold = 4 << 10
	maxPEM  = 64 << 10
)

// stream redacts a body that arrives in chunks, so that a secret split
// across two chunks is still found: it holds back what redact.Cut says
// may continue (and an unfinished private key block) until the next
// chunk or the end. It is not safe for concurrent use.
type stream struct {
	r    *Redactor
	held []byte // bytes waiting for the next chunk
	buf  []byte // held + the new chunk
}

// chunk returns the redacted bytes of p that are ready to record; at the
// end call it with last set to flush what is held. The result may alias p
// or the stream's buffer: copy it before the next call.
func (s *stream) chunk(p []byte, last bool) []byte {
	data := p
	if len(s.held) > 0 {
		s.buf = append(append(s.buf[:0], s.held...), p...)
		data = s.buf
	}
	cut := len(data)
	if !last {
		cut = redact.Cut(data, maxHold)
		// Never cut inside a private key block: hold it from its BEGIN.
		if i := redact.PEMHold(data[:cut]); i >= 0 && len(data)-i < maxPEM {
			cut = i
		}
	}
	out := s.r.Bytes(data[:cut])
	s.held = append(s.held[:0], data[cut:]...)
	return out
}

// keep holds p back whole, unscanned, for a call with last set that is
// known to follow (a small reply recorded with its end): the body is
// scanned once, not once as chunks and again at the end.
func (s *stream) keep(p []byte) { s.held = append(s.held, p...) }

package proxy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/bbengine/bbengine/codec/exchange"

	"github.com/bbengine/bbengine/codec/jsonscan"
)

// sessionHeaders are the agents' own session headers, in order of trust.
var sessionHeaders = []string{
	"X-Claude-Code-Session-Id", // Claude Code 2.1.86+
	"Session-Id",               // Codex
	"Session_id",               // older Codex
	"X-Session-Affinity",       // opencode
	"X-Session-Id",             // opencode, others
	"X-Qwen-Code-Session-Id",
}

// sessionGoal returns the goal an X-Bb-Session-Goal header value
// states, fit for the log. Header values are ASCII, so a goal in another
// script comes percent-encoded as UTF-8: a value with escapes is decoded
// (one that does not decode, "raise coverage to 90%", is taken as it
// is). Invalid UTF-8 is replaced, control characters and runs of white
// space become one space, secrets are redacted, and the result is cut to
// exchange.MaxGoal bytes at a rune boundary.
func sessionGoal(red *Redactor, v string) string {
	if v == "" {
		return ""
	}
	if strings.Contains(v, "%") {
		if d, err := url.PathUnescape(v); err == nil {
			v = d
		}
	}
	v = strings.ToValidUTF8(v, "\uFFFD")
	v = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, v)
	v = red.String(strings.Join(strings.Fields(v), " "))
	if len(v) > exchange.MaxGoal {
		i := exchange.MaxGoal
		for i > 0 && !utf8.RuneStart(v[i]) {
			i--
		}
		v = v[:i]
	}
	return v
}

// headerSession returns the session id from the request headers and the
// header it came from.
func headerSession(h http.Header) (string, string) {
	if v := h.Get("X-Bb-Session-Id"); exchange.ValidID(v) {
		return v, "x-bb-session-id"
	}
	for _, k := range sessionHeaders {
		if v := h.Get(k); exchange.ValidID(v) {
			return v, http.CanonicalHeaderKey(k)
		}
	}
	return "", ""
}

// bodyInfo is what the recorder reads from a JSON request body.
type bodyInfo struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Metadata struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

var legacySession = regexp.MustCompile(`_session_([0-9a-fA-F-]{36})`)

// readBody extracts the model, stream flag and Claude Code's session id
// (metadata.user_id: a JSON string with session_id since 2.1.78, else
// user_…_account_…_session_<uuid>) from a request body. It runs off the
// request path, in the recorder.
func readBody(body []byte) (model string, stream bool, session string) {
	if len(body) == 0 || body[0] != '{' && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return "", false, ""
	}
	// The body resends the whole conversation: split it with jsonscan
	// (validating it as json.Unmarshal would) and decode only the three
	// members read here, matched as encoding/json matches field names.
	var bi bodyInfo
	var bad error
	err := jsonscan.Fields(body, func(k, v []byte) bool {
		switch {
		case bytes.EqualFold(k, []byte("model")):
			bad = json.Unmarshal(v, &bi.Model)
		case bytes.EqualFold(k, []byte("stream")):
			bad = json.Unmarshal(v, &bi.Stream)
		case bytes.EqualFold(k, []byte("metadata")):
			bad = json.Unmarshal(v, &bi.Metadata)
		}
		return bad == nil
	})
	if err != nil || bad != nil {
		return "", false, ""
	}
	uid := bi.Metadata.UserID
	if uid != "" {
		var inner struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(uid), &inner) == nil && exchange.ValidID(inner.SessionID) {
			session = inner.SessionID
		} else if m := legacySession.FindStringSubmatch(uid); m != nil {
			session = m[1]
		}
	}
	return bi.Model, bi.Stream, session
}

// newID returns a random id with a prefix, e.g. "req_3f9a…" (16 random
// bytes, hex).
func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return prefix + hex.EncodeToString(b[:])
}

// pathModel reads the model and streaming from a Gemini path
// (/v1beta/models/gemini-2.5-pro:streamGenerateContent), which puts both
// there rather than in the body.
func pathModel(path string) (model string, stream, ok bool) {
	i := strings.Index(path, "/models/")
	if i < 0 {
		return "", false, false
	}
	rest := path[i+len("/models/"):]
	m, method, found := strings.Cut(rest, ":")
	if !found || m == "" || strings.Contains(m, "/") {
		return "", false, false
	}
	switch method {
	case "streamGenerateContent":
		return m, true, true
	case "generateContent":
		return m, false, true
	}
	return "", false, false
}

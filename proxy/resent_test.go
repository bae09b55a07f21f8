package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// resentSecrets are placed in bodies; each must never be recorded.
var resentSecrets = []struct{ text, secret string }{
	{"use sk-ant-api03-Qm7vX2pL9sKd4TfR8wYb3NcJ6hGe1ZuA5oVi0qWx key", "Qm7vX2pL9sKd4TfR8wYb3NcJ6hGe1ZuA5oVi0qWx"},
	{"clone with ghp_Vb7nM3kL9qW2xR5tY8pZ4cJ6hF1dS0aG3eKi please", "ghp_Vb7nM3kL9qW2xR5tY8pZ4cJ6hF1dS0aG3eKi"},
	{"[default]\naws_access_key_id = AKIAQYLPMN5HHHFPZAM2\naws_secret_access_key = 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\n", "tVDkxNZm8TBQ4Fx7nB0dW6rVv9s2cG3jLq1yPe5A"},
	{"notify xoxb-2048123456-4096123456-Tq8Wm3Lp7Xz2Vk9Rn4Sb6Yc1 done", "Tq8Wm3Lp7Xz2Vk9Rn4Sb6Yc1"},
	{"DB_PASSWORD=hunter2-Zq9Lm4Xv8Rb3 ./migrate", "hunter2-Zq9Lm4Xv8Rb3"},
}

// growingBodies is a session of JSON request bodies, each resending the
// last one's messages (with the newest changed, as a moved cache marker
// changes it) and adding new ones; now and then a secret sits in a new
// message, and now and then an old message is edited to hold one.
func growingBodies(r *rand.Rand, turns int) (bodies [][]byte, secrets []string) {
	words := strings.Fields("func main return err nil if for range the build test passes fails with output of go vet ./... line file.go:12 import fmt os strings")
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			switch r.IntN(10) {
			case 0:
				b.WriteString("\n")
			case 1:
				b.WriteString("\t")
			default:
				b.WriteString(" ")
			}
		}
		return b.String()
	}
	var msgs []map[string]any
	for i := 0; i < turns; i++ {
		if n := len(msgs); n > 0 {
			delete(msgs[n-1], "cache_control")
		}
		for range 2 {
			t := text(500 + r.IntN(12000))
			if r.IntN(25) == 0 {
				s := resentSecrets[r.IntN(len(resentSecrets))]
				at := r.IntN(len(t))
				t = t[:at] + " " + s.text + " " + t[at:]
				secrets = append(secrets, s.secret)
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": t})
		}
		if len(msgs) > 4 && r.IntN(15) == 0 {
			s := resentSecrets[r.IntN(len(resentSecrets))]
			m := msgs[r.IntN(len(msgs)-2)]
			m["content"] = m["content"].(string) + " " + s.text
			secrets = append(secrets, s.secret)
		}
		msgs[len(msgs)-1]["cache_control"] = map[string]any{"type": "ephemeral"}
		b, err := json.Marshal(map[string]any{"model": "claude-x", "messages": msgs})
		if err != nil {
			panic(err)
		}
		bodies = append(bodies, b)
	}
	return bodies, secrets
}

// randomMarks cuts body into network reads.
func randomMarks(r *rand.Rand, n int) []mark {
	var ms []mark
	for end := 0; end < n; {
		end = min(n, end+1+r.IntN(40<<10))
		ms = append(ms, mark{end: end, t: int64(len(ms))})
	}
	return ms
}

func recordBody(rs *resent, red *Redactor, session string, body []byte, marks []mark) []byte {
	var out []byte
	rs.redact(session, body, marks, red, func(_ int64, b []byte, _ bool) { out = append(out, b...) })
	return out
}

// TestResentSameAsScanning: remembering the clean segments of a
// session's last request changes nothing that is recorded: every body of
// a growing session with secrets in new and in edited old messages is
// recorded byte for byte as without the memory, no secret is recorded,
// and a body without one is recorded as sent.
func TestResentSameAsScanning(t *testing.T) {
	red, err := NewRedactor(nil)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 7))
		bodies, secrets := growingBodies(r, 30)
		on, off := newResent(), newResent()
		off.off = true
		skipped := 0
		for i, body := range bodies {
			marks := randomMarks(r, len(body))
			prev := on.sessions["s"]
			got := recordBody(on, red, "s", body, marks)
			for j, s := range on.sessions["s"] {
				if j < len(prev) && prev[j] == s && !s.dirty {
					skipped++
				}
			}
			want := recordBody(off, red, "s", body, marks)
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d turn %d: recorded with the memory differs from without it", seed, i)
			}
			for _, s := range secrets {
				if bytes.Contains(got, []byte(s)) {
					t.Fatalf("seed %d turn %d: secret %s recorded", seed, i, s)
				}
			}
			if bytes.Equal(red.Bytes(body), body) && !bytes.Equal(got, body) {
				t.Fatalf("seed %d turn %d: a body without a secret was changed", seed, i)
			}
		}
		if skipped == 0 {
			t.Fatalf("seed %d: no resent segment was remembered", seed)
		}
	}
}

// TestResentBounded: the memory forgets sessions past maxResent.
func TestResentBounded(t *testing.T) {
	red, _ := NewRedactor(nil)
	rs := newResent()
	for i := range maxResent + 10 {
		rs.segments(fmt.Sprint("s", i), []byte(`{"messages":[]}`), red)
	}
	if len(rs.sessions) > maxResent {
		t.Fatalf("%d sessions remembered, want at most %d", len(rs.sessions), maxResent)
	}
}

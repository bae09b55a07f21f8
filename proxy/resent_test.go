package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
	"github.com/golang/snappy"
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

// recordBody returns what rs has the WAL store of body, decompressed,
// and how many of its frames were stored compressed.
func recordBody(t *testing.T, rs *resent, red *Redactor, session string, body []byte, marks []mark) (out []byte, compressed int) {
	rs.redact(session, body, marks, red, func(_ int64, b []byte, isSnappy bool, raw int, _ bool) {
		if isSnappy {
			compressed++
			d, err := snappy.Decode(nil, b)
			if err != nil || len(d) != raw || len(b) >= raw {
				t.Fatalf("a stored block of %d bytes for %d: %d decoded, %v", len(b), raw, len(d), err)
			}
			b = d
		} else if len(b) != raw {
			t.Fatalf("a stored segment of %d bytes says %d", len(b), raw)
		}
		out = append(out, b...)
	})
	return out, compressed
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
		on, off := newResent(true), newResent(false)
		off.off = true
		skipped, reused := 0, 0
		for i, body := range bodies {
			marks := randomMarks(r, len(body))
			prev := on.sessions["s"]
			got, compressed := recordBody(t, on, red, "s", body, marks)
			if compressed == 0 {
				t.Fatalf("seed %d turn %d: no segment stored compressed", seed, i)
			}
			for j, s := range on.sessions["s"] {
				if j < len(prev) && prev[j].end == s.end && prev[j].sum == s.sum {
					skipped++
					if len(s.stored) > 0 && &s.stored[0] == &prev[j].stored[0] {
						reused++
					}
				}
			}
			want, _ := recordBody(t, off, red, "s", body, marks)
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
		if skipped == 0 || reused == 0 {
			t.Fatalf("seed %d: %d resent segments remembered, %d written as they were stored", seed, skipped, reused)
		}
		if on.kept != storedLen(on.sessions["s"]) {
			t.Fatalf("seed %d: %d bytes counted as kept, %d are", seed, on.kept, storedLen(on.sessions["s"]))
		}
	}
}

// TestResentBounded: the memory forgets sessions past maxResent, and
// past maxKept bytes of stored segments.
func TestResentBounded(t *testing.T) {
	red, _ := NewRedactor(nil)
	rs := newResent(true)
	small := []byte(`{"messages":[]}`)
	for i := range maxResent + 10 {
		recordBody(t, rs, red, fmt.Sprint("small", i), small, []mark{{end: len(small)}})
	}
	if len(rs.sessions) > maxResent {
		t.Fatalf("%d sessions remembered, want at most %d", len(rs.sessions), maxResent)
	}
	// 500 KB that compress about 3 times: past 2 MiB in 20 sessions.
	rs.maxKept = 2 << 20
	bodies, _ := growingBodies(rand.New(rand.NewPCG(1, 2)), 40)
	body := bodies[len(bodies)-1]
	counted := func() (n int) {
		for _, segs := range rs.sessions {
			n += storedLen(segs)
		}
		return n
	}
	for i := range 20 {
		recordBody(t, rs, red, fmt.Sprint("big", i), body, []mark{{end: len(body)}})
		if rs.kept > rs.maxKept || rs.kept != counted() {
			t.Fatalf("after %d sessions: %d bytes counted as kept, %d are, at most %d allowed", i+1, rs.kept, counted(), rs.maxKept)
		}
	}
	if rs.kept < rs.maxKept/2 || len(rs.sessions) >= maxResent {
		t.Fatalf("%d sessions remembered keeping %d bytes, want about %d bytes", len(rs.sessions), rs.kept, rs.maxKept)
	}
}

// TestGrowingSessionRecorded: a growing session through the proxy, on a
// WAL that compresses: the upstream gets every body unchanged; the WAL
// holds each body redacted segment by segment, with no secret in any
// frame (decoded) or file; and a resent segment is written as the frame
// the last request stored.
func TestGrowingSessionRecorded(t *testing.T) {
	dir := t.TempDir()
	log, err := wal.Open(dir, &wal.Options{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	up := newUpstream(t)
	p, err := New(log, &Options{Upstreams: map[string]string{"anthropic": up.URL}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	bodies, secrets := growingBodies(rand.New(rand.NewPCG(3, 5)), 24)
	if len(secrets) == 0 {
		t.Fatal("the session holds no secret")
	}
	for i, body := range bodies {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/messages", bytes.NewReader(body))
		req.Header.Set("X-Bb-Session-Id", "ses_growing")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != anthropicSSE {
			t.Fatalf("turn %d: %d", i, resp.StatusCode)
		}
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	up.mu.Lock()
	for i, got := range up.bodies {
		if !bytes.Equal(got, bodies[i]) {
			t.Fatalf("turn %d: the upstream got another body", i)
		}
	}
	up.mu.Unlock()

	red, _ := NewRedactor(nil)
	r := log.NewReader()
	defer r.Close()
	var a exchange.Assembler
	stored := map[uint64][][]byte{} // request body frames as stored, by exchange
	compressed, reused := 0, 0
	var prev [][]byte
	for r.Next() {
		h := r.Header()
		pl, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(pl, []byte(s)) {
				t.Fatalf("frame at %d holds secret %s", r.Offset(), s)
			}
		}
		if h.Kind == frame.KindRequestBody {
			if h.Compressed() {
				compressed++
			}
			if _, ok := stored[h.Exchange]; !ok {
				prev = nil
				for _, v := range stored {
					prev = v // the exchanges come one after another
				}
				clear(stored)
				stored[h.Exchange] = nil
			}
			st := bytes.Clone(r.Stored())
			for _, q := range prev {
				if bytes.Equal(q, st) {
					reused++
					break
				}
			}
			stored[h.Exchange] = append(stored[h.Exchange], st)
		}
		a.Add(h, pl)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	xs := a.Exchanges()
	if len(xs) != len(bodies) {
		t.Fatalf("%d exchanges recorded, want %d", len(xs), len(bodies))
	}
	for i, x := range xs {
		want, _ := recordBody(t, newResent(false), red, "", bodies[i], []mark{{end: len(bodies[i])}})
		if !bytes.Equal(x.RequestBody, want) {
			t.Fatalf("turn %d: the recorded body is not the sent one redacted", i)
		}
	}
	if compressed == 0 || reused < len(bodies) {
		t.Fatalf("%d request body frames compressed, %d written as the last request stored them", compressed, reused)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Fatalf("%s holds secret %s", filepath.Base(f), s)
			}
		}
	}
}

// TestResentCutsAsScanning: a segment found again by its window cuts the
// body where scanning it anew would, also when the body shrinks or stops
// on a window's edge (the same 64 KiB window once in the middle of a
// body and once at its end), and its secret marks stay true.
func TestResentCutsAsScanning(t *testing.T) {
	red, err := NewRedactor(nil)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 11))
		grown, _ := growingBodies(r, 30)
		var bodies [][]byte
		for _, b := range grown {
			bodies = append(bodies, b)
			switch r.IntN(4) {
			case 0:
				bodies = append(bodies, b) // sent again unchanged
			case 1:
				if k := len(b) / segChunk; k > 0 {
					bodies = append(bodies, b[:k*segChunk], b) // cut on a window's edge
				}
			case 2:
				bodies = append(bodies, b[:len(b)*2/3], b) // shrunk, then whole again
			}
		}
		on, off := newResent(true), newResent(true)
		off.off, off.seed = true, on.seed
		found := 0
		for i, body := range bodies {
			prev := on.sessions["s"]
			got := on.segments("s", body, red)
			want := off.segments("s", body, red)
			if len(got) != len(want) {
				t.Fatalf("seed %d body %d: %d segments, scanning gives %d", seed, i, len(got), len(want))
			}
			for j := range got {
				if got[j].end != want[j].end || got[j].sum != want[j].sum || got[j].dirty != want[j].dirty {
					t.Fatalf("seed %d body %d segment %d: end %d sum %x dirty %v, scanning gives %d %x %v",
						seed, i, j, got[j].end, got[j].sum, got[j].dirty, want[j].end, want[j].sum, want[j].dirty)
				}
				if j < len(prev) && got[j].wsum == prev[j].wsum {
					found++
				}
			}
			on.remember("s", got)
		}
		if found == 0 {
			t.Fatalf("seed %d: no segment found again by its window", seed)
		}
	}
}

// BenchmarkResentSegments: the recorder's secret scan of a 700 KB body
// whose every segment the session's last request already had.
func BenchmarkResentSegments(b *testing.B) {
	red, _ := NewRedactor(nil)
	r := rand.New(rand.NewPCG(1, 2))
	var body []byte
	for bodies, _ := growingBodies(r, 200); len(body) < 700<<10; bodies = bodies[1:] {
		body = bodies[0]
		if len(bodies) == 1 {
			break
		}
	}
	rs := newResent(true)
	rs.remember("s", rs.segments("s", body, red))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rs.segments("s", body, red)
	}
}

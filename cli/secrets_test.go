package cli

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/blugelabs/bluge"
	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/zstd"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/httpbody"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
)

// secretCase is one credential family: text holds it as an agent would
// send or receive it, core the part that must never be stored.
type secretCase struct {
	name string
	text string
	core []string
}

var secretCases = []secretCase{
	{"anthropic", "use sk-ant-api03-Qm7vX2pL9sKd4TfR8wYb3NcJ6hGe1ZuA5oVi0qWx key", []string{"Qm7vX2pL9sKd4TfR8wYb3NcJ6hGe1ZuA5oVi0qWx"}},
	{"openai", "OPENAI_KEY is sk-proj-Hs8dK2mQ7xL4vN9pR3tY6bW1cZ5fJ0gA here", []string{"Hs8dK2mQ7xL4vN9pR3tY6bW1cZ5fJ0gA"}},
	{"github classic", "clone with ghp_Vb7nM3kL9qW2xR5tY8pZ4cJ6hF1dS0aG3eKi please", []string{"ghp_Vb7nM3kL9qW2xR5tY8pZ4cJ6hF1dS0aG3eKi"}},
	{"github fine-grained", "token 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X7vLAB ok", []string{"11AB2CD3E0Fq8wK2mX7vL4_nP9sR3tY6bW1cZ5fJ0gAhD8kQ2mX7vL4nP9sR3tY6bW1cZ5fJ0gAhD8kQ2mX7vLAB"}},
	{"aws", "[default]\naws_access_key_id = AKIAQYLPMN5HHHFPZAM2\naws_secret_access_key = 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\n", []string{"AKIAQYLPMN5HHHFPZAM2", "tVDkxNZm8TBQ4Fx7nB0dW6rVv9s2cG3jLq1yPe5A"}},
	{"aws pair", "creds AKIAZ7TQW3XKVB2MLP4N:Rk4pW9mX2vL7nQ3sT8yB5cJ1hF6dG0aZ4eKuIoPq end", []string{"AKIAZ7TQW3XKVB2MLP4N", "Rk4pW9mX2vL7nQ3sT8yB5cJ1hF6dG0aZ4eKuIoPq"}},
	{"jwt", "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwicm9sZSI6ImFkbWluIn0.Xk9fQ2mL7vR3tY8pW4nB6cJ1hZ5dG0aSqE2uIoKx done", []string{"eyJzdWIiOiJ1c2VyLTQyIiwicm9sZSI6ImFkbWluIn0.Xk9fQ2mL7vR3tY8pW4nB6cJ1hZ5dG0aSqE2uIoKx"}},
	{"env password", "# .env\nDB_PASSWORD=Xq7pLm2vR9sTw4\nDB_HOST=localhost\n", []string{"Xq7pLm2vR9sTw4"}},
	{"yaml token", "deploy:\n  api_token: 'k3Jd9sLq0XzP4mWn7Rt2Yb'\n", []string{"k3Jd9sLq0XzP4mWn7Rt2Yb"}},
	{"ini secret", "[oauth]\nclient_secret = Zp8Wq3Lm7Xv2Ks9Tn4Rb\n", []string{"Zp8Wq3Lm7Xv2Ks9Tn4Rb"}},
	{"json password", `config {"user": "svc", "password": "Gh4Tk9Lp2Wq7Zx"}`, []string{"Gh4Tk9Lp2Wq7Zx"}},
	{"entropy key", "SIGNING_KEY=fQ8mZ2xK7vR4nL9pT3wY6bC1 rest", []string{"fQ8mZ2xK7vR4nL9pT3wY6bC1"}},
	{"pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0zUo3kLCH8D4y1HzWb9QjZ5sXo2mPq7Rt4Nv8Lk3Jd6Wc1Ys9Ea\n-----END RSA PRIVATE KEY-----\n", []string{"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun", "VTLw7onLRnrq0zUo3kLCH8D4y1HzWb9QjZ5sXo2mPq7Rt4Nv8Lk3Jd6Wc1Ys9Ea"}},
	{"slack", "notify xoxb-2048123456-4096123456-Tq8Wm3Lp7Xz2Vk9Rn4Sb6Yc1 done", []string{"Tq8Wm3Lp7Xz2Vk9Rn4Sb6Yc1"}},
	{"stripe", "charge with sk_live_51Hq8Wm3Lp7Xz2Vk9Rn4Sb6Yc1Dt5 now", []string{"51Hq8Wm3Lp7Xz2Vk9Rn4Sb6Yc1Dt5"}},
	{"google", "maps key AIzaSyC8mW3qL7xZ2vK9pR4tN6bY1cJ5hG0dFsE ok", []string{"AIzaSyC8mW3qL7xZ2vK9pR4tN6bY1cJ5hG0dFsE"}},
	{"npm", "//registry.npmjs.org/:_authToken=npm_Wq3Lm7Xv2Ks9Tn4Rb8Pz6Yc1Dt5Hf0GjAeUo\n", []string{"npm_Wq3Lm7Xv2Ks9Tn4Rb8Pz6Yc1Dt5Hf0GjAeUo", "Wq3Lm7Xv2Ks9Tn4Rb8Pz6Yc1Dt5Hf0GjAeUo"}},
	{"url password", "DATABASE_URL=postgres://app:Pg5ecretPw0rd@db.internal:5432/app\n", []string{"Pg5ecretPw0rd"}},
}

// Placements of a secret in an exchange.
const (
	inHeader      = "header"
	inRequest     = "request"
	inResponse    = "response"
	inSplitChunk  = "split-chunks"
	inSplitEvents = "split-events"
)

var placements = []struct{ where, enc string }{
	{inHeader, ""}, {inRequest, ""},
	{inRequest, "gzip"}, {inRequest, "deflate"}, {inRequest, "br"}, {inRequest, "zstd"},
	{inResponse, ""}, {inResponse, "gzip"}, {inResponse, "deflate"}, {inResponse, "br"}, {inResponse, "zstd"},
	{inSplitChunk, ""}, {inSplitEvents, ""},
}

func compress(t *testing.T, enc string, b []byte) []byte {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "br":
		w = brotli.NewWriter(&buf)
	case "zstd":
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	default:
		return b
	}
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sseEvent(v string) string { return "event: content_block_delta\ndata: " + v + "\n\n" }

func textDelta(s string) string {
	return sseEvent(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + jsonString(s) + `}}`)
}

const (
	sseHead = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4\",\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	sseTail = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

// secretUpstream answers /v1/messages as the X-Test-Case header says:
// "<case index> <placement> <encoding>".
func secretUpstream(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		f := strings.Fields(r.Header.Get("X-Test-Case"))
		i, _ := strconv.Atoi(f[0])
		where, enc := f[1], ""
		if len(f) > 2 {
			enc = f[2]
		}
		sc := secretCases[i]
		fl := w.(http.Flusher)
		switch where {
		case inResponse:
			body := []byte(sseHead + textDelta("Here it is:\n"+sc.text) + sseTail)
			w.Header().Set("Content-Type", "text/event-stream")
			if enc != "" {
				w.Header().Set("Content-Encoding", enc)
				body = compress(t, enc, body)
			}
			half := len(body) / 2
			w.Write(body[:half])
			fl.Flush()
			w.Write(body[half:])
		case inSplitChunk:
			// One event, its bytes flushed in two writes cut inside the
			// secret.
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, sseHead)
			ev := textDelta("Here it is:\n" + sc.text)
			cut := strings.Index(ev, sc.core[0][:8]) + len(sc.core[0])/2
			io.WriteString(w, ev[:cut])
			fl.Flush()
			io.WriteString(w, ev[cut:])
			fl.Flush()
			io.WriteString(w, sseTail)
		case inSplitEvents:
			// The secret in two text deltas, as a model streams it. (The
			// last part of a case: the parts before it may be what
			// identifies it, an AWS secret key by its key id.)
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, sseHead)
			text := "Here it is:\n" + sc.text
			last := sc.core[len(sc.core)-1]
			cut := strings.Index(text, last) + len(last)/2
			io.WriteString(w, textDelta(text[:cut]))
			fl.Flush()
			io.WriteString(w, textDelta(text[cut:]))
			fl.Flush()
			io.WriteString(w, sseTail)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, sseHead+textDelta("noted")+sseTail)
		}
	}))
}

// TestSecretsAtRest sends every credential family through the real proxy
// in every placement (a request header, a plain body, each compression of
// a request and a response body, a stream cut inside the secret, and a
// secret split across two SSE events), lets the engine derive the
// timeline, memory and index, then checks that no secret appears in
// show, trace, any export format, or any file under the data directory:
// raw bytes, the WAL's decoded frames and decompressed bodies, every
// Pebble key and value, and every stored field of the Bluge index. The
// upstream URL's password appears nowhere either (banner, health, logs).
// An imported agent log carrying every secret is held to the same.
func TestSecretsAtRest(t *testing.T) {
	up := secretUpstream(t)
	defer up.Close()
	const upUser, upPass = "bbuser", "UpstreamPassw0rd"
	upURL := strings.Replace(up.URL, "http://", "http://"+upUser+":"+upPass+"@", 1)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": upURL}}, Shutdown: 5 * time.Second}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("proxy stopped: %v", err)
	}

	var exchanges []string
	sessions := map[string]bool{}
	for _, pl := range placements {
		session := "sec-" + pl.where
		if pl.enc != "" {
			session += "-" + pl.enc
		}
		sessions[session] = true
		for i, sc := range secretCases {
			content := "hello"
			if pl.where == inRequest {
				content = "Please keep this safe:\n" + sc.text
			}
			body := []byte(`{"model":"claude-sonnet-4","stream":true,"max_tokens":1024,"messages":[{"role":"user","content":` + jsonString(content) + `}]}`)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", bytes.NewReader(compress(t, pl.enc, body)))
			req.Header.Set("X-Bb-Session-Id", session)
			req.Header.Set("X-Test-Case", strings.TrimSpace(fmt.Sprintf("%d %s %s", i, pl.where, pl.enc)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept-Encoding", "identity")
			if pl.where == inRequest && pl.enc != "" {
				req.Header.Set("Content-Encoding", pl.enc)
			}
			if pl.where == inHeader {
				req.Header.Set("X-Note", strings.ReplaceAll(sc.text, "\n", " "))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%s %s: status %d %s", pl.where, sc.name, resp.StatusCode, got)
			}
			// Forwarding is untouched: the client gets the secret as sent.
			if pl.where == inResponse && pl.enc != "" {
				if got, err = httpbody.Decode(pl.enc, got); err != nil {
					t.Fatal(err)
				}
			}
			if pl.where == inResponse || pl.where == inSplitChunk {
				if !strings.Contains(string(got), jsonString(sc.core[0])[1:len(jsonString(sc.core[0]))-1]) {
					t.Fatalf("%s %s: the client did not get the secret as sent: %q", pl.where, sc.name, got)
				}
			}
			exchanges = append(exchanges, resp.Header.Get("X-Bb-Exchange-Id"))
		}
	}

	// An imported agent log holds every secret too.
	var all strings.Builder
	for _, sc := range secretCases {
		all.WriteString(sc.text + "\n")
	}
	rollout := strings.Replace(codexRollout, `"text":"two files"`, `"text":`+jsonString("two files\n"+all.String()), 1)
	if _, errs, code := run(t, "--dir", dir, "import", "codex", writeFile(t, t.TempDir(), "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", rollout)); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	sessions["codex:019e1625-789d-76c0-80ab-3724b5ddb799"] = true

	hr, err := http.Get("http://" + addr + "/_bb/health")
	if err != nil {
		t.Fatal(err)
	}
	health, _ := io.ReadAll(hr.Body)
	hr.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("proxy: %v", err)
	}
	if _, errs, code := run(t, "--dir", dir, "rebuild"); code != 0 {
		t.Fatalf("rebuild: %d %s", code, errs)
	}

	// Everything a user can print.
	outputs := map[string]string{"banner": stdout.String(), "log": stderr.String(), "health": string(health)}
	for s := range sessions {
		out, errs, code := run(t, "--dir", dir, "show", s)
		if code != 0 {
			t.Fatalf("show %s: %d %s", s, code, errs)
		}
		outputs["show "+s] = out
		for _, to := range exportFormats {
			out, errs, code := run(t, "--dir", dir, "export", s, "--to", to, "--blob-threshold", "64")
			if code != 0 {
				t.Fatalf("export %s --to %s: %d %s", s, to, code, errs)
			}
			outputs["export "+s+" --to "+to] = out
		}
	}
	if !strings.Contains(outputs["show sec-split-events"], "Here it is") {
		t.Fatalf("show has no derived text:\n%s", outputs["show sec-split-events"])
	}
	for i, id := range exchanges {
		traces := [][]string{{"trace", "--json", id}}
		// The text form prints a subset of the JSON's fields: in -short
		// mode once per placement.
		if !testing.Short() || i%len(secretCases) == 0 {
			traces = append(traces, []string{"trace", id})
		}
		for _, args := range traces {
			out, errs, code := run(t, append([]string{"--dir", dir}, args...)...)
			if code != 0 {
				t.Fatalf("%v: %d %s", args, code, errs)
			}
			outputs[strings.Join(args, " ")] = out
		}
	}
	out, errs, code := run(t, "--dir", dir, "replay", "--from", "0", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("replay: %d %s", code, errs)
	}
	outputs["replay"] = out

	// Everything stored.
	stored := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		stored[p] = b
		return nil
	})
	for name, b := range walContents(t, filepath.Join(dir, "wal")) {
		stored[name] = b
	}
	for name, b := range pebbleContents(t, filepath.Join(dir, "db")) {
		stored[name] = b
	}
	for name, b := range blugeContents(t, filepath.Join(api.IndexDir(dir), "bluge")) {
		stored[name] = b
	}
	if len(stored) < 10 {
		t.Fatalf("only %d stored items under %s", len(stored), dir)
	}
	for name, b := range stored {
		outputs[name] = string(b)
	}

	for _, sc := range secretCases {
		for _, core := range sc.core {
			for name, out := range outputs {
				if strings.Contains(out, core) {
					i := strings.Index(out, core)
					t.Errorf("%s: %s holds the secret %q: …%s…", sc.name, name, core, out[max(0, i-120):min(len(out), i+len(core)+40)])
				}
			}
		}
	}
	for name, out := range outputs {
		if strings.Contains(out, upPass) || strings.Contains(out, upUser+":") || strings.Contains(out, upUser+"@") {
			t.Errorf("%s holds the upstream URL's userinfo", name)
		}
	}
}

// walContents returns every frame's decoded payload and every exchange's
// bodies, decompressed when recorded compressed.
func walContents(t *testing.T, dir string) map[string][]byte {
	log, err := wal.Open(dir, &wal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	out := map[string][]byte{}
	var a exchange.Assembler
	r := log.NewReader()
	defer r.Close()
	for r.Next() {
		h := r.Header()
		p, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("wal frame %d", h.Offset)] = append([]byte(nil), p...)
		a.Add(h, p)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for _, x := range a.Exchanges() {
		if x.Start != nil && !x.Start.Decoded {
			if b, err := httpbody.Decode(api.FirstHeader(x.Start.Headers, "Content-Encoding"), x.RequestBody); err == nil {
				out[fmt.Sprintf("wal exchange %d request body", x.ID)] = b
			}
		}
		if x.Response != nil && (x.End == nil || !x.End.Decoded) {
			if b, err := httpbody.Decode(api.FirstHeader(x.Response.Headers, "Content-Encoding"), x.ResponseBody); err == nil {
				out[fmt.Sprintf("wal exchange %d response body", x.ID)] = b
			}
		}
	}
	return out
}

// pebbleContents returns every key and value of the Pebble database.
func pebbleContents(t *testing.T, dir string) map[string][]byte {
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string][]byte{}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
		out[fmt.Sprintf("pebble key %d %q", n, it.Key())] = append(append([]byte(nil), it.Key()...), it.Value()...)
	}
	if n == 0 {
		t.Fatal("Pebble is empty")
	}
	return out
}

// blugeContents returns the stored fields of every document in the index.
func blugeContents(t *testing.T, dir string) map[string][]byte {
	r, err := bluge.OpenReader(bluge.DefaultConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it, err := r.Search(context.Background(), bluge.NewAllMatches(bluge.NewMatchAllQuery()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	n := 0
	for m, err := it.Next(); m != nil || err != nil; m, err = it.Next() {
		if err != nil {
			t.Fatal(err)
		}
		n++
		var doc []byte
		m.VisitStoredFields(func(field string, value []byte) bool {
			doc = append(append(append(doc, field...), '='), value...)
			doc = append(doc, '\n')
			return true
		})
		out[fmt.Sprintf("bluge document %d", n)] = doc
	}
	if n == 0 {
		t.Fatal("the index is empty")
	}
	return out
}

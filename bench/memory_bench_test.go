package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine"
)

// BenchmarkMemoryLag measures how long after a client read the end of a
// response its content can be found in memory. Each op sends one
// streaming Anthropic exchange (a session of its own, X-Bb-Session-Id)
// through `bbengine proxy` run in this process as a user runs it: the
// recorder, the engine following the WAL and deriving memory, the index
// syncer woken by each derivation and the loopback query endpoint. The
// assistant's text states a decision naming a token unique to the op;
// from the client's EOF the op asks the endpoint's /v1/memory/search for
// the token until a card of that session comes back.
//
// query=fresh asks as `bbengine mem search` does (fresh=1: the endpoint
// waits for the engine to reach the WAL's end and syncs the index
// first); query=background asks without fresh, so it measures when the
// proxy's own pipeline (derive, then the index syncer) has made the
// card searchable. It reports lag-p50-µs, lag-p99-µs and
// found-at-first-query (the fraction found by the first query).
func BenchmarkMemoryLag(b *testing.B) {
	b.Run("query=fresh", func(b *testing.B) { benchMemoryLag(b, true) })
	b.Run("query=background", func(b *testing.B) { benchMemoryLag(b, false) })
}

func benchMemoryLag(b *testing.B, fresh bool) {
	up := &lagUpstream{}
	upSrv, err := serve(up)
	if err != nil {
		b.Fatal(err)
	}
	defer upSrv.close()
	dir := b.TempDir()
	px, err := startBBProxy(dir, upSrv.url)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := px.stop(); err != nil {
			b.Error(err)
		}
	}()
	q, err := px.queries(dir)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()

	n := 0
	op := func() (time.Duration, bool, error) {
		n++
		tok := lagToken(n)
		session := fmt.Sprintf("memlag-%d-%d", time.Now().UnixNano(), n)
		if err := up.send(client, px.url, session, tok); err != nil {
			return 0, false, err
		}
		t0 := time.Now()
		for tries := 0; ; tries++ {
			found, err := q.search(tok, session, fresh)
			if err != nil {
				return 0, false, err
			}
			if found {
				return time.Since(t0), tries == 0, nil
			}
			if time.Since(t0) > 20*time.Second {
				return 0, false, fmt.Errorf("token %s of session %s not found after 20 s", tok, session)
			}
			if !fresh {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	for range 20 { // warm up: the index, the connections, the engine's caches
		if _, _, err := op(); err != nil {
			b.Fatal(err)
		}
	}
	var lags []time.Duration
	first := 0
	b.ReportAllocs()
	for b.Loop() {
		lag, atFirst, err := op()
		if err != nil {
			b.Fatal(err)
		}
		lags = append(lags, lag)
		if atFirst {
			first++
		}
	}
	slices.Sort(lags)
	b.ReportMetric(Micros(Percentile(lags, 50)), "lag-p50-µs")
	b.ReportMetric(Micros(Percentile(lags, 99)), "lag-p99-µs")
	b.ReportMetric(float64(first)/float64(len(lags)), "found-at-first-query")
}

// lagToken returns a word unique to op n: letters only, so that the
// index's analyzer keeps it whole.
func lagToken(n int) string {
	var sb strings.Builder
	sb.WriteString("zlag")
	for i := 0; i < 6; i++ {
		sb.WriteByte(byte('a' + n%26))
		n /= 26
	}
	sb.WriteString("q")
	return sb.String()
}

// lagUpstream answers POST /v1/messages with a stream whose text names
// the request's Bench-Token.
type lagUpstream struct{}

func (lagUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	tok := r.Header.Get("Bench-Token")
	text := "We decided to use " + tok + " for the session cache because lookups repeat."
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Request-Id", "req_memlag")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	for _, e := range []string{
		ev("message_start", `{"type":"message_start","message":{"id":"msg_memlag","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":1}}}`),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+text[:len(text)/2]+`"}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+text[len(text)/2:]+`"}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":17}}`),
		ev("message_stop", `{"type":"message_stop"}`),
	} {
		io.WriteString(w, e)
		f.Flush()
	}
}

// send posts one streaming request for session through the proxy and
// reads the response to its end.
func (lagUpstream) send(client *http.Client, proxyURL, session, tok string) error {
	body := `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Which cache should the session store use?"}]}`
	req, err := http.NewRequest(http.MethodPost, proxyURL+"/v1/messages", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = http.Header{
		"Content-Type":      {"application/json"},
		"Anthropic-Version": {"2023-06-01"},
		"X-Api-Key":         {"sk-ant-api03-benchbenchbenchbenchbench"},
		"X-Bb-Session-Id":   {session},
		"Bench-Token":       {tok},
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Bb-Exchange-Id") == "" || !bytes.Contains(got, []byte(tok)) {
		return fmt.Errorf("bench: the proxy answered %d (exchange %q): %.200q", resp.StatusCode, resp.Header.Get("X-Bb-Exchange-Id"), got)
	}
	return nil
}

// bbProxy is `bbengine proxy` run in this process through cli.MainContext.
type bbProxy struct {
	url    string
	cancel context.CancelFunc
	done   chan int
	out    *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startBBProxy runs `bbengine --dir dir proxy` on a loopback port with
// upstream as the anthropic route, and returns once it listens.
func startBBProxy(dir, upstream string) (*bbProxy, error) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &bbProxy{cancel: cancel, done: make(chan int, 1), out: &lockedBuffer{}}
	go func() {
		p.done <- cli.MainContext(ctx, []string{"bbengine", "--dir", dir, "proxy", "--listen", "127.0.0.1:0",
			"--upstream", "anthropic=" + upstream, "--shutdown-timeout", "5s"}, p.out, p.out)
	}()
	const prefix = "listening on "
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s := p.out.String()
		if i := strings.Index(s, prefix); i >= 0 {
			p.url, _, _ = strings.Cut(s[i+len(prefix):], " ")
			return p, nil
		}
		select {
		case code := <-p.done:
			return nil, fmt.Errorf("bbengine proxy exited with %d: %s", code, s)
		default:
		}
	}
	cancel()
	<-p.done
	return nil, fmt.Errorf("bbengine proxy did not start: %s", p.out.String())
}

// stop stops the proxy as Ctrl-C does.
func (p *bbProxy) stop() error {
	p.cancel()
	if code := <-p.done; code != 0 {
		return fmt.Errorf("bbengine proxy exited with %d: %s", code, p.out.String())
	}
	return nil
}

// memQuery asks a running proxy's query endpoint.
type memQuery struct {
	addr, token string
	client      *http.Client
}

// queries returns a client of the query endpoint the proxy wrote into
// the data directory's lock file, once it has.
func (p *bbProxy) queries(dir string) (*memQuery, error) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if h, held, err := engine.ReadHolder(dir); err == nil && held && h.Addr != "" {
			return &memQuery{addr: h.Addr, token: h.Token, client: &http.Client{}}, nil
		}
	}
	return nil, fmt.Errorf("the proxy wrote no query endpoint: %s", p.out.String())
}

// search reports whether /v1/memory/search for tok returns a card of
// session.
func (q *memQuery) search(tok, session string, fresh bool) (bool, error) {
	v := url.Values{"q": {tok}, "k": {"5"}}
	if fresh {
		v.Set("fresh", "1")
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+q.addr+"/v1/memory/search?"+v.Encode(), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+q.token)
	resp, err := q.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("memory search: %s: %s", resp.Status, body)
	}
	var cards []engine.Card
	if err := json.Unmarshal(body, &cards); err != nil {
		return false, err
	}
	for _, c := range cards {
		if c.Session == session && strings.Contains(c.Title+c.Snippet, tok) {
			return true, nil
		}
	}
	return false, nil
}

// BenchmarkDeriveMemory measures engine.DeriveMemory over the events of
// every golden Claude Code session (imported once into a data directory),
// with the default redactor as the engine uses it. SetBytes is the text
// the events carry, so MB/s is the rate at which memory is derived from
// conversation text. It reports artifacts/op.
func BenchmarkDeriveMemory(b *testing.B) {
	src := filepath.Join("..", "..", "shared", "agentlogs-golden", "claude")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("golden agent logs not present: %v", err)
	}
	dir := b.TempDir()
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"bbengine", "--dir", dir, "import", "claude", src, "--quiet"}, &out, &errb); code != 0 {
		b.Fatalf("import: exit %d\n%s%s", code, out.String(), errb.String())
	}
	e, err := engine.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	type sess struct {
		s      engine.Session
		events []engine.Event
	}
	var all []sess
	var size int64
	sessions, err := e.Sessions(engine.SessionFilter{})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range sessions {
		evs, err := e.Events(s.ID, engine.EventFilter{})
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range evs {
			size += int64(len(ev.Text))
		}
		all = append(all, sess{s, evs})
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if len(all) == 0 {
		b.Fatal("the import gave no sessions")
	}
	red, err := redact.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d sessions, %d bytes of event text", len(all), size)
	arts := 0
	b.ReportAllocs()
	b.SetBytes(size)
	for b.Loop() {
		arts = 0
		for i := range all {
			a, _ := engine.DeriveMemory(&all[i].s, all[i].events, red)
			arts += len(a)
		}
	}
	b.ReportMetric(float64(arts), "artifacts/op")
}

// BenchmarkRebuildMemory measures Engine.RebuildMemory over every golden
// Claude Code session imported once into a data directory: the memory
// derivation an import runs after deriving the imported sessions, with
// the events read back from the store. It reports sessions/op.
func BenchmarkRebuildMemory(b *testing.B) {
	src := filepath.Join("..", "..", "shared", "agentlogs-golden", "claude")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("golden agent logs not present: %v", err)
	}
	dir := b.TempDir()
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"bbengine", "--dir", dir, "import", "claude", src, "--quiet"}, &out, &errb); code != 0 {
		b.Fatalf("import: exit %d\n%s%s", code, out.String(), errb.String())
	}
	e, err := engine.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	sessions := 0
	b.ReportAllocs()
	for b.Loop() {
		p, err := e.RebuildMemory(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		sessions = p.Sessions
	}
	b.ReportMetric(float64(sessions), "sessions/op")
}

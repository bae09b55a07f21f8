package engine_test

// Golden wire recordings for the canonicalizer: real WALs written by our
// proxy in front of fake upstreams that answer like the providers do.
//
//	go test ./engine -run TestRecordWire -record   re-records testdata/wire
//	go test ./engine                               checks the recordings
//
// Every scenario is a static script of steps: the exact request a real
// client sends (headers, body with the whole history re-sent) and the
// exact response the fake upstream writes (SSE events flushed one by one,
// or a JSON body, optionally compressed). Recording drives the steps
// through proxy.New over a fresh WAL and copies the segment files to
// testdata/wire/<scenario>/. Checking opens each recording read-only,
// verifies it, matches every recorded exchange to its step by request
// body, compares the bodies, and regenerates testdata/wire/README.md,
// which must match the committed one.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/httpbody"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

var record = flag.Bool("record", false, "re-record engine/testdata/wire")

const wireDir = "testdata/wire"

// maxScenarioBytes bounds the segment files of one recording.
const maxScenarioBytes = 100 << 10

// Fake credentials, assembled so that no key-shaped literal sits in the
// source. The recordings must hold none of them.
var (
	fakeAnthropicKey = "sk-ant-" + "api03-" + "FAKE-bbengine-wire-recording-not-a-real-key-0000000000-AA"
	fakeOpenAIKey    = "sk-" + "proj-" + "FAKEbbengineWireRecordingNotARealKey0000"
	fakeGoogleKey    = "AIza" + "SyFAKE-bbengine-wire-recording00000"
	secretMarkers    = []string{"FAKE-bbengine-wire-recording", "FAKEbbengineWireRecording"}
)

// ---------------------------------------------------------------------
// Test entry point

func TestRecordWire(t *testing.T) {
	scs := scenarios()
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			dir := filepath.Join(wireDir, sc.name)
			if *record {
				recordScenario(t, sc, dir)
				if t.Failed() {
					return
				}
			}
			checkScenario(t, sc, dir)
		})
	}
	if t.Failed() {
		return
	}
	readme, err := renderReadme(scs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(wireDir, "README.md")
	if *record {
		if err := os.WriteFile(path, readme, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old, readme) {
		ol, nl := strings.Split(string(old), "\n"), strings.Split(string(readme), "\n")
		line := 0
		for line < len(ol) && line < len(nl) && ol[line] == nl[line] {
			line++
		}
		t.Errorf("%s does not match the recordings and the scenarios of record_test.go (first difference at line %d): "+
			"a scenario changed without re-recording (go test ./engine -run TestRecordWire -record), or the file was edited by hand", path, line+1)
	}
}

// ---------------------------------------------------------------------
// Steps and replies

type hdr struct{ k, v string }

// step is one HTTP request of a scenario and the upstream's reply.
type step struct {
	name   string
	group  int           // steps of one group are sent concurrently; groups run in order
	delay  time.Duration // wait before sending, within the group
	method string
	path   string // with the query
	header []hdr
	body   []byte
	adds   string // README: what the request adds to the conversation
	resp   reply
	// cancelOn, when set, makes the client cancel the request after
	// reading a response line that contains it.
	cancelOn string
	reqID    string // X-Bb-Request-Id the proxy answered with (record mode)
}

func (s *step) key() string { return s.method + " " + s.path + "\n" + string(s.body) }

// reply is what the fake upstream writes.
type reply struct {
	status   int
	header   []hdr
	parts    []string      // written and flushed one by one (SSE: one event each)
	gap      time.Duration // pause before every part but the first
	encoding string        // Content-Encoding: gzip, br or zstd
	says     string        // README: what the response contains
}

func (r reply) plain() string { return strings.Join(r.parts, "") }

func (r reply) sse() bool {
	for _, h := range r.header {
		if h.k == "Content-Type" && strings.HasPrefix(h.v, "text/event-stream") {
			return true
		}
	}
	return false
}

// serve writes the reply, flushing after each part (through the
// compressor's flush when the reply is compressed).
func (r reply) serve(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	for _, kv := range r.header {
		h.Add(kv.k, kv.v)
	}
	if r.encoding != "" {
		h.Set("Content-Encoding", r.encoding)
		h.Set("Vary", "Accept-Encoding")
	} else if !r.sse() {
		h.Set("Content-Length", strconv.Itoa(len(r.plain())))
	}
	w.WriteHeader(r.status)
	var out io.Writer = w
	flush := func() error { return nil }
	closeEnc := func() error { return nil }
	switch r.encoding {
	case "gzip":
		zw := gzip.NewWriter(w)
		out, flush, closeEnc = zw, zw.Flush, zw.Close
	case "br":
		bw := brotli.NewWriter(w)
		out, flush, closeEnc = bw, bw.Flush, bw.Close
	case "zstd":
		zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err)
		}
		out, flush, closeEnc = zw, zw.Flush, zw.Close
	}
	fl := w.(http.Flusher)
	for i, p := range r.parts {
		if i > 0 && r.gap > 0 {
			select {
			case <-req.Context().Done():
				return
			case <-time.After(r.gap):
			}
		}
		if _, err := io.WriteString(out, p); err != nil {
			return
		}
		if err := flush(); err != nil {
			return
		}
		fl.Flush()
	}
	if closeEnc() == nil {
		fl.Flush()
	}
}

// scenario is one recording.
type scenario struct {
	name  string
	about string   // README paragraph
	notes []string // README notes
	steps []*step
	// interleave requires the exchanges of each concurrent group to
	// overlap in the log.
	interleave bool
}

// seq numbers steps into groups of one: sent one after the other.
func seq(steps ...*step) []*step {
	for i, s := range steps {
		s.group = i
	}
	return steps
}

// ---------------------------------------------------------------------
// Recording

// fakeUpstream answers each request with the reply of the step whose
// request it is (matched by method, path and body; identical requests,
// a retry, take their steps in order).
type fakeUpstream struct {
	mu      sync.Mutex
	pending map[string][]*step
	errs    []string
}

func newFakeUpstream(steps []*step) *fakeUpstream {
	f := &fakeUpstream{pending: map[string][]*step{}}
	for _, s := range steps {
		f.pending[s.key()] = append(f.pending[s.key()], s)
	}
	return f
}

func (f *fakeUpstream) fail(format string, args ...any) {
	f.mu.Lock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.fail("read request body: %v", err)
		return
	}
	key := r.Method + " " + r.URL.RequestURI() + "\n" + string(body)
	f.mu.Lock()
	var st *step
	if q := f.pending[key]; len(q) > 0 {
		st, f.pending[key] = q[0], q[1:]
	}
	f.mu.Unlock()
	if st == nil {
		f.fail("unexpected request %s %s (%d bytes)", r.Method, r.URL.RequestURI(), len(body))
		http.Error(w, "fake upstream: no scripted reply for this request", http.StatusInternalServerError)
		return
	}
	for _, h := range st.header {
		got := r.Header.Get(h.k)
		if strings.HasPrefix(h.k, "X-Bb-") {
			if got != "" {
				f.fail("%s: the proxy forwarded %s", st.name, h.k)
			}
		} else if got != h.v {
			f.fail("%s: upstream got %s %q, the client sent %q", st.name, h.k, got, h.v)
		}
	}
	st.resp.serve(w, r)
}

func (f *fakeUpstream) left() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, q := range f.pending {
		for _, s := range q {
			out = append(out, s.name)
		}
	}
	return out
}

func recordScenario(t *testing.T, sc *scenario, dst string) {
	walDir := filepath.Join(t.TempDir(), "wal")
	// The CLI's WAL options: snappy-compressed payloads, interval sync.
	log, err := wal.Open(walDir, &wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeUpstream(sc.steps)
	up := httptest.NewServer(fake)
	defer up.Close()
	p, err := proxy.New(log, &proxy.Options{
		Upstreams: map[string]string{"anthropic": up.URL, "openai": up.URL, "gemini": up.URL},
		Logf:      func(f string, a ...any) { t.Logf("proxy: "+f, a...) },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 8}}

	var groups [][]*step
	for i, s := range sc.steps {
		if i == 0 || s.group != sc.steps[i-1].group {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], s)
	}
	for _, g := range groups {
		var wg sync.WaitGroup
		errs := make([]error, len(g))
		for i, s := range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(s.delay)
				errs[i] = drive(client, srv.URL, s)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s: %v", g[i].name, err)
			}
		}
	}

	client.CloseIdleConnections()
	srv.Close()
	if err := p.Close(); err != nil {
		t.Errorf("recorder: %v", err)
	}
	if err := log.Close(); err != nil {
		t.Errorf("close WAL: %v", err)
	}
	up.Close()
	for _, e := range fake.errs {
		t.Errorf("fake upstream: %s", e)
	}
	if left := fake.left(); len(left) > 0 {
		t.Errorf("steps never reached the upstream: %v", left)
	}
	if t.Failed() {
		return
	}

	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(walDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		switch {
		case strings.HasSuffix(e.Name(), ".wal"):
			b, err := os.ReadFile(filepath.Join(walDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		case e.Name() == "LOCK":
		default:
			t.Errorf("unexpected file %s in the WAL directory", e.Name())
		}
	}
}

// drive sends one step's request through the proxy as its client would
// and reads the response.
func drive(client *http.Client, base string, s *step) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, s.method, base+s.path, bytes.NewReader(s.body))
	if err != nil {
		return err
	}
	for _, h := range s.header {
		req.Header.Add(h.k, h.v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	s.reqID = resp.Header.Get("X-Bb-Request-Id")
	if resp.StatusCode != s.resp.status {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("status %d, want %d: %s", resp.StatusCode, s.resp.status, b)
	}
	if s.cancelOn != "" {
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if strings.Contains(line, s.cancelOn) {
				cancel() // the user pressed Esc
				io.Copy(io.Discard, br)
				return nil
			}
			if err != nil {
				return fmt.Errorf("stream ended before a line with %q: %v", s.cancelOn, err)
			}
		}
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	got, err := httpbody.Decode(resp.Header.Get("Content-Encoding"), raw)
	if err != nil {
		return err
	}
	if string(got) != s.resp.plain() {
		return fmt.Errorf("client got %q\nwant %q", got, s.resp.plain())
	}
	return nil
}

// ---------------------------------------------------------------------
// Reading and checking a recording

type recEx struct {
	x  *exchange.Exchange
	st *step
}

type wireInfo struct {
	files   int
	bytes   int64
	frames  int
	exs     []recEx // in WAL order
	secrets []string
}

// loadWire verifies the WAL in dir, assembles its exchanges and matches
// each to the step that sent it.
func loadWire(dir string, sc *scenario) (*wireInfo, error) {
	w := &wireInfo{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wal") || e.IsDir() {
			return nil, fmt.Errorf("unexpected %s: a recording holds segment files only", e.Name())
		}
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		w.files++
		w.bytes += fi.Size()
	}
	if w.files == 0 {
		return nil, fmt.Errorf("no segment files")
	}
	infos, err := wal.Check(dir)
	if err != nil {
		return nil, err
	}
	for _, in := range infos {
		if in.Err != nil || in.Torn {
			return nil, fmt.Errorf("segment %s: err %v, torn %v (%v)", in.Path, in.Err, in.Torn, in.TornErr)
		}
	}
	l, err := wal.Open(dir, &wal.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	r := l.NewReader()
	defer r.Close()
	var a exchange.Assembler
	for r.Next() {
		w.frames++
		p, err := r.Payload()
		if err != nil {
			return nil, err
		}
		for _, s := range append([]string{fakeAnthropicKey, fakeOpenAIKey, fakeGoogleKey}, secretMarkers...) {
			if bytes.Contains(p, []byte(s)) {
				w.secrets = append(w.secrets, fmt.Sprintf("frame at %d (%v) holds %q", r.Offset(), r.Header().Kind, s))
			}
		}
		if err := a.Add(r.Header(), p); err != nil {
			return nil, err
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	pending := map[string][]*step{}
	for _, s := range sc.steps {
		pending[s.key()] = append(pending[s.key()], s)
	}
	for _, x := range a.Exchanges() {
		if x.Start == nil {
			return nil, fmt.Errorf("exchange %d has no request start (frames %v)", x.ID, x.Kinds)
		}
		path := x.Start.Path
		if x.Start.Query != "" {
			path += "?" + x.Start.Query
		}
		key := x.Start.Method + " " + path + "\n" + string(x.RequestBody)
		q := pending[key]
		if len(q) == 0 {
			return nil, fmt.Errorf("exchange %d (%s %s, %d body bytes) is no step of the scenario: it changed since the recording", x.ID, x.Start.Method, path, len(x.RequestBody))
		}
		w.exs = append(w.exs, recEx{x: x, st: q[0]})
		pending[key] = q[1:]
	}
	return w, nil
}

func firstHeader(h exchange.Headers, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// responseBody returns the recorded response body, decompressed.
func responseBody(x *exchange.Exchange) ([]byte, error) {
	enc := firstHeader(x.Response.Headers, "Content-Encoding")
	if enc == "" || x.End.Decoded {
		return x.ResponseBody, nil
	}
	return httpbody.Decode(enc, x.ResponseBody)
}

func checkScenario(t *testing.T, sc *scenario, dir string) {
	w, err := loadWire(dir, sc)
	if err != nil {
		t.Fatalf("%s: %v (re-record: go test ./engine -run TestRecordWire -record)", dir, err)
	}
	if w.bytes > maxScenarioBytes {
		t.Errorf("%s: %d bytes, over the %d byte budget", dir, w.bytes, maxScenarioBytes)
	}
	for _, s := range w.secrets {
		t.Errorf("%s: secret recorded: %s", dir, s)
	}
	if len(w.exs) != len(sc.steps) {
		t.Fatalf("%s: %d exchanges, want %d", dir, len(w.exs), len(sc.steps))
	}
	for i, e := range w.exs {
		if e.st != sc.steps[i] {
			t.Errorf("%s: exchange #%d is step %q, want %q: the README's notes cite exchanges by their position", dir, i+1, e.st.name, sc.steps[i].name)
		}
	}
	if sc.interleave {
		for i := 0; i+1 < len(w.exs); i++ {
			a, b := w.exs[i], w.exs[i+1]
			if a.st.group != b.st.group {
				continue
			}
			if b.x.Offsets[0] > a.x.Offsets[len(a.x.Offsets)-1] {
				t.Errorf("%s: exchanges #%d and #%d were sent concurrently but do not interleave in the log", dir, i+1, i+2)
			}
		}
	}
	for i, e := range w.exs {
		x, s := e.x, e.st
		name := fmt.Sprintf("exchange #%d (id %d, step %q)", i+1, x.ID, s.name)
		if x.Response == nil || x.End == nil {
			t.Errorf("%s: frames %v: want request start, response start and response end", name, x.Kinds)
			continue
		}
		if x.Kinds[0] != frame.KindRequestStart || x.Kinds[len(x.Kinds)-1] != frame.KindResponseEnd {
			t.Errorf("%s: frame order %v", name, x.Kinds)
		}
		if !x.RequestLast || x.Start.BodyBytes != int64(len(s.body)) {
			t.Errorf("%s: request body: last flag %v, body_bytes %d of %d", name, x.RequestLast, x.Start.BodyBytes, len(s.body))
		}
		if s.reqID != "" && x.Start.RequestID != s.reqID {
			t.Errorf("%s: request id %s, the client was told %s", name, x.Start.RequestID, s.reqID)
		}
		if x.Response.Status != s.resp.status || x.End.Status != s.resp.status {
			t.Errorf("%s: status %d/%d, want %d", name, x.Response.Status, x.End.Status, s.resp.status)
		}
		for _, h := range s.header {
			got := x.Start.Headers[h.k]
			switch {
			case strings.HasPrefix(h.k, "X-Bb-"):
				if got != nil {
					t.Errorf("%s: %s recorded", name, h.k)
				}
			case h.k == "X-Api-Key" || h.k == "Authorization" || h.k == "X-Goog-Api-Key":
				if len(got) != 1 || !strings.HasPrefix(got[0], "[redacted:") {
					t.Errorf("%s: %s recorded as %q", name, h.k, got)
				}
			}
		}
		body, err := responseBody(x)
		if err != nil {
			t.Errorf("%s: decode response: %v", name, err)
			continue
		}
		want := s.resp.plain()
		if s.cancelOn != "" {
			if x.End.Complete || len(x.Errors) == 0 || x.Errors[0].Stage != "client" {
				t.Errorf("%s: a cancelled stream must be recorded incomplete with a client error: end %+v errors %+v", name, x.End, x.Errors)
			}
			if !strings.HasPrefix(want, string(body)) || !strings.Contains(string(body), s.cancelOn) {
				t.Errorf("%s: recorded %q, want a prefix of the stream through %q", name, body, s.cancelOn)
			}
			continue
		}
		if !x.End.Complete || x.End.Error != "" || len(x.Errors) > 0 || !x.ResponseLast {
			t.Errorf("%s: end %+v errors %+v last %v", name, x.End, x.Errors, x.ResponseLast)
		}
		if string(body) != want {
			t.Errorf("%s: recorded response body differs from what the upstream sent:\n got %q\nwant %q", name, body, want)
		}
	}
}

// ---------------------------------------------------------------------
// README

const readmeHead = `# Wire recordings

Golden inputs for the engine's canonicalizer: write-ahead logs written by
` + "`bbengine proxy`" + ` (package proxy, lossless mode, the CLI's WAL options, so
payloads are snappy-compressed where that helps) in front of fake upstreams
that answer byte for byte like Anthropic, OpenAI and Gemini. Each directory is
one WAL directory (segment files only, no LOCK). Open it with
` + "`wal.Open(dir, &wal.Options{ReadOnly: true})`" + ` and group its frames with
` + "`codec/exchange.Assembler`" + `, or look at it with the CLI:

    rm -rf /tmp/x && mkdir -p /tmp/x && cp -r engine/testdata/wire/anthropic-tool-loop /tmp/x/wal
    go run . --dir /tmp/x replay --format text

This file is generated from the recordings and the scenario scripts in
` + "`engine/record_test.go`" + `; ` + "`go test ./engine`" + ` regenerates it and fails when it
differs, so change the scripts, never this file.

## Re-recording

    go test ./engine -run TestRecordWire -record                   # every scenario
    go test ./engine -run 'TestRecordWire/anthropic-errors$' -record # one scenario

Recording replaces ` + "`testdata/wire/<scenario>/`" + ` and rewrites this file. The WAL
holds timestamps and ids the proxy mints (exchange ids, ` + "`req_…`" + ` request ids,
frame times, durations), so each recording differs from the last even when
the scripts did not change: re-record only on purpose (a script or the proxy's
recording format changed), and update the golden outputs derived from these
files in the same commit. Without ` + "`-record`" + ` the test checks every recording:
it opens read-only and verifies, holds one exchange per scripted request with
request start, response start and response end, request bodies byte-equal to
the script, response bodies (decompressed) equal to what the fake upstream
sent (a prefix of it for the cancelled stream), credentials redacted, WAL
order equal to the order of the tables below (the notes cite exchanges by
their #), and the interleaved scenario's exchanges overlapping in the log.

## Reading the tables

- **#** is the exchange's position in WAL order (the order of the exchanges'
  first frames; frames of concurrent exchanges interleave), **exchange** its id
  in the frame headers, minted by the proxy.
- **session** is the request start's ` + "`session_id`" + ` and ` + "`session_source`" + `;
  **model** and **stream** are the request start's ` + "`model`" + ` and ` + "`stream`" + `, which the
  proxy reads from the request body (Gemini puts both in the path, so they are
  empty there); **status** is the response end's status and ` + "`complete`" + `.
- **request adds** is what the request adds to or changes in its session's
  conversation, compared with that session's previous main request.
  Every request re-sends the whole history as the real client does.
- **response** is what the upstream sent: the provider's ids, texts as Go
  quoted strings, tool inputs as the compact JSON the client re-sends, and
  the usage numbers as the provider wrote them. Lines after the scripted ones
  describe how the proxy recorded it (compression, interruption).
- Credentials: the requests carry fake keys in ` + "`X-Api-Key`" + `, ` + "`Authorization`" + ` and
  ` + "`X-Goog-Api-Key`" + `; the recordings hold ` + "`[redacted:…]`" + ` instead, and no frame holds
  a key. ` + "`Anthropic-Organization-Id`" + ` and ` + "`Openai-Organization`" + ` response headers are
  redacted too. ` + "`X-Bb-*`" + ` request headers are consumed by the proxy and not recorded.
`

// cellEscape makes s safe in a table cell.
func cellEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// code returns s as a Markdown code span.
func code(s string) string {
	n := 1
	for strings.Contains(s, strings.Repeat("`", n)) {
		n++
	}
	f := strings.Repeat("`", n)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return f + s + f
}

// qc returns s as a quoted Go string in a code span.
func qc(s string) string { return code(strconv.Quote(s)) }

func renderReadme(scs []*scenario) ([]byte, error) {
	var b strings.Builder
	b.WriteString(readmeHead)
	for _, sc := range scs {
		w, err := loadWire(filepath.Join(wireDir, sc.name), sc)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", sc.name, err)
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", sc.name, sc.about)
		fmt.Fprintf(&b, "%d exchanges, %d frames, %d bytes in %d segment file(s).\n\n", len(w.exs), w.frames, w.bytes, w.files)
		b.WriteString("| # | exchange | session | request | model | stream | status | request adds | response |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
		for i, e := range w.exs {
			x, s := e.x, e.st
			path := x.Start.Path
			if x.Start.Query != "" {
				path += "?" + x.Start.Query
			}
			model := "—"
			if x.Start.Model != "" {
				model = code(x.Start.Model)
			}
			stream := "no"
			if x.Start.Stream {
				stream = "yes"
			}
			status := fmt.Sprintf("%d complete", x.End.Status)
			if !x.End.Complete {
				status = fmt.Sprintf("%d **incomplete**", x.End.Status)
			}
			resp := s.resp.says
			if enc := firstHeader(x.Response.Headers, "Content-Encoding"); enc != "" {
				plain, err := responseBody(x)
				if err != nil {
					return nil, err
				}
				resp += fmt.Sprintf("<br>Recorded: Content-Encoding %s; the body frames hold the %d compressed bytes as sent (decoded %v), %d bytes decompressed.",
					code(enc), len(x.ResponseBody), x.End.Decoded, len(plain))
			}
			if !x.End.Complete {
				body, err := responseBody(x)
				if err != nil {
					return nil, err
				}
				r := fmt.Sprintf("<br>Recorded **incomplete**: end error %s", qc(x.End.Error))
				for _, er := range x.Errors {
					r += fmt.Sprintf("; error frame stage %s, %s", code(er.Stage), qc(er.Error))
				}
				if s.resp.sse() {
					r += fmt.Sprintf("; %d of the %d events (%d bytes) were recorded", strings.Count(string(body), "\n\n"), len(s.resp.parts), len(body))
				}
				resp += r + "."
			}
			cells := []string{
				strconv.Itoa(i + 1),
				strconv.FormatUint(x.ID, 10),
				code(x.Start.SessionID) + "<br>" + x.Start.SessionSource,
				x.Start.Method + " " + code(path),
				model, stream, status, s.adds, resp,
			}
			for j := range cells {
				cells[j] = cellEscape(cells[j])
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		if len(sc.notes) > 0 {
			b.WriteString("\nNotes:\n\n")
			for _, n := range sc.notes {
				b.WriteString("- " + n + "\n")
			}
		}
	}
	return []byte(b.String()), nil
}

// ---------------------------------------------------------------------
// JSON with key order, as the clients' JavaScript and Rust write it

type kv struct {
	k string
	v any
}

// obj is a JSON object that keeps its keys in order.
type obj []kv

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(js(f.k))
		b.WriteByte(':')
		b.Write(js(f.v))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// js is compact JSON without HTML escaping (JSON.stringify's output).
func js(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// jsIndent is JSON indented by two spaces with a final newline, as
// OpenAI's and Google's APIs send non-streamed bodies.
func jsIndent(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(v); err != nil {
		panic(err)
	}
	return b.String()
}

// compact returns the compact form of a JSON text.
func compact(s string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic(fmt.Sprintf("%v: %s", err, s))
	}
	return b.Bytes()
}

func sseEvent(event string, data any) string {
	return "event: " + event + "\ndata: " + string(js(data)) + "\n\n"
}

// ---------------------------------------------------------------------
// Deterministic provider-shaped ids

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func idChars(seed, alphabet string, n int) string {
	h := sha256.Sum256([]byte(seed))
	out := make([]byte, n)
	for i := range out {
		if i > 0 && i%len(h) == 0 {
			h = sha256.Sum256(h[:])
		}
		out[i] = alphabet[int(h[i%len(h)])%len(alphabet)]
	}
	return string(out)
}

func fakeID(prefix, seed string, n int) string { return prefix + idChars(prefix+seed, alnum, n) }
func fakeHex(prefix, seed string, n int) string {
	return prefix + idChars(prefix+seed, "0123456789abcdef", n)
}
func fakeB64(seed string, n int) string {
	return idChars(seed, alnum+"+/", n)
}

// ---------------------------------------------------------------------
// Anthropic Messages

const (
	sonnet  = "claude-sonnet-4-5-20250929"
	haiku   = "claude-haiku-4-5-20251001"
	ccUA    = "claude-cli/2.1.330 (external, cli)"
	ccPath  = "/v1/messages?beta=true"
	ccModel = sonnet
)

var eph = obj{{"type", "ephemeral"}}

// ablock is one content block of an assistant message, with the deltas it
// streams as.
type ablock struct {
	kind     string   // thinking, text, tool_use
	frags    []string // thinking or text deltas, or partial_json fragments
	sig      string
	id, name string
}

func thinking(sig string, frags ...string) ablock {
	return ablock{kind: "thinking", frags: frags, sig: sig}
}
func text(frags ...string) ablock { return ablock{kind: "text", frags: frags} }
func toolUse(id, name string, frags ...string) ablock {
	return ablock{kind: "tool_use", frags: frags, id: id, name: name}
}

func (b ablock) full() string { return strings.Join(b.frags, "") }

// input is the tool input as the client re-sends it: JSON.stringify of
// the parsed partial_json, i.e. compact.
func (b ablock) input() json.RawMessage { return compact(b.full()) }

func (b ablock) startBlock() obj {
	switch b.kind {
	case "thinking":
		return obj{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
	case "text":
		return obj{{"type", "text"}, {"text", ""}}
	}
	return obj{{"type", "tool_use"}, {"id", b.id}, {"name", b.name}, {"input", obj{}}}
}

func (b ablock) delta(f string) obj {
	switch b.kind {
	case "thinking":
		return obj{{"type", "thinking_delta"}, {"thinking", f}}
	case "text":
		return obj{{"type", "text_delta"}, {"text", f}}
	}
	return obj{{"type", "input_json_delta"}, {"partial_json", f}}
}

// history is the block as the client re-sends it.
func (b ablock) history() obj {
	switch b.kind {
	case "thinking":
		return obj{{"type", "thinking"}, {"thinking", b.full()}, {"signature", b.sig}}
	case "text":
		return obj{{"type", "text"}, {"text", b.full()}}
	}
	return obj{{"type", "tool_use"}, {"id", b.id}, {"name", b.name}, {"input", b.input()}}
}

type ausage struct{ in, cacheRead, cacheWrite, out int }

func (u ausage) obj(out int) obj {
	return obj{{"input_tokens", u.in}, {"cache_creation_input_tokens", u.cacheWrite}, {"cache_read_input_tokens", u.cacheRead},
		{"cache_creation", obj{{"ephemeral_5m_input_tokens", u.cacheWrite}, {"ephemeral_1h_input_tokens", 0}}},
		{"output_tokens", out}, {"service_tier", "standard"}}
}

// amsg is an assistant message as the Messages API returns it.
type amsg struct {
	id, model string
	blocks    []ablock
	stop      string
	usage     ausage
}

const anthropicPing = "event: ping\ndata: {\"type\": \"ping\"}\n\n"

// events is the message as SSE: message_start (input usage), the blocks
// (a ping after the first block starts and after the first block stops),
// message_delta (stop reason, output usage), message_stop.
func (m amsg) events() []string {
	ev := []string{sseEvent("message_start", obj{{"type", "message_start"}, {"message", obj{{"model", m.model}, {"id", m.id},
		{"type", "message"}, {"role", "assistant"}, {"content", []any{}}, {"stop_reason", nil}, {"stop_sequence", nil}, {"usage", m.usage.obj(1)}}}})}
	for i, b := range m.blocks {
		ev = append(ev, sseEvent("content_block_start", obj{{"type", "content_block_start"}, {"index", i}, {"content_block", b.startBlock()}}))
		if i == 0 {
			ev = append(ev, anthropicPing)
		}
		for _, f := range b.frags {
			ev = append(ev, sseEvent("content_block_delta", obj{{"type", "content_block_delta"}, {"index", i}, {"delta", b.delta(f)}}))
		}
		if b.kind == "thinking" {
			ev = append(ev, sseEvent("content_block_delta", obj{{"type", "content_block_delta"}, {"index", i}, {"delta", obj{{"type", "signature_delta"}, {"signature", b.sig}}}}))
		}
		ev = append(ev, sseEvent("content_block_stop", obj{{"type", "content_block_stop"}, {"index", i}}))
		if i == 0 && len(m.blocks) > 1 {
			ev = append(ev, anthropicPing)
		}
	}
	ev = append(ev, sseEvent("message_delta", obj{{"type", "message_delta"}, {"delta", obj{{"stop_reason", m.stop}, {"stop_sequence", nil}}},
		{"usage", obj{{"output_tokens", m.usage.out}}}}))
	return append(ev, sseEvent("message_stop", obj{{"type", "message_stop"}}))
}

func (m amsg) json() string {
	var content []obj
	for _, b := range m.blocks {
		content = append(content, b.history())
	}
	return string(js(obj{{"id", m.id}, {"type", "message"}, {"role", "assistant"}, {"model", m.model}, {"content", content},
		{"stop_reason", m.stop}, {"stop_sequence", nil}, {"usage", m.usage.obj(m.usage.out)}}))
}

// assistant is the message as the client re-sends it in the history.
func (m amsg) assistant() amessage {
	var content []obj
	for _, b := range m.blocks {
		content = append(content, b.history())
	}
	return amessage{"assistant", content}
}

func (m amsg) describe(streamed bool) string {
	lines := []string{fmt.Sprintf("message %s, model %s", code(m.id), code(m.model))}
	for _, b := range m.blocks {
		var l string
		switch b.kind {
		case "thinking":
			l = fmt.Sprintf("thinking %s, signature %s", qc(b.full()), code(b.sig))
			if streamed {
				l += fmt.Sprintf(" (%d thinking_delta, then one signature_delta)", len(b.frags))
			}
		case "text":
			l = "text " + qc(b.full())
			if streamed {
				l += fmt.Sprintf(" (%d text_delta)", len(b.frags))
			}
		case "tool_use":
			l = fmt.Sprintf("tool_use %s %s input %s", code(b.id), b.name, code(string(b.input())))
			if streamed {
				l += fmt.Sprintf(" (%d input_json_delta", len(b.frags))
				if b.frags[0] == "" {
					l += ", the first empty"
				}
				l += ")"
			}
		}
		lines = append(lines, l)
	}
	u := m.usage
	lines = append(lines, fmt.Sprintf("stop_reason %s; usage input_tokens %d, cache_read_input_tokens %d, cache_creation_input_tokens %d (ephemeral_5m %d), output_tokens %d",
		code(m.stop), u.in, u.cacheRead, u.cacheWrite, u.cacheWrite, u.out))
	return strings.Join(lines, "<br>")
}

func anthropicRespHeaders(reqID, ctype string) []hdr {
	h := []hdr{{"Content-Type", ctype}}
	if strings.HasPrefix(ctype, "text/event-stream") {
		h = append(h, hdr{"Cache-Control", "no-cache"})
	}
	return append(h,
		hdr{"Request-Id", reqID},
		hdr{"Anthropic-Organization-Id", "6e0c4a1f-8b2d-4f3e-9a7c-5d1b3e2f4a60"},
		hdr{"Anthropic-Ratelimit-Unified-Status", "allowed"},
		hdr{"Via", "1.1 google"},
		hdr{"Cf-Cache-Status", "DYNAMIC"},
		hdr{"X-Robots-Tag", "none"},
		hdr{"Server", "cloudflare"},
		hdr{"Cf-Ray", idChars(reqID, "0123456789abcdef", 16) + "-FRA"},
	)
}

func anthropicSSE(m amsg, reqID string) reply {
	return reply{status: 200, header: anthropicRespHeaders(reqID, "text/event-stream; charset=utf-8"), parts: m.events(),
		gap: 2 * time.Millisecond, says: fmt.Sprintf("SSE, request-id %s<br>", code(reqID)) + m.describe(true)}
}

func anthropicJSON(m amsg, reqID string) reply {
	return reply{status: 200, header: anthropicRespHeaders(reqID, "application/json"), parts: []string{m.json()},
		says: fmt.Sprintf("JSON, request-id %s<br>", code(reqID)) + m.describe(false)}
}

func anthropicError(status int, typ, msg, reqID string, withID bool) reply {
	e := obj{{"type", "error"}, {"error", obj{{"type", typ}, {"message", msg}}}}
	if withID {
		e = append(e, kv{"request_id", reqID})
	}
	h := anthropicRespHeaders(reqID, "application/json")
	if status >= 500 {
		h = append(h, hdr{"X-Should-Retry", "true"})
	}
	body := string(js(e))
	return reply{status: status, header: h, parts: []string{body}, says: fmt.Sprintf("JSON error, request-id %s: %s", code(reqID), code(body))}
}

// amessage is one message of a request's history.
type amessage struct {
	role    string
	content []obj
}

func user(blocks ...obj) amessage { return amessage{"user", blocks} }
func utext(s string) obj          { return obj{{"type", "text"}, {"text", s}} }
func toolResult(id, content string, isErr bool) obj {
	return obj{{"type", "tool_result"}, {"tool_use_id", id}, {"content", content}, {"is_error", isErr}}
}

// cc is a Claude Code session.
type cc struct {
	session string
	cwd     string
}

func (c cc) headers(retry int) []hdr {
	return []hdr{
		{"Accept", "application/json"},
		{"Accept-Encoding", "gzip, deflate, br, zstd"},
		{"Anthropic-Beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27"},
		{"Anthropic-Dangerous-Direct-Browser-Access", "true"},
		{"Anthropic-Version", "2023-06-01"},
		{"Content-Type", "application/json"},
		{"User-Agent", ccUA},
		{"X-Api-Key", fakeAnthropicKey},
		{"X-App", "cli"},
		{"X-Claude-Code-Session-Id", c.session},
		{"X-Stainless-Arch", "x64"},
		{"X-Stainless-Lang", "js"},
		{"X-Stainless-Os", "Linux"},
		{"X-Stainless-Package-Version", "0.70.0"},
		{"X-Stainless-Retry-Count", strconv.Itoa(retry)},
		{"X-Stainless-Runtime", "node"},
		{"X-Stainless-Runtime-Version", "v22.19.0"},
		{"X-Stainless-Timeout", "600"},
	}
}

// userID is metadata.user_id: a JSON string holding the session id.
func (c cc) userID() string {
	return string(js(obj{{"device_id", fakeHex("", "device", 64)}, {"account_uuid", ""}, {"session_id", c.session}}))
}

func (c cc) system() []obj {
	return []obj{
		{{"type", "text"}, {"text", "You are Claude Code, Anthropic's official CLI for Claude."}, {"cache_control", eph}},
		{{"type", "text"}, {"text", "You are an interactive CLI tool that helps users with software engineering tasks. Use the instructions below and the tools available to you to assist the user.\n\n<env>\nWorking directory: " + c.cwd + "\nIs directory a git repo: Yes\nPlatform: linux\nToday's date: 2026-11-21\n</env>"}, {"cache_control", eph}},
	}
}

func ccSideSystem(task string) []obj {
	return []obj{{{"type", "text"}, {"text", "You are Claude Code, Anthropic's official CLI for Claude."}}, {{"type", "text"}, {"text", task}}}
}

const topicPrompt = "Analyze if this message indicates a new conversation topic. If it does, extract a 2-3 word title that captures the new topic. Format your response as a JSON object with two fields: 'isNewTopic' (boolean) and 'title' (string, or null if isNewTopic is false). Only include these fields, no other text."

func schema(props obj, required ...string) obj {
	return obj{{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", false},
		{"$schema", "http://json-schema.org/draft-07/schema#"}}
}

func prop(typ, desc string) obj { return obj{{"type", typ}, {"description", desc}} }

var ccToolDefs = map[string]obj{
	"Bash": {{"name", "Bash"}, {"description", "Executes a given bash command in a persistent shell session with optional timeout."},
		{"input_schema", schema(obj{{"command", prop("string", "The command to execute")}, {"timeout", prop("number", "Optional timeout in milliseconds (max 600000)")},
			{"description", prop("string", "Clear, concise description of what this command does in 5-10 words")}}, "command")}},
	"Read": {{"name", "Read"}, {"description", "Reads a file from the local filesystem."},
		{"input_schema", schema(obj{{"file_path", prop("string", "The absolute path to the file to read")}, {"offset", prop("number", "The line number to start reading from")},
			{"limit", prop("number", "The number of lines to read")}}, "file_path")}},
	"Grep": {{"name", "Grep"}, {"description", "A powerful search tool built on ripgrep."},
		{"input_schema", schema(obj{{"pattern", prop("string", "The regular expression pattern to search for in file contents")},
			{"path", prop("string", "File or directory to search in. Defaults to the current working directory.")}}, "pattern")}},
}

func ccTools(names ...string) []obj {
	var out []obj
	for _, n := range names {
		out = append(out, ccToolDefs[n])
	}
	return out
}

// ccReq is the body of one Messages request as Claude Code builds it.
type ccReq struct {
	model     string
	system    []obj
	tools     []obj
	msgs      []amessage
	maxTokens int
	thinking  int  // budget_tokens; 0 for none
	stream    bool // false: the key is left out
	cacheLast bool // cache_control on the last block of the last message
}

func (c cc) body(r ccReq) []byte {
	msgs := make([]obj, len(r.msgs))
	for i, m := range r.msgs {
		content := m.content
		if r.cacheLast && i == len(r.msgs)-1 {
			content = append([]obj(nil), content...)
			last := append(obj(nil), content[len(content)-1]...)
			content[len(content)-1] = append(last, kv{"cache_control", eph})
		}
		msgs[i] = obj{{"role", m.role}, {"content", content}}
	}
	o := obj{{"model", r.model}, {"messages", msgs}}
	if r.system != nil {
		o = append(o, kv{"system", r.system})
	}
	if r.tools != nil {
		o = append(o, kv{"tools", r.tools})
	}
	o = append(o, kv{"metadata", obj{{"user_id", c.userID()}}}, kv{"max_tokens", r.maxTokens})
	if r.thinking > 0 {
		o = append(o, kv{"thinking", obj{{"type", "enabled"}, {"budget_tokens", r.thinking}}})
	}
	if r.stream {
		o = append(o, kv{"stream", true})
	}
	return js(o)
}

// main is a main-loop request: system, tools, cache_control on the last
// block, streamed.
func (c cc) main(msgs []amessage, tools []obj, thinking int) []byte {
	return c.body(ccReq{model: ccModel, system: c.system(), tools: tools, msgs: msgs, maxTokens: 32000, thinking: thinking, stream: true, cacheLast: true})
}

func (c cc) step(name string, body []byte, retry int, resp reply, adds string) *step {
	return &step{name: name, method: "POST", path: ccPath, header: c.headers(retry), body: body, resp: resp, adds: adds}
}

func toolID(seed string) string { return fakeID("toolu_01", seed, 22) }
func msgID(seed string) string  { return fakeID("msg_01", seed, 22) }
func areq(seed string) string   { return fakeID("req_011C", seed, 20) }
func sig(seed string) string    { return fakeB64("sig"+seed, 92) + "==" }

// ---------------------------------------------------------------------
// Scenario: anthropic-tool-loop

func anthropicToolLoop() *scenario {
	c := cc{session: "3f8e2a61-7c4b-4d2e-9b1a-6e5f0c9d8a27", cwd: "/home/dev/shop"}
	tools := ccTools("Bash", "Read", "Grep")
	reminder := "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nContents of /home/dev/shop/CLAUDE.md (project instructions, checked into the codebase):\n\nRun `go test ./...` before committing.\n</system-reminder>"
	prompt := "TestCartTotal started failing after my refactor of cart/cart.go. Can you find out why?"
	u1 := user(utext(reminder), utext(prompt))

	bash := toolID("tool-loop/bash")
	r1 := amsg{id: msgID("tool-loop/1"), model: sonnet, stop: "tool_use", usage: ausage{in: 100, cacheRead: 2000, cacheWrite: 500, out: 80},
		blocks: []ablock{
			thinking(sig("tool-loop/1"), "The user says TestCartTotal fails after a refactor.", " Running the test first will show", " the actual failure message."),
			text("I'll run the failing test first", " to see the error."),
			toolUse(bash, "Bash", "", `{"command": "go test ./cart -run TestCartTotal -count=1 2>&1 | tail -5"`, `, "description": "Run the failing`, ` cart test"}`),
		}}
	title := amsg{id: msgID("tool-loop/title"), model: haiku, stop: "end_turn", usage: ausage{in: 187, out: 14},
		blocks: []ablock{text(`{"isNewTopic": true, "title": "Fix cart test"}`)}}
	bashOut := "--- FAIL: TestCartTotal (0.00s)\n    cart_test.go:42: Total() = 1998, want 2098\nFAIL\nFAIL\tshop/cart\t0.004s\nFAIL"

	read, grep := toolID("tool-loop/read"), toolID("tool-loop/grep")
	r2 := amsg{id: msgID("tool-loop/2"), model: sonnet, stop: "tool_use", usage: ausage{in: 12, cacheRead: 2500, cacheWrite: 310, out: 95},
		blocks: []ablock{
			text("The total is off by exactly 100.", " Let me read the cart code and look for the discount helpers."),
			toolUse(read, "Read", "", `{"file_path": "/home/dev/shop/`, `cart/cart.go"}`),
			toolUse(grep, "Grep", "", `{"pattern": "func .*Discount", "path": "/home/dev`, `/shop/internal/pricing"}`),
		}}
	readOut := "     1→package cart\n     2→\n     3→const shippingCents = 100\n     4→\n     5→// Total is the amount to charge, in cents.\n     6→func (c *Cart) Total() int {\n     7→\treturn c.Subtotal() - c.Discount()\n     8→}\n"
	grepOut := "<tool_use_error>Path does not exist: /home/dev/shop/internal/pricing</tool_use_error>"
	r3 := amsg{id: msgID("tool-loop/3"), model: sonnet, stop: "end_turn", usage: ausage{in: 9, cacheRead: 2810, cacheWrite: 420, out: 140},
		blocks: []ablock{text("Found it: `Total()` no longer adds the shipping fee.",
			" The refactor dropped `+ shippingCents` from line 7, so every total is 100 cents short (1998 instead of 2098).",
			"\n\nRestore it:\n\n```go\nreturn c.Subtotal() - c.Discount() + shippingCents\n```\n\n(The Grep failed because `internal/pricing` does not exist; the discount logic lives in `cart` itself.)")}}

	u2 := user(toolResult(bash, bashOut, false))
	u3 := user(toolResult(read, readOut, false), toolResult(grep, grepOut, true))
	return &scenario{
		name: "anthropic-tool-loop",
		about: "A Claude Code session (session id in `X-Claude-Code-Session-Id` and in `metadata.user_id`) with extended thinking: " +
			"a Bash call, then two parallel calls (Read, Grep) of which one fails, then the answer; " +
			"a non-streamed side request to Haiku (topic/title detection, different system prompt, no tools) runs between turns 1 and 2.",
		notes: []string{
			"System: 2 text blocks (`You are Claude Code, …` and the instructions with `<env>`), both with `cache_control` ephemeral; tools Bash, Read, Grep; `thinking` enabled with `budget_tokens` 31999; `max_tokens` 32000; `metadata.user_id` is the JSON string `" + strings.ReplaceAll(c.userID(), "|", "") + "`.",
			"Claude Code puts `cache_control` on the last block of the last message only: in #1 on the prompt text, from #3 on on the last `tool_result`, and the blocks that carried it before are re-sent without it.",
			"Assistant turns are re-sent verbatim (thinking with its signature, text, tool_use), except that tool_use `input` is re-sent compact (`JSON.stringify` of the parsed input) while the stream's `partial_json` has a space after `:` and `,`.",
			"Pings: one after the first `content_block_start` and one after the first `content_block_stop` when more blocks follow.",
		},
		steps: seq(
			c.step("turn 1", c.main([]amessage{u1}, tools, 31999), 0, anthropicSSE(r1, areq("tool-loop/1")),
				"new session; user message of 2 text blocks: a `<system-reminder>` with CLAUDE.md, then the prompt "+qc(prompt)+" (`cache_control` on the prompt)"),
			c.step("title", c.body(ccReq{model: haiku, system: ccSideSystem(topicPrompt), msgs: []amessage{user(utext(prompt))}, maxTokens: 512}), 0,
				anthropicJSON(title, areq("tool-loop/title")),
				"side request (not part of the conversation): Haiku, system "+qc(topicPrompt[:60]+"…")+", no tools, no `stream`; one user message with the prompt again"),
			c.step("turn 2", c.main([]amessage{u1, r1.assistant(), u2}, tools, 31999), 0, anthropicSSE(r2, areq("tool-loop/2")),
				"the assistant message of #1 (thinking, text, tool_use) and a user message with tool_result for "+code(bash)+" (is_error false, `cache_control`): "+qc(bashOut)),
			c.step("turn 3", c.main([]amessage{u1, r1.assistant(), u2, r2.assistant(), u3}, tools, 31999), 0, anthropicSSE(r3, areq("tool-loop/3")),
				"the assistant message of #3 (text, 2 tool_use) and a user message with 2 tool_results: "+code(read)+" (is_error false) "+qc(readOut)+
					", "+code(grep)+" (is_error **true**, `cache_control`) "+qc(grepOut)),
		),
	}
}

// ---------------------------------------------------------------------
// Scenario: anthropic-compaction

func anthropicCompaction() *scenario {
	c := cc{session: "9b2d4f6e-1a3c-4e5b-8d7f-0c2e4a6b8d10", cwd: "/home/dev/api"}
	tools := ccTools("Read")
	q1 := "What does the retry middleware in server/retry.go do?"
	a1 := amsg{id: msgID("compaction/1"), model: sonnet, stop: "end_turn", usage: ausage{in: 40, cacheWrite: 2100, out: 45},
		blocks: []ablock{text("It wraps every handler and retries idempotent requests", " up to 3 times with exponential backoff (100 ms, 200 ms, 400 ms)", " when the handler returns 502, 503 or 504.")}}
	q2 := "Does it retry POST requests?"
	a2 := amsg{id: msgID("compaction/2"), model: sonnet, stop: "end_turn", usage: ausage{in: 12, cacheRead: 2100, cacheWrite: 60, out: 24},
		blocks: []ablock{text("No: it only retries GET, HEAD and OPTIONS.", " A POST goes through exactly once.")}}
	sumAsk := "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions. Wrap your summary in <summary></summary> tags."
	sum := amsg{id: msgID("compaction/sum"), model: sonnet, stop: "end_turn", usage: ausage{in: 2251, out: 98},
		blocks: []ablock{text("<summary>\n1. Primary request: the user asked what the retry middleware in server/retry.go does",
			" and whether it retries POST requests.\n2. Facts established: it retries idempotent requests (GET, HEAD, OPTIONS) up to 3 times with exponential backoff (100/200/400 ms) on 502, 503 and 504;",
			" POST requests are never retried.\n3. Pending tasks: none.\n</summary>")}}
	cont := "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n" + sum.blocks[0].full()
	q3 := "Make it retry POST too when the request carries an Idempotency-Key header."
	a3 := amsg{id: msgID("compaction/3"), model: sonnet, stop: "end_turn", usage: ausage{in: 30, cacheWrite: 2240, out: 61},
		blocks: []ablock{text("Sure. In `isIdempotent(r)`, treat a POST with a non-empty `Idempotency-Key` header as idempotent:",
			"\n\n```go\ncase http.MethodPost:\n\treturn r.Header.Get(\"Idempotency-Key\") != \"\"\n```")}}
	q4 := "Add a test for it as well."
	a4 := amsg{id: msgID("compaction/4"), model: sonnet, stop: "end_turn", usage: ausage{in: 10, cacheRead: 2240, cacheWrite: 75, out: 52},
		blocks: []ablock{text("Added `TestRetryPostWithIdempotencyKey`: it sends a POST with `Idempotency-Key: k1` to a handler that fails twice with 503", " and checks that the third attempt succeeds.")}}
	q4b := "Actually, accept the header on PATCH too, and skip the test for now."
	a4b := amsg{id: msgID("compaction/4b"), model: sonnet, stop: "end_turn", usage: ausage{in: 16, cacheRead: 2240, cacheWrite: 80, out: 27},
		blocks: []ablock{text("Done: `isIdempotent(r)` now accepts POST and PATCH", " when `Idempotency-Key` is set. No test added.")}}

	h1 := []amessage{user(utext(q1))}
	h2 := append(append([]amessage(nil), h1...), a1.assistant(), user(utext(q2)))
	hs := append(append([]amessage(nil), h2...), a2.assistant(), user(utext(sumAsk)))
	p1 := []amessage{user(utext(cont), utext(q3))}
	p2 := append(append([]amessage(nil), p1...), a3.assistant(), user(utext(q4)))
	pf := append(append([]amessage(nil), p1...), a3.assistant(), user(utext(q4b)))
	retryBody := c.main(p2, tools, 0)
	sumBody := c.body(ccReq{model: sonnet, system: ccSideSystem("You are a helpful AI assistant tasked with summarizing conversations."),
		msgs: hs, maxTokens: 20000, stream: true, cacheLast: true})

	return &scenario{
		name: "anthropic-compaction",
		about: "A Claude Code session (thinking off) whose history is rewritten three ways: compaction (a summarization request, then the main loop restarts from a user message holding the summary), " +
			"a retried request (HTTP 529, then the identical body again), and a fork (the user edits their last message: the same first user message, a different second one).",
		notes: []string{
			"#3 is the compaction request: the same session, a different system prompt (`You are Claude Code, …` and `You are a helpful AI assistant tasked with summarizing conversations.`, no `cache_control`), no tools, `max_tokens` 20000; its history is #2's plus the assistant answer of #2 and the summarization instruction.",
			"#4 starts the main loop over: `messages` holds one user message (the continuation text with the summary of #3, then the new question) instead of the old history.",
			"#5 and #6 have byte-identical bodies; only `X-Stainless-Retry-Count` differs (0, then 1). #5 is the 529 and holds no assistant output.",
			"#7 re-sends #6's history up to the assistant answer of #4 and replaces the last user message: the branch of #6 is abandoned.",
		},
		steps: seq(
			c.step("turn 1", c.main(h1, tools, 0), 0, anthropicSSE(a1, areq("compaction/1")), "new session; user "+qc(q1)),
			c.step("turn 2", c.main(h2, tools, 0), 0, anthropicSSE(a2, areq("compaction/2")), "assistant answer of #1, user "+qc(q2)),
			c.step("summarize", sumBody, 0, anthropicSSE(sum, areq("compaction/sum")),
				"**compaction request**: system replaced (summarizer), no tools; history of #2 + assistant answer of #2 + user "+qc(sumAsk)),
			c.step("post-compaction", c.main(p1, tools, 0), 0, anthropicSSE(a3, areq("compaction/3")),
				"**history replaced** after compaction: one user message of 2 text blocks, "+qc(cont)+" and "+qc(q3)),
			c.step("retry 1", retryBody, 0, anthropicError(529, "overloaded_error", "Overloaded", areq("compaction/529"), false),
				"assistant answer of #4, user "+qc(q4)),
			c.step("retry 2", retryBody, 1, anthropicSSE(a4, areq("compaction/4")),
				"**retry** of #5: the same body byte for byte (`X-Stainless-Retry-Count: 1`)"),
			c.step("fork", c.main(pf, tools, 0), 0, anthropicSSE(a4b, areq("compaction/4b")),
				"**fork** of #6: the same history up to the assistant answer of #4, then user "+qc(q4b)+" instead of "+qc(q4)),
		),
	}
}

// ---------------------------------------------------------------------
// Scenario: anthropic-errors

func anthropicErrors() *scenario {
	c := cc{session: "c41a7e9d-2f6b-4a83-b5c0-7d1e9f3a2b64", cwd: "/home/dev/db"}
	tools := ccTools("Read")
	q1 := "Summarize what cmd/migrate does."
	u1 := []amessage{user(utext(q1))}

	cut := amsg{id: msgID("errors/a"), model: sonnet, usage: ausage{in: 25, cacheRead: 1800, cacheWrite: 40},
		blocks: []ablock{text("The `migrate` command reads", " the SQL files in migrations/")}}
	cutEvents := cut.events()[:5] // message_start, content_block_start, ping, 2 text_delta
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	cutEvents = append(cutEvents, "event: error\ndata: "+overloaded+"\n\n")

	slow := amsg{id: msgID("errors/b"), model: sonnet, stop: "end_turn", usage: ausage{in: 25, cacheRead: 1840, out: 60},
		blocks: []ablock{text("It reads the numbered", " SQL files in migrations/", " and applies", " every file", " newer than", " the version", " in schema_migrations.")}}

	q2 := "Sorry, go on, but keep it to one paragraph."
	interrupted := "[Request interrupted by user]"
	u2 := []amessage{user(utext(q1), utext(interrupted), utext(q2))}
	tooMany := c.body(ccReq{model: ccModel, system: c.system(), tools: tools, msgs: u2, maxTokens: 64001, stream: true, cacheLast: true})
	a2 := amsg{id: msgID("errors/d1"), model: sonnet, stop: "end_turn", usage: ausage{in: 38, cacheRead: 1840, cacheWrite: 30, out: 72},
		blocks: []ablock{text("cmd/migrate opens the database from DATABASE_URL, reads the numbered SQL files in migrations/",
			" and applies every file newer than the version stored in schema_migrations, each in its own transaction;",
			" --dry-run prints the plan without applying it.")}}
	title := amsg{id: msgID("errors/title"), model: haiku, stop: "end_turn", usage: ausage{in: 171, out: 12},
		blocks: []ablock{text(`{"isNewTopic": false, "title": null}`)}}
	q3 := "Does it support rolling back?"
	a3 := amsg{id: msgID("errors/e"), model: sonnet, stop: "end_turn", usage: ausage{in: 11, cacheRead: 1910, cacheWrite: 95, out: 23},
		blocks: []ablock{text("Not yet: there are only up migrations", " and no `down` command.")}}
	u3 := append(append([]amessage(nil), u2...), a2.assistant(), user(utext(q3)))

	gz := anthropicSSE(a2, areq("errors/d1"))
	gz.encoding = "gzip"
	br := anthropicJSON(title, areq("errors/title"))
	br.encoding = "br"
	zs := anthropicSSE(a3, areq("errors/e"))
	zs.encoding = "zstd"
	slowReply := anthropicSSE(slow, areq("errors/b"))
	slowReply.gap = 150 * time.Millisecond
	slowReply.says = fmt.Sprintf("SSE, request-id %s, one event every 150 ms; the full stream would be:<br>", code(areq("errors/b"))) + slow.describe(true)

	interrupt := c.step("interrupted", c.main(u1, tools, 0), 1, slowReply,
		"**retry** of #1 after the stream error: the same body (`X-Stainless-Retry-Count: 1`); the client cancels the request after reading the first `text_delta` (the user pressed Esc)")
	interrupt.cancelOn = "text_delta"
	return &scenario{
		name: "anthropic-errors",
		about: "A Claude Code session that meets every kind of failure: an `event: error` inside a 200 stream, a stream the client abandons (the proxy records an interruption), " +
			"a 400, and compressed responses (gzip SSE, br JSON, zstd SSE) that the proxy records as sent.",
		notes: []string{
			"#1 ends with `event: error` (overloaded_error) after two text deltas: no content_block_stop, message_delta or message_stop. HTTP-wise it completed (status 200, `complete` true); the message is cut.",
			"#2: the fake upstream writes one event every 150 ms and stops when the proxy drops the upstream connection. The recorded body is a prefix of the scripted stream, ending after the first text_delta; the response end says `complete` false.",
			"After the interruption Claude Code keeps `" + interrupted + "` as a user message; with no assistant message in between, consecutive user messages are merged into one user message of 3 text blocks (#4 on).",
			"#3 (side request) is answered br-compressed; #5 gzip-compressed SSE; #6 zstd-compressed SSE. Decompress with `codec/httpbody.Decode` using the recorded `Content-Encoding` when `decoded` is false.",
			"#4 is rejected with 400 (its `max_tokens` 64001 is over the model's limit); #5 re-sends the same conversation with `max_tokens` 32000.",
		},
		steps: seq(
			c.step("stream error", c.main(u1, tools, 0), 0,
				reply{status: 200, header: anthropicRespHeaders(areq("errors/a"), "text/event-stream; charset=utf-8"), parts: cutEvents, gap: 2 * time.Millisecond,
					says: fmt.Sprintf("SSE, request-id %s<br>message %s, model %s; message_start usage input_tokens %d, cache_read_input_tokens %d, cache_creation_input_tokens %d (ephemeral_5m %d), output_tokens 1"+
						"<br>text %s (2 text_delta), then `event: error` %s; the stream ends there (no content_block_stop, message_delta, message_stop)",
						code(areq("errors/a")), code(cut.id), code(sonnet), cut.usage.in, cut.usage.cacheRead, cut.usage.cacheWrite, cut.usage.cacheWrite,
						qc(cut.blocks[0].full()), code(overloaded))},
				"new session; user "+qc(q1)),
			interrupt,
			c.step("title", c.body(ccReq{model: haiku, system: ccSideSystem(topicPrompt), msgs: []amessage{user(utext(q2))}, maxTokens: 512}), 0, br,
				"side request (not part of the conversation): Haiku topic detection for the new prompt "+qc(q2)),
			c.step("400", tooMany, 0,
				anthropicError(400, "invalid_request_error", "max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for "+sonnet, areq("errors/c"), true),
				"no assistant message for #1/#2; one user message of 3 text blocks: "+qc(q1)+", "+qc(interrupted)+", "+qc(q2)+"; `max_tokens` 64001"),
			c.step("gzip", c.main(u2, tools, 0), 0, gz, "the same conversation as #4 with `max_tokens` 32000"),
			c.step("zstd", c.main(u3, tools, 0), 0, zs, "assistant answer of #5, user "+qc(q3)),
		),
	}
}

// ---------------------------------------------------------------------
// OpenAI Chat Completions

type ocall struct {
	id, name string
	frags    []string
}

func (c ocall) args() string { return strings.Join(c.frags, "") }

type ousage struct{ prompt, cached, completion, reasoning int }

func (u ousage) obj() obj {
	return obj{{"prompt_tokens", u.prompt}, {"completion_tokens", u.completion}, {"total_tokens", u.prompt + u.completion},
		{"prompt_tokens_details", obj{{"cached_tokens", u.cached}, {"audio_tokens", 0}}},
		{"completion_tokens_details", obj{{"reasoning_tokens", u.reasoning}, {"audio_tokens", 0}, {"accepted_prediction_tokens", 0}, {"rejected_prediction_tokens", 0}}}}
}

func (u ousage) String() string {
	return fmt.Sprintf("prompt_tokens %d (cached_tokens %d), completion_tokens %d (reasoning_tokens %d), total_tokens %d",
		u.prompt, u.cached, u.completion, u.reasoning, u.prompt+u.completion)
}

type ochat struct {
	id, model string
	created   int64
	text      []string
	calls     []ocall
	finish    string
	usage     ousage
}

func (m ochat) chunk(choices []any, usage any) string {
	return "data: " + string(js(obj{{"id", m.id}, {"object", "chat.completion.chunk"}, {"created", m.created}, {"model", m.model},
		{"service_tier", "default"}, {"system_fingerprint", nil}, {"choices", choices}, {"usage", usage}})) + "\n\n"
}

func (m ochat) delta(d obj, finish any) string {
	return m.chunk([]any{obj{{"index", 0}, {"delta", d}, {"logprobs", nil}, {"finish_reason", finish}}}, nil)
}

func callStart(i int, c ocall) obj {
	return obj{{"index", i}, {"id", c.id}, {"type", "function"}, {"function", obj{{"name", c.name}, {"arguments", ""}}}}
}

// events: the role chunk (with the first call's head when there are
// calls), argument fragments call by call, content fragments, the finish
// chunk, the usage chunk (stream_options.include_usage), [DONE].
func (m ochat) events() []string {
	var ev []string
	if len(m.calls) > 0 {
		ev = append(ev, m.delta(obj{{"role", "assistant"}, {"content", nil}, {"tool_calls", []any{callStart(0, m.calls[0])}}, {"refusal", nil}}, nil))
	} else {
		ev = append(ev, m.delta(obj{{"role", "assistant"}, {"content", ""}, {"refusal", nil}}, nil))
	}
	for i, c := range m.calls {
		if i > 0 {
			ev = append(ev, m.delta(obj{{"tool_calls", []any{callStart(i, c)}}}, nil))
		}
		for _, f := range c.frags {
			ev = append(ev, m.delta(obj{{"tool_calls", []any{obj{{"index", i}, {"function", obj{{"arguments", f}}}}}}}, nil))
		}
	}
	for _, f := range m.text {
		ev = append(ev, m.delta(obj{{"content", f}}, nil))
	}
	ev = append(ev, m.delta(obj{}, m.finish), m.chunk([]any{}, m.usage.obj()))
	return append(ev, "data: [DONE]\n\n")
}

func (m ochat) json() string {
	return jsIndent(obj{{"id", m.id}, {"object", "chat.completion"}, {"created", m.created}, {"model", m.model},
		{"choices", []any{obj{{"index", 0}, {"message", obj{{"role", "assistant"}, {"content", strings.Join(m.text, "")}, {"refusal", nil}, {"annotations", []any{}}}},
			{"logprobs", nil}, {"finish_reason", m.finish}}}},
		{"usage", m.usage.obj()}, {"service_tier", "default"}, {"system_fingerprint", nil}})
}

// assistant is the message as the client re-sends it.
func (m ochat) assistant() obj {
	if len(m.calls) == 0 {
		return obj{{"role", "assistant"}, {"content", strings.Join(m.text, "")}}
	}
	var calls []obj
	for _, c := range m.calls {
		calls = append(calls, obj{{"id", c.id}, {"type", "function"}, {"function", obj{{"name", c.name}, {"arguments", c.args()}}}})
	}
	return obj{{"role", "assistant"}, {"content", nil}, {"tool_calls", calls}}
}

func (m ochat) describe(streamed bool) string {
	lines := []string{fmt.Sprintf("completion %s, model %s", code(m.id), code(m.model))}
	for i, c := range m.calls {
		lines = append(lines, fmt.Sprintf("tool_calls[%d] %s %s arguments %s (%d fragments)", i, code(c.id), c.name, code(c.args()), len(c.frags)))
	}
	if len(m.text) > 0 {
		l := "content " + qc(strings.Join(m.text, ""))
		if streamed {
			l += fmt.Sprintf(" (%d fragments)", len(m.text))
		}
		lines = append(lines, l)
	}
	l := fmt.Sprintf("finish_reason %s; usage %s", code(m.finish), m.usage)
	if streamed {
		l = fmt.Sprintf("finish_reason %s; usage chunk (empty choices) %s; `data: [DONE]`", code(m.finish), m.usage)
	}
	return strings.Join(append(lines, l), "<br>")
}

func openaiRespHeaders(reqID, ctype string) []hdr {
	return []hdr{{"Content-Type", ctype}, {"X-Request-Id", reqID}, {"Openai-Organization", "user-fakeorg0bbengine0000000"},
		{"Openai-Processing-Ms", "412"}, {"Openai-Project", "proj_" + idChars(reqID, alnum, 24)}, {"Openai-Version", "2020-10-01"},
		{"X-Ratelimit-Limit-Requests", "5000"}, {"X-Ratelimit-Remaining-Requests", "4999"}, {"Cf-Cache-Status", "DYNAMIC"}, {"Server", "cloudflare"}}
}

func oreq(seed string) string { return fakeHex("req_", seed, 32) }

func openaiChat() *scenario {
	hdrs := []hdr{
		{"Accept", "application/json"},
		{"Authorization", "Bearer " + fakeOpenAIKey},
		{"Content-Type", "application/json"},
		{"User-Agent", "OpenAI/JS 5.23.2"},
		{"X-Stainless-Arch", "x64"},
		{"X-Stainless-Lang", "js"},
		{"X-Stainless-Os", "Linux"},
		{"X-Stainless-Package-Version", "5.23.2"},
		{"X-Stainless-Retry-Count", "0"},
		{"X-Stainless-Runtime", "node"},
		{"X-Stainless-Runtime-Version", "v22.19.0"},
		{"X-Bb-Session-Id", "oa-chat-1"},
	}
	fn := func(name, desc, param, pdesc string) obj {
		return obj{{"type", "function"}, {"function", obj{{"name", name}, {"description", desc},
			{"parameters", obj{{"type", "object"}, {"properties", obj{{param, prop("string", pdesc)}}}, {"required", []string{param}}, {"additionalProperties", false}}}}}}
	}
	tools := []obj{fn("read_file", "Read a file from the repository.", "path", "Path relative to the repository root"),
		fn("search_code", "Search the repository for a string.", "query", "Text to search for")}
	sys := obj{{"role", "system"}, {"content", "You are a coding assistant working in the user's repository. Use the tools to inspect files before answering."}}
	q1 := "Which port does the dev server listen on, and can I change it?"
	body := func(msgs []obj, stream bool) []byte {
		o := obj{{"model", "gpt-5-mini"}, {"messages", msgs}, {"tools", tools}, {"tool_choice", "auto"}}
		if stream {
			o = append(o, kv{"stream", true}, kv{"stream_options", obj{{"include_usage", true}}})
		}
		return js(o)
	}
	r1 := ochat{id: fakeID("chatcmpl-", "oa/1", 29), model: "gpt-5-mini-2025-08-07", created: 1763769601, finish: "tool_calls",
		usage: ousage{prompt: 1240, cached: 1024, completion: 155, reasoning: 128},
		calls: []ocall{
			{id: fakeID("call_", "oa/read", 24), name: "read_file", frags: []string{`{"path"`, `:"server/main`, `.go"}`}},
			{id: fakeID("call_", "oa/search", 24), name: "search_code", frags: []string{`{"query":"`, `PORT"}`}},
		}}
	out0 := "package main\n\nfunc main() {\n\tport := envOr(\"PORT\", \"8080\")\n\tlog.Fatal(http.ListenAndServe(\":\"+port, router()))\n}\n"
	out1 := ".env.example:1:PORT=8080\nserver/main.go:4:\tport := envOr(\"PORT\", \"8080\")\n"
	toolMsg := func(id, content string) obj {
		return obj{{"role", "tool"}, {"tool_call_id", id}, {"content", content}}
	}
	r2 := ochat{id: fakeID("chatcmpl-", "oa/2", 29), model: "gpt-5-mini-2025-08-07", created: 1763769605, finish: "stop",
		usage: ousage{prompt: 1420, cached: 1280, completion: 70},
		text:  []string{"It listens on port 8080 by default.", " The port comes from the `PORT` environment variable", " (see `envOr(\"PORT\", \"8080\")` in server/main.go), so you can change it without touching the code."}}
	q3 := "What's the exact command to run it on 3000?"
	r3 := ochat{id: fakeID("chatcmpl-", "oa/3", 29), model: "gpt-5-mini-2025-08-07", created: 1763769620, finish: "stop",
		usage: ousage{prompt: 1510, cached: 1408, completion: 40},
		text:  []string{"Run `PORT=3000 go run ./server` from the repository root."}}

	m1 := []obj{sys, {{"role", "user"}, {"content", q1}}}
	m2 := append(append([]obj(nil), m1...), r1.assistant(), toolMsg(r1.calls[0].id, out0), toolMsg(r1.calls[1].id, out1))
	m3 := append(append([]obj(nil), m2...), r2.assistant(), obj{{"role", "user"}, {"content", q3}})
	st := func(name string, body []byte, resp reply, adds string) *step {
		return &step{name: name, method: "POST", path: "/v1/chat/completions", header: hdrs, body: body, resp: resp, adds: adds}
	}
	sse := func(m ochat, seed string) reply {
		return reply{status: 200, header: openaiRespHeaders(oreq(seed), "text/event-stream; charset=utf-8"), parts: m.events(), gap: 2 * time.Millisecond,
			says: fmt.Sprintf("SSE (`data:` lines only), x-request-id %s<br>", code(oreq(seed))) + m.describe(true)}
	}
	return &scenario{
		name: "openai-chat",
		about: "An OpenAI Chat Completions client (the official JS SDK) with the session named by `X-Bb-Session-Id: oa-chat-1`: " +
			"a streamed turn with two parallel tool calls, a streamed answer after both tool results, then a non-streamed follow-up.",
		notes: []string{
			"Requests: model `gpt-5-mini`, the system message first, tools read_file and search_code, `tool_choice` auto; streamed ones add `stream` true and `stream_options.include_usage` true.",
			"The stream sends each call's head (`index`, `id`, `type`, `function.name`, empty `arguments`) once, then `arguments` fragments by `index`; call 0 completely before call 1. Every chunk carries `\"usage\":null` except the last, whose `choices` is empty.",
			"The assistant message is re-sent with `content` null and `tool_calls` (id, type, function name and the concatenated arguments string); each result is a `tool` message with `tool_call_id`.",
			"The non-streamed body is indented JSON with a final newline, as the API sends it.",
		},
		steps: seq(
			st("turn 1", body(m1, true), sse(r1, "oa/1"), "new session; system message, user "+qc(q1)),
			st("turn 2", body(m2, true), sse(r2, "oa/2"),
				"assistant message with the 2 tool_calls of #1; tool message "+code(r1.calls[0].id)+" "+qc(out0)+"; tool message "+code(r1.calls[1].id)+" "+qc(out1)),
			st("turn 3", body(m3, false), reply{status: 200, header: openaiRespHeaders(oreq("oa/3"), "application/json"), parts: []string{r3.json()},
				says: fmt.Sprintf("JSON `chat.completion`, x-request-id %s<br>", code(oreq("oa/3"))) + r3.describe(false)},
				"assistant answer of #2, user "+qc(q3)+"; not streamed (no `stream` key)"),
		),
	}
}

// ---------------------------------------------------------------------
// OpenAI Responses (Codex)

type ritem struct {
	kind         string // reasoning, function_call, message
	id           string
	frags        []string // summary text, arguments or output text
	enc          string   // reasoning: encrypted_content
	callID, name string
}

func (it ritem) full() string { return strings.Join(it.frags, "") }

func (it ritem) item(done bool) obj {
	status := "in_progress"
	if done {
		status = "completed"
	}
	switch it.kind {
	case "reasoning":
		summary := []any{}
		if done {
			summary = []any{obj{{"type", "summary_text"}, {"text", it.full()}}}
		}
		return obj{{"id", it.id}, {"type", "reasoning"}, {"encrypted_content", it.enc}, {"summary", summary}}
	case "function_call":
		args := ""
		if done {
			args = it.full()
		}
		return obj{{"id", it.id}, {"type", "function_call"}, {"status", status}, {"arguments", args}, {"call_id", it.callID}, {"name", it.name}}
	}
	content := []any{}
	if done {
		content = []any{obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", it.full()}}}
	}
	return obj{{"id", it.id}, {"type", "message"}, {"status", status}, {"content", content}, {"role", "assistant"}}
}

// history is the item as Codex re-sends it with store:false: without id.
func (it ritem) history() obj {
	switch it.kind {
	case "reasoning":
		return obj{{"type", "reasoning"}, {"summary", []any{obj{{"type", "summary_text"}, {"text", it.full()}}}}, {"encrypted_content", it.enc}}
	case "function_call":
		return obj{{"type", "function_call"}, {"name", it.name}, {"arguments", it.full()}, {"call_id", it.callID}}
	}
	return obj{{"type", "message"}, {"role", "assistant"}, {"content", []any{obj{{"type", "output_text"}, {"text", it.full()}}}}}
}

type rusage struct{ in, cached, out, reasoning int }

type rresp struct {
	id, model string
	created   int64
	items     []ritem
	usage     rusage
}

func (m rresp) response(status string, output []any, usage any) obj {
	return obj{{"id", m.id}, {"object", "response"}, {"created_at", m.created}, {"status", status}, {"error", nil}, {"incomplete_details", nil},
		{"model", m.model}, {"output", output}, {"parallel_tool_calls", false}, {"reasoning", obj{{"effort", "medium"}, {"summary", "auto"}}},
		{"store", false}, {"tool_choice", "auto"}, {"usage", usage}}
}

func (m rresp) events() []string {
	var ev []string
	n := 0
	add := func(typ string, fields ...kv) {
		ev = append(ev, sseEvent(typ, append(obj{{"type", typ}, {"sequence_number", n}}, fields...)))
		n++
	}
	add("response.created", kv{"response", m.response("in_progress", []any{}, nil)})
	add("response.in_progress", kv{"response", m.response("in_progress", []any{}, nil)})
	var output []any
	for i, it := range m.items {
		add("response.output_item.added", kv{"output_index", i}, kv{"item", it.item(false)})
		ids := []kv{{"item_id", it.id}, {"output_index", i}}
		switch it.kind {
		case "reasoning":
			s := append(ids, kv{"summary_index", 0})
			add("response.reasoning_summary_part.added", append(s, kv{"part", obj{{"type", "summary_text"}, {"text", ""}}})...)
			for _, f := range it.frags {
				add("response.reasoning_summary_text.delta", append(s, kv{"delta", f})...)
			}
			add("response.reasoning_summary_text.done", append(s, kv{"text", it.full()})...)
			add("response.reasoning_summary_part.done", append(s, kv{"part", obj{{"type", "summary_text"}, {"text", it.full()}}})...)
		case "function_call":
			for _, f := range it.frags {
				add("response.function_call_arguments.delta", append(ids, kv{"delta", f})...)
			}
			add("response.function_call_arguments.done", append(ids, kv{"arguments", it.full()})...)
		case "message":
			c := append(ids, kv{"content_index", 0})
			add("response.content_part.added", append(c, kv{"part", obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", ""}}})...)
			for _, f := range it.frags {
				add("response.output_text.delta", append(c, kv{"delta", f}, kv{"logprobs", []any{}})...)
			}
			add("response.output_text.done", append(c, kv{"text", it.full()}, kv{"logprobs", []any{}})...)
			add("response.content_part.done", append(c, kv{"part", obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", it.full()}}})...)
		}
		add("response.output_item.done", kv{"output_index", i}, kv{"item", it.item(true)})
		output = append(output, it.item(true))
	}
	u := m.usage
	add("response.completed", kv{"response", m.response("completed", output, obj{{"input_tokens", u.in}, {"input_tokens_details", obj{{"cached_tokens", u.cached}}},
		{"output_tokens", u.out}, {"output_tokens_details", obj{{"reasoning_tokens", u.reasoning}}}, {"total_tokens", u.in + u.out}})})
	return ev
}

func (m rresp) describe() string {
	lines := []string{fmt.Sprintf("response %s, model %s", code(m.id), code(m.model))}
	for i, it := range m.items {
		switch it.kind {
		case "reasoning":
			lines = append(lines, fmt.Sprintf("output[%d] reasoning %s summary %s (%d reasoning_summary_text.delta), encrypted_content %s", i, code(it.id), qc(it.full()), len(it.frags), code(it.enc)))
		case "function_call":
			lines = append(lines, fmt.Sprintf("output[%d] function_call %s call_id %s %s arguments %s (%d function_call_arguments.delta, then .done)", i, code(it.id), code(it.callID), it.name, code(it.full()), len(it.frags)))
		case "message":
			lines = append(lines, fmt.Sprintf("output[%d] message %s output_text %s (%d output_text.delta)", i, code(it.id), qc(it.full()), len(it.frags)))
		}
	}
	u := m.usage
	lines = append(lines, fmt.Sprintf("response.completed usage input_tokens %d (cached_tokens %d), output_tokens %d (reasoning_tokens %d), total_tokens %d",
		u.in, u.cached, u.out, u.reasoning, u.in+u.out))
	return strings.Join(lines, "<br>")
}

func openaiResponses() *scenario {
	session := "0199a3b2-7c1d-7e4f-9a2b-3c4d5e6f7a8b"
	hdrs := []hdr{
		{"Accept", "text/event-stream"},
		{"Authorization", "Bearer " + fakeOpenAIKey},
		{"Content-Type", "application/json"},
		{"Openai-Beta", "responses=experimental"},
		{"Originator", "codex_cli_rs"},
		{"Session-Id", session},
		{"User-Agent", "codex_cli_rs/0.50.0 (Ubuntu 24.4.0; x86_64) xterm-256color"},
		{"Version", "0.50.0"},
	}
	instructions := "You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI on a user's computer."
	shell := obj{{"type", "function"}, {"name", "shell"}, {"description", "Runs a shell command and returns its output."}, {"strict", false},
		{"parameters", obj{{"type", "object"}, {"properties", obj{
			{"command", obj{{"type", "array"}, {"items", obj{{"type", "string"}}}, {"description", "The command to execute"}}},
			{"workdir", prop("string", "The working directory to execute the command in")},
			{"timeout_ms", prop("number", "The timeout for the command in milliseconds")}}},
			{"required", []string{"command"}}, {"additionalProperties", false}}}}
	body := func(input []obj) []byte {
		return js(obj{{"model", "gpt-5-codex"}, {"instructions", instructions}, {"input", input}, {"tools", []obj{shell}}, {"tool_choice", "auto"},
			{"parallel_tool_calls", false}, {"reasoning", obj{{"effort", "medium"}, {"summary", "auto"}}}, {"store", false}, {"stream", true},
			{"include", []string{"reasoning.encrypted_content"}}, {"prompt_cache_key", session}})
	}
	msg := func(s string) obj {
		return obj{{"type", "message"}, {"role", "user"}, {"content", []any{obj{{"type", "input_text"}, {"text", s}}}}}
	}
	env := "<environment_context>\n  <cwd>/home/dev/web</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>"
	prompt := "Run the unit tests and tell me if anything fails."
	call := fakeID("call_", "codex/shell", 24)
	r1 := rresp{id: fakeHex("resp_", "codex/1", 50), model: "gpt-5-codex", created: 1763769700, usage: rusage{in: 3200, cached: 2944, out: 210, reasoning: 128},
		items: []ritem{
			{kind: "reasoning", id: fakeHex("rs_", "codex/1", 50), enc: "gAAAAABp" + fakeB64("codex/enc1", 120),
				frags: []string{"**Running", " the tests**\n\nI'll run", " the test suite with npm to see what fails."}},
			{kind: "function_call", id: fakeHex("fc_", "codex/1", 50), callID: call, name: "shell",
				frags: []string{`{"command":["bash","-lc","npm test"]`, `,"workdir":"/home/dev/web"`, `,"timeout_ms":120000}`}},
		}}
	output := string(js(obj{{"output", "> web@1.0.0 test\n> vitest run\n\n ✓ src/date.test.ts (4)\n ✗ src/cart.test.ts (1 failed)\n   → expected 20.98 to be 21.98\n\n Tests  1 failed | 4 passed (5)\n"},
		{"metadata", obj{{"exit_code", 1}, {"duration_seconds", 2.4}}}}))
	r2 := rresp{id: fakeHex("resp_", "codex/2", 50), model: "gpt-5-codex", created: 1763769712, usage: rusage{in: 3520, cached: 3328, out: 48},
		items: []ritem{{kind: "message", id: fakeHex("msg_", "codex/2", 50),
			frags: []string{"One test fails: ", "`src/cart.test.ts` expects 21.98 but gets 20.98", ", so the shipping fee seems to be missing from the total."}}}}

	in1 := []obj{msg(env), msg(prompt)}
	in2 := append(append([]obj(nil), in1...), r1.items[0].history(), r1.items[1].history(),
		obj{{"type", "function_call_output"}, {"call_id", call}, {"output", output}})
	st := func(name string, body []byte, m rresp, seed, adds string) *step {
		return &step{name: name, method: "POST", path: "/v1/responses", header: hdrs, body: body, adds: adds,
			resp: reply{status: 200, header: openaiRespHeaders(oreq(seed), "text/event-stream; charset=utf-8"), parts: m.events(), gap: 2 * time.Millisecond,
				says: fmt.Sprintf("SSE (`event:` + `data:`), x-request-id %s<br>", code(oreq(seed))) + m.describe()}}
	}
	return &scenario{
		name:  "openai-responses",
		about: "A Codex CLI session on the Responses API (`session-id` header, `store` false, `stream` true): a reasoning item and a shell function call, then the function output and a text answer.",
		notes: []string{
			"Requests: model `gpt-5-codex`, `instructions` " + qc(instructions) + ", tool `shell`, `parallel_tool_calls` false, `reasoning` {effort medium, summary auto}, `include` [`reasoning.encrypted_content`], `prompt_cache_key` = the session id.",
			"With `store` false Codex re-sends its previous output items inline and without their `id`s: the reasoning item (summary and `encrypted_content`) and the function_call (name, arguments, call_id); the result is a `function_call_output` item whose `output` is a JSON string (`output` text and `metadata`).",
			"Every event carries `sequence_number`; `response.created` and `response.in_progress` carry the response object with empty `output` and null `usage`; `response.completed` carries every output item and the usage.",
		},
		steps: seq(
			st("turn 1", body(in1), r1, "codex/1", "new session; input: user message "+qc(env)+", user message "+qc(prompt)),
			st("turn 2", body(in2), r2, "codex/2", "input items of #1's output without ids: reasoning (summary, encrypted_content), function_call "+code(call)+
				"; function_call_output "+code(call)+" "+qc(output)),
		),
	}
}

// ---------------------------------------------------------------------
// Gemini

type gpart struct {
	kind string // thought, text, call
	text string
	name string
	args string // call: compact JSON
	sig  string // call: thoughtSignature
}

func (p gpart) obj() obj {
	switch p.kind {
	case "thought":
		return obj{{"text", p.text}, {"thought", true}}
	case "text":
		return obj{{"text", p.text}}
	}
	return obj{{"functionCall", obj{{"name", p.name}, {"args", json.RawMessage(p.args)}}}, {"thoughtSignature", p.sig}}
}

type gusage struct{ prompt, cached, candidates, thoughts int }

func (u gusage) obj() obj {
	return obj{{"promptTokenCount", u.prompt}, {"candidatesTokenCount", u.candidates}, {"totalTokenCount", u.prompt + u.candidates + u.thoughts},
		{"cachedContentTokenCount", u.cached}, {"promptTokensDetails", []any{obj{{"modality", "TEXT"}, {"tokenCount", u.prompt}}}},
		{"cacheTokensDetails", []any{obj{{"modality", "TEXT"}, {"tokenCount", u.cached}}}}, {"thoughtsTokenCount", u.thoughts}}
}

func (u gusage) String() string {
	return fmt.Sprintf("usageMetadata promptTokenCount %d, cachedContentTokenCount %d, candidatesTokenCount %d, thoughtsTokenCount %d, totalTokenCount %d",
		u.prompt, u.cached, u.candidates, u.thoughts, u.prompt+u.candidates+u.thoughts)
}

// gresp is a Gemini response: one chunk per part when streamed, the
// last one with finishReason and usageMetadata.
type gresp struct {
	model, id string
	parts     []gpart
	usage     gusage
}

func (m gresp) chunk(parts []gpart, last bool) obj {
	var ps []obj
	for _, p := range parts {
		ps = append(ps, p.obj())
	}
	cand := obj{{"content", obj{{"parts", ps}, {"role", "model"}}}}
	if last {
		cand = append(cand, kv{"finishReason", "STOP"})
	}
	o := obj{{"candidates", []any{append(cand, kv{"index", 0})}}}
	if last {
		o = append(o, kv{"usageMetadata", m.usage.obj()})
	}
	return append(o, kv{"modelVersion", m.model}, kv{"responseId", m.id})
}

func (m gresp) events() []string {
	var ev []string
	for i, p := range m.parts {
		ev = append(ev, "data: "+string(js(m.chunk([]gpart{p}, i == len(m.parts)-1)))+"\r\n\r\n")
	}
	return ev
}

// history is the model turn as Gemini CLI re-sends it: thought parts
// dropped, adjacent text parts merged, calls with their signatures.
func (m gresp) history() obj {
	var ps []obj
	var txt string
	for _, p := range m.parts {
		switch p.kind {
		case "text":
			txt += p.text
		case "call":
			if txt != "" {
				ps = append(ps, obj{{"text", txt}})
				txt = ""
			}
			ps = append(ps, p.obj())
		}
	}
	if txt != "" {
		ps = append(ps, obj{{"text", txt}})
	}
	return obj{{"role", "model"}, {"parts", ps}}
}

func (m gresp) describe(streamed bool) string {
	lines := []string{fmt.Sprintf("responseId %s, modelVersion %s", code(m.id), code(m.model))}
	for i, p := range m.parts {
		var l string
		switch p.kind {
		case "thought":
			l = "thought part (`thought` true) " + qc(p.text)
		case "text":
			l = "text part " + qc(p.text)
		case "call":
			l = fmt.Sprintf("functionCall %s args %s, thoughtSignature %s", p.name, code(p.args), code(p.sig))
		}
		if streamed {
			l = fmt.Sprintf("chunk %d: %s", i+1, l)
		}
		lines = append(lines, l)
	}
	l := "finishReason `STOP`; " + m.usage.String()
	if streamed {
		l = "last chunk: " + l
	}
	return strings.Join(append(lines, l), "<br>")
}

func geminiRespHeaders(ctype string) []hdr {
	h := []hdr{{"Content-Type", ctype}}
	if strings.HasPrefix(ctype, "text/event-stream") {
		h = append(h, hdr{"Content-Disposition", "attachment"})
	}
	return append(h, hdr{"Vary", "Origin"}, hdr{"Vary", "X-Origin"}, hdr{"Vary", "Referer"}, hdr{"Server", "scaffolding on HTTPServer2"},
		hdr{"X-Xss-Protection", "0"}, hdr{"X-Frame-Options", "SAMEORIGIN"}, hdr{"X-Content-Type-Options", "nosniff"}, hdr{"Server-Timing", "gfet4t7; dur=1873"})
}

func gemini() *scenario {
	hdrs := []hdr{
		{"Content-Type", "application/json"},
		{"User-Agent", "GeminiCLI/0.11.0 (linux; x64) google-genai-sdk/1.16.0 gl-node/v22.19.0"},
		{"X-Goog-Api-Client", "google-genai-sdk/1.16.0 gl-node/v22.19.0"},
		{"X-Goog-Api-Key", fakeGoogleKey},
		{"X-Bb-Session-Id", "gem-1"},
		{"X-Bb-Task-Id", "task-7"},
	}
	decl := func(name, desc, param, pdesc string) obj {
		return obj{{"name", name}, {"description", desc},
			{"parametersJsonSchema", obj{{"type", "object"}, {"properties", obj{{param, prop("string", pdesc)}}}, {"required", []string{param}}}}}
	}
	tools := []any{obj{{"functionDeclarations", []obj{decl("read_file", "Reads and returns the content of a file.", "absolute_path", "The absolute path to the file to read."),
		decl("search_file_content", "Searches for a regular expression pattern within files.", "pattern", "The regular expression to search for.")}}}}
	system := obj{{"role", "user"}, {"parts", []any{obj{{"text", "You are an interactive CLI agent specializing in software engineering tasks."}}}}}
	body := func(contents []obj) []byte {
		return js(obj{{"contents", contents}, {"systemInstruction", system}, {"tools", tools},
			{"generationConfig", obj{{"temperature", 0}, {"topP", 1}, {"thinkingConfig", obj{{"includeThoughts", true}, {"thinkingBudget", -1}}}}}})
	}
	q := "Where is the log level configured in this project?"
	r1 := gresp{model: "gemini-2.5-pro", id: fakeID("", "gem/1", 23), usage: gusage{prompt: 5120, cached: 4096, candidates: 42, thoughts: 68},
		parts: []gpart{
			{kind: "thought", text: "**Locating the configuration**\n\nI'll check the config file for a log level setting."},
			{kind: "text", text: "I'll look at the "},
			{kind: "text", text: "config file first."},
			{kind: "call", name: "read_file", args: `{"absolute_path":"/home/dev/api/config/app.yaml"}`, sig: "CiQB" + fakeB64("gem/sig", 76)},
		}}
	fileOut := "server:\n  port: 8080\nlog:\n  level: info\n  format: json\n"
	r2 := gresp{model: "gemini-2.5-pro", id: fakeID("", "gem/2", 23), usage: gusage{prompt: 5190, cached: 5120, candidates: 38, thoughts: 0},
		parts: []gpart{
			{kind: "text", text: "It's set in `config/app.yaml` under `log.level`"},
			{kind: "text", text: " (currently `info`). Change it there and restart the server."},
		}}
	next := "Analyze *only* the content and structure of your immediately preceding response (your last turn in the conversation history). Based *strictly* on that response, determine who should logically speak next: the 'user' or the 'model' (you)."
	verdict := `{"reasoning": "The last response answered the question completely.", "next_speaker": "user"}`
	r3 := gresp{model: "gemini-2.5-flash", id: fakeID("", "gem/3", 23), usage: gusage{prompt: 5290, cached: 0, candidates: 21},
		parts: []gpart{{kind: "text", text: verdict}}}

	c1 := []obj{{{"role", "user"}, {"parts", []any{obj{{"text", q}}}}}}
	fr := obj{{"role", "user"}, {"parts", []any{obj{{"functionResponse", obj{{"name", "read_file"}, {"response", obj{{"output", fileOut}}}}}}}}}
	c2 := append(append([]obj(nil), c1...), r1.history(), fr)
	c3 := append(append([]obj(nil), c2...), r2.history(), obj{{"role", "user"}, {"parts", []any{obj{{"text", next}}}}})
	nextBody := js(obj{{"contents", c3}, {"generationConfig", obj{{"temperature", 0}, {"topP", 1}, {"responseMimeType", "application/json"},
		{"responseJsonSchema", obj{{"type", "object"}, {"properties", obj{{"reasoning", obj{{"type", "string"}}}, {"next_speaker", obj{{"type", "string"}, {"enum", []string{"user", "model"}}}}}},
			{"required", []string{"reasoning", "next_speaker"}}}}, {"thinkingConfig", obj{{"thinkingBudget", 0}}}}}})

	stream := "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
	sse := func(m gresp) reply {
		return reply{status: 200, header: geminiRespHeaders("text/event-stream"), parts: m.events(), gap: 2 * time.Millisecond,
			says: "SSE (`data:` lines, CRLF line ends), one candidate per chunk<br>" + m.describe(true)}
	}
	st := func(name, path string, body []byte, resp reply, adds string) *step {
		return &step{name: name, method: "POST", path: path, header: hdrs, body: body, resp: resp, adds: adds}
	}
	return &scenario{
		name: "gemini",
		about: "A Gemini CLI session on the Gemini API (`x-goog-api-key`; session and task named by `X-Bb-Session-Id: gem-1` and `X-Bb-Task-Id: task-7`): " +
			"a streamed turn with a thought, text and a function call, a streamed answer after the function response, then a non-streamed side call.",
		notes: []string{
			"The model and streaming are in the path (`models/<model>:streamGenerateContent?alt=sse` or `:generateContent`); the body has neither, so the request start's `model` is empty and `stream` false. The task id is in the request start's `task_id`.",
			"Requests: `contents`, `systemInstruction`, tools read_file and search_file_content (`parametersJsonSchema`), `generationConfig` with `thinkingConfig` {includeThoughts true, thinkingBudget -1}.",
			"Gemini CLI re-sends the model turn without its thought parts and with adjacent text parts merged; the functionCall part keeps its `thoughtSignature`. Gemini calls have no ids: the functionResponse names the function.",
			"#3 is a side call (Gemini CLI's next-speaker check): `gemini-2.5-flash`, the whole history plus a user instruction, JSON response schema, no tools, no system instruction, not streamed; its body is indented JSON as the API sends it.",
		},
		steps: seq(
			st("turn 1", stream, body(c1), sse(r1), "new session; user "+qc(q)),
			st("turn 2", stream, body(c2), sse(r2), "model turn of #1 (text merged, functionCall with thoughtSignature; the thought dropped); user functionResponse read_file "+code(`{"output":…}`)+" "+qc(fileOut)),
			st("next speaker", "/v1beta/models/gemini-2.5-flash:generateContent", nextBody,
				reply{status: 200, header: geminiRespHeaders("application/json; charset=UTF-8"), parts: []string{jsIndent(r3.chunk(r3.parts, true))},
					says: "JSON<br>" + r3.describe(false)},
				"side call (not part of the conversation): history of #2 + model turn of #2 + user "+qc(next)),
		),
	}
}

// ---------------------------------------------------------------------
// Scenario: interleaved

func interleaved() *scenario {
	a := cc{session: "6d0f3c2a-5b8e-4f71-a9c4-1e2d3b4a5c6f", cwd: "/home/dev/api"}
	b := cc{session: "e7a9b1c3-d5f7-4a2b-8c6d-0f1e2a3b4c5d", cwd: "/home/dev/svc"}
	tools := ccTools("Bash", "Read")
	qa := "List the TODOs in the repo."
	qb := "What Go version does this module need?"
	bashID, readID := toolID("inter/a-bash"), toolID("inter/b-read")
	a1 := amsg{id: msgID("inter/a1"), model: sonnet, stop: "tool_use", usage: ausage{in: 20, cacheWrite: 1900, out: 48},
		blocks: []ablock{text("I'll search", " for TODO comments."), toolUse(bashID, "Bash", "", `{"command": "grep -rn TODO --include=*.go ."`, `, "description": "Find TODO comments"}`)}}
	b1 := amsg{id: msgID("inter/b1"), model: sonnet, stop: "tool_use", usage: ausage{in: 18, cacheWrite: 1890, out: 40},
		blocks: []ablock{text("Checking", " go.mod."), toolUse(readID, "Read", "", `{"file_path": "/home/dev/svc/`, `go.mod"}`)}}
	outA := "./internal/db/pool.go:88:\t// TODO: make the pool size configurable\n./cmd/api/main.go:23:\t// TODO: graceful shutdown"
	outB := "     1→module example.com/svc\n     2→\n     3→go 1.23\n"
	a2 := amsg{id: msgID("inter/a2"), model: sonnet, stop: "end_turn", usage: ausage{in: 9, cacheRead: 1900, cacheWrite: 120, out: 44},
		blocks: []ablock{text("There are two TODOs:", "\n- internal/db/pool.go:88: make the pool size configurable", "\n- cmd/api/main.go:23: graceful shutdown")}}
	b2 := amsg{id: msgID("inter/b2"), model: sonnet, stop: "end_turn", usage: ausage{in: 7, cacheRead: 1890, cacheWrite: 60, out: 21},
		blocks: []ablock{text("It needs Go 1.23", " (the `go` directive in go.mod).")}}
	ua, ub := user(utext(qa)), user(utext(qb))
	slow := func(r reply) reply { r.gap = 15 * time.Millisecond; return r }
	s := []*step{
		a.step("A turn 1", a.main([]amessage{ua}, tools, 0), 0, slow(anthropicSSE(a1, areq("inter/a1"))), "session A: new session; user "+qc(qa)),
		b.step("B turn 1", b.main([]amessage{ub}, tools, 0), 0, slow(anthropicSSE(b1, areq("inter/b1"))), "session B: new session; user "+qc(qb)),
		a.step("A turn 2", a.main([]amessage{ua, a1.assistant(), user(toolResult(bashID, outA, false))}, tools, 0), 0, slow(anthropicSSE(a2, areq("inter/a2"))),
			"session A: assistant message of its turn 1, tool_result "+code(bashID)+" (is_error false) "+qc(outA)),
		b.step("B turn 2", b.main([]amessage{ub, b1.assistant(), user(toolResult(readID, outB, false))}, tools, 0), 0, slow(anthropicSSE(b2, areq("inter/b2"))),
			"session B: assistant message of its turn 1, tool_result "+code(readID)+" (is_error false) "+qc(outB)),
	}
	s[0].group, s[1].group, s[2].group, s[3].group = 0, 0, 1, 1
	s[1].delay, s[3].delay = 25*time.Millisecond, 25*time.Millisecond
	return &scenario{
		name: "interleaved",
		about: "Two Claude Code sessions (A and B, different `X-Claude-Code-Session-Id`) through one proxy, each a 2-turn tool loop. " +
			"Both turn-1 requests are in flight at once, then both turn-2 requests; the upstream writes one event every 15 ms, so the frames of the two streams interleave in the WAL.",
		notes: []string{
			"Assign frames to exchanges by the frame header's exchange id and exchanges to sessions by the request start; WAL order says nothing about which session a frame belongs to.",
			"B's requests are sent 25 ms after A's, so A's exchanges come first in WAL order; their bodies interleave with B's.",
		},
		steps:      s,
		interleave: true,
	}
}

func scenarios() []*scenario {
	return []*scenario{anthropicToolLoop(), anthropicCompaction(), anthropicErrors(), openaiChat(), openaiResponses(), gemini(), interleaved()}
}

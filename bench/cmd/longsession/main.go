// Command longsession plays one long, growing coding-agent session through
// `bbengine proxy` (derivation, memory and index on, as users run it) and
// through a bare httputil.ReverseProxy in the same run, and prints what
// each costs, bucket by bucket, as ratios.
//
//	go run ./bench/cmd/longsession                 # 300 turns, about 700 KB of history by the end
//	go run ./bench/cmd/longsession -turns 100      # a quick run
//	go run ./bench/cmd/longsession -bin ./bbengine -dir /tmp/bb -cpuprofile /tmp/bb.pprof
//
// The session is what Claude Code sends: every request resends the whole
// history (a large system prompt and tool list, then user prompt,
// assistant text and tool_use, user tool_result, ...) with the
// cache_control marker moved to the newest message, and every response
// is a stream of text and a tool call. Each turn goes through both
// proxies, in alternating order, to the same fake Anthropic upstream on
// 127.0.0.1 (in this process). Both proxies are subprocesses, so each
// one's process CPU is its own (/proc/<pid>/stat); bbengine's includes
// the derivation it still owes at the end (the driver waits until it has
// caught up). Latency is measured by the client: to the first body byte
// and to the end of the stream. A stream that fails or lacks its
// message_stop event counts as failed. Linux only (it reads /proc).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/engine"
)

func main() {
	turns := flag.Int("turns", 300, "turns of the session")
	historyKB := flag.Int("history", 700, "request body size (KB) at the last turn")
	bucket := flag.Int("bucket", 50, "turns per reported bucket")
	bin := flag.String("bin", "", "bbengine binary (default: go build it into a temporary directory)")
	dir := flag.String("dir", "", "data directory (default: a temporary directory, removed afterwards)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole bbengine proxy run to this file (BBENGINE_CPUPROFILE)")
	bare := flag.String("bare", "", "internal: serve a bare reverse proxy to this upstream URL and print its address")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	metricsOut := flag.String("metrics", "", "write the proxy's /_bb/metrics after the session to this file")
	encrypt := flag.Bool("encrypt", false, "make the data directory with `bbengine init --encrypt` (a passphrase slot; BBENGINE_PASSPHRASE, or a fixed one) and record into it")
	extra := flag.String("proxy-args", "", "more arguments for bbengine proxy, space-separated (e.g. \"--mode degrade\")")
	flag.Parse()
	if *bare != "" {
		serveBare(*bare)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cfg := config{extra: strings.Fields(*extra), turns: *turns, historyKB: *historyKB, bucket: max(*bucket, 1), bin: *bin, dir: *dir, cpuprofile: *cpuprofile, metrics: *metricsOut, encrypt: *encrypt}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "longsession:", err)
		os.Exit(1)
	}
}

type config struct {
	extra                    []string
	turns, historyKB, bucket int
	bin, dir, cpuprofile     string
	metrics                  string
	encrypt                  bool
}

// serveBare runs the baseline: httputil.ReverseProxy, flushing every
// write, as a Go programmer would put in front of an upstream.
func serveBare(upstream string) {
	u, err := url.Parse(upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(ln.Addr().String())
	http.Serve(ln, rp)
}

// proc is one proxy under test.
type proc struct {
	name string
	cmd  *exec.Cmd
	base string
	out  bytes.Buffer
	lat  []sample
}

type sample struct {
	ttfb, total time.Duration
	failed      bool
	why         string
}

func run(ctx context.Context, cfg config) error {
	tmp, err := os.MkdirTemp("", "longsession-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := cfg.dir
	if dir == "" {
		dir = filepath.Join(tmp, "data")
	}
	bin := cfg.bin
	if bin == "" {
		bin = filepath.Join(tmp, "bbengine")
		fmt.Fprintln(os.Stderr, "building bbengine")
		b := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		b.Dir = moduleRoot()
		b.Stdout, b.Stderr = os.Stderr, os.Stderr
		if err := b.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	if cfg.encrypt {
		if os.Getenv("BBENGINE_PASSPHRASE") == "" {
			os.Setenv("BBENGINE_PASSPHRASE", "longsession passphrase")
		}
		init := exec.CommandContext(ctx, bin, "--dir", dir, "init", "--encrypt")
		init.Stdout, init.Stderr = os.Stderr, os.Stderr
		if err := init.Run(); err != nil {
			return fmt.Errorf("bbengine init --encrypt: %w", err)
		}
	}
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: upstream{}}
	go srv.Serve(up)
	defer srv.Close()
	upURL := "http://" + up.Addr().String()

	// The bare proxy: this program in its -bare mode.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bp := &proc{name: "bare"}
	bp.cmd = exec.CommandContext(ctx, self, "-bare", upURL)
	stdout, err := bp.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	bp.cmd.Stderr = &bp.out
	if err := bp.cmd.Start(); err != nil {
		return err
	}
	defer func() { bp.cmd.Process.Kill(); bp.cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("bare proxy: %w: %s", err, bp.out.String())
	}
	bp.base = "http://" + strings.TrimSpace(line)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	listen := ln.Addr().String()
	ln.Close()
	bb := &proc{name: "bbengine", base: "http://" + listen}
	args := append([]string{"--dir", dir, "proxy", "--listen", listen, "--breaker", "off", "--upstream", "anthropic=" + upURL}, cfg.extra...)
	bb.cmd = exec.CommandContext(ctx, bin, args...)
	bb.cmd.Stdout, bb.cmd.Stderr = &bb.out, &bb.out
	if cfg.cpuprofile != "" {
		bb.cmd.Env = append(os.Environ(), "BBENGINE_CPUPROFILE="+cfg.cpuprofile)
	}
	if err := bb.cmd.Start(); err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			bb.cmd.Process.Kill()
			bb.cmd.Wait()
		}
	}()
	if err := waitHealth(ctx, bb.base); err != nil {
		return fmt.Errorf("%w\n%s", err, bb.out.String())
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	sess := newSession(cfg.turns, cfg.historyKB)
	procs := []*proc{bp, bb}
	type cpuMark struct{ bare, bb time.Duration }
	var marks []cpuMark
	mark := func() {
		marks = append(marks, cpuMark{cpuTime(bp.cmd.Process.Pid), cpuTime(bb.cmd.Process.Pid)})
	}
	mark()
	var sizes []int
	bareRetries := 0
	for turn := 1; turn <= cfg.turns; turn++ {
		body := sess.request(turn)
		sizes = append(sizes, len(body))
		order := procs
		if turn%2 == 0 {
			order = []*proc{bb, bp}
		}
		for _, p := range order {
			s := send(ctx, client, p.base, sess.id, turn, body)
			if s.failed {
				fmt.Fprintf(os.Stderr, "turn %d through %s failed: %s\n", turn, p.name, s.why)
				if p == bp {
					// Go's ReverseProxy now and then loses an upstream
					// connection on loopback (golang/go#40747): count it,
					// and measure the turn again.
					bareRetries++
					s = send(ctx, client, p.base, sess.id, turn, body)
				}
			}
			p.lat = append(p.lat, s)
		}
		if turn%cfg.bucket == 0 || turn == cfg.turns {
			mark()
			fmt.Fprintf(os.Stderr, "turn %d: request %d KB\n", turn, len(body)>>10)
		}
	}
	t0 := time.Now()
	if err := waitDerived(ctx, dir, sess.id, cfg.turns); err != nil {
		return fmt.Errorf("%w\n%s", err, bb.out.String())
	}
	catchUp := time.Since(t0)
	mark()
	final := marks[len(marks)-1]
	added := scrapeAdded(bb.base, cfg.metrics)
	bareHWM, bbHWM := peakRSS(bp.cmd.Process.Pid), peakRSS(bb.cmd.Process.Pid)
	bb.cmd.Process.Signal(os.Interrupt)
	bb.cmd.Wait()
	stopped = true
	dataSize, walSize := dirSize(dir), dirSize(filepath.Join(dir, "wal"))

	fmt.Printf("A %d-turn session (request body %d KB at turn 1, %d KB at the last), through a bare httputil.ReverseProxy and through `bbengine proxy` (lossless, derivation on), alternating, one client.\n\n",
		cfg.turns, sizes[0]>>10, sizes[len(sizes)-1]>>10)
	fmt.Println("| turns | body KB | bare p50 | bbengine p50 | ratio | bare p99 | bbengine p99 | ratio | bare CPU | bbengine CPU | ratio |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, lo := 0, 0; lo < cfg.turns; i, lo = i+1, lo+cfg.bucket {
		hi := min(lo+cfg.bucket, cfg.turns)
		a, b := summarize(bp.lat[lo:hi]), summarize(bb.lat[lo:hi])
		ca, cb := marks[i+1].bare-marks[i].bare, marks[i+1].bb-marks[i].bb
		fmt.Printf("| %d-%d | %d | %s | %s | %.2f | %s | %s | %.2f | %s | %s | %.1f |\n", lo+1, hi, sizes[hi-1]>>10,
			ms(a.p50), ms(b.p50), ratio(b.p50, a.p50), ms(a.p99), ms(b.p99), ratio(b.p99, a.p99),
			ms(ca), ms(cb), ratio(cb, ca))
	}
	a, b := summarize(bp.lat), summarize(bb.lat)
	fmt.Printf("\n| measure | bare | bbengine | ratio |\n|---|---:|---:|---:|\n")
	fmt.Printf("| process CPU, whole session (bbengine: until derived) | %s | %s | %.1f |\n", ms(final.bare-marks[0].bare), ms(final.bb-marks[0].bb), ratio(final.bb-marks[0].bb, final.bare-marks[0].bare))
	fmt.Printf("| p50 to first byte | %s | %s | %.2f |\n", ms(a.ttfb50), ms(b.ttfb50), ratio(b.ttfb50, a.ttfb50))
	fmt.Printf("| p50 total | %s | %s | %.2f |\n", ms(a.p50), ms(b.p50), ratio(b.p50, a.p50))
	fmt.Printf("| failed streams | %d (+%d retried) | %d | |\n", a.failed, bareRetries, b.failed)
	fmt.Printf("| derivation caught up after the last turn | | %s | |\n", catchUp.Round(time.Millisecond))
	if added != "" {
		fmt.Printf("| latency the proxy adds, by its own /_bb/metrics (mean over the session) | | %s | |\n", added)
	}
	if bareHWM > 0 && bbHWM > 0 {
		fmt.Printf("| peak RSS (VmHWM) | %s | %s | %.1f |\n", mb(bareHWM), mb(bbHWM), float64(bbHWM)/float64(bareHWM))
	}
	fmt.Printf("| data directory / WAL | | %s / %s | %.2f |\n", mb(dataSize), mb(walSize), float64(dataSize)/float64(max(walSize, 1)))
	fmt.Printf("| derived state (data directory less WAL) / WAL | | %s | %.2f |\n", mb(dataSize-walSize), float64(dataSize-walSize)/float64(max(walSize, 1)))
	if b.failed > 0 {
		return fmt.Errorf("%d streams through bbengine failed; its log:\n%s", b.failed, bb.out.String())
	}
	return nil
}

// peakRSS is a process's VmHWM in bytes, or 0 when it cannot be read.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

type stats struct {
	p50, p99, ttfb50 time.Duration
	failed           int
}

func summarize(s []sample) stats {
	var tot, ttfb []time.Duration
	var st stats
	for _, x := range s {
		if x.failed {
			st.failed++
			continue
		}
		tot = append(tot, x.total)
		ttfb = append(ttfb, x.ttfb)
	}
	slices.Sort(tot)
	slices.Sort(ttfb)
	st.p50, st.p99, st.ttfb50 = pct(tot, 0.50), pct(tot, 0.99), pct(ttfb, 0.50)
	return st
}

func pct(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
func mb(n int64) string         { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func send(ctx context.Context, client *http.Client, base, session string, turn int, body []byte) sample {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return sample{failed: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("User-Agent", "claude-cli/2.1.90 (external, cli)")
	req.Header.Set("X-Claude-Code-Session-Id", session)
	req.Header.Set(turnHeader, strconv.Itoa(turn))
	req.Header.Set("X-Api-Key", "sk-ant-api03-bench-not-a-real-key-000000000000000000000000")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return sample{failed: true, why: err.Error()}
	}
	defer resp.Body.Close()
	var first time.Duration
	buf := make([]byte, 32<<10)
	var got []byte
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && first == 0 {
			first = time.Since(t0)
		}
		got = append(got, buf[:n]...)
		if err != nil {
			if err != io.EOF {
				return sample{failed: true, why: err.Error()}
			}
			break
		}
	}
	total := time.Since(t0)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte("event: message_stop")) {
		return sample{failed: true, why: fmt.Sprintf("%s: %.200q", resp.Status, got)}
	}
	return sample{ttfb: first, total: total}
}

// session generates the requests of one growing session.
type session struct {
	id     string
	head   []byte // everything before the messages
	msgs   [][]byte
	perAdd int
}

func newSession(turns, historyKB int) *session {
	s := &session{id: "5f0c8a52-2d4e-4b7a-9c1e-" + fmt.Sprintf("%012d", time.Now().UnixNano()%1e12)}
	var sys strings.Builder
	for i := 0; sys.Len() < 14<<10; i++ {
		fmt.Fprintf(&sys, "Rule %d: you are an interactive coding agent; read files before you edit them, keep changes small, run the tests, and explain what you changed. ", i)
	}
	var tools []string
	for i := 0; i < 16; i++ {
		tools = append(tools, fmt.Sprintf(`{"name":"Tool%d","description":"%s","input_schema":{"type":"object","properties":{"path":{"type":"string","description":"the file to act on"},"pattern":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}}`,
			i, strings.Repeat("Does one thing to the workspace and reports what happened. ", 20)))
	}
	sysJSON, _ := json.Marshal(sys.String())
	meta, _ := json.Marshal(fmt.Sprintf(`{"device_id":"d0","account_uuid":"a0","session_id":"%s"}`, s.id))
	s.head = []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-5-20250929","max_tokens":32000,"stream":true,"metadata":{"user_id":%s},"system":[{"type":"text","text":%s,"cache_control":{"type":"ephemeral"}}],"tools":[%s],"messages":`,
		meta, sysJSON, strings.Join(tools, ",")))
	first, _ := json.Marshal("Refactor the storage layer so that the write-ahead log is the only source of truth, then make the tests pass. Use the existing helpers; keep the public API.")
	s.msgs = append(s.msgs, []byte(`{"role":"user","content":[{"type":"text","text":`+string(first)+`}]}`))
	// Each turn adds an assistant message and a tool result; size them so
	// the last request is about historyKB.
	fixed := len(s.head) + len(s.msgs[0]) + 64
	s.perAdd = max((historyKB<<10-fixed)/max(turns-1, 1), 600)
	return s
}

// request returns the body of turn n (1-based): the history of turns
// 1..n-1 (assistant text and tool call, user tool result), the newest
// message carrying the cache marker, as Claude Code sends it.
func (s *session) request(n int) []byte {
	for len(s.msgs) < 2*n-1 {
		t := len(s.msgs) / 2 // the reply to request t+1
		r := replyOf(t)
		text, _ := json.Marshal(r.text)
		call := r.call
		s.msgs = append(s.msgs, []byte(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%s},{"type":"tool_use","id":"%s","name":"%s","input":%s}]}`,
			text, call, r.name, r.input)))
		var out strings.Builder
		for i := 0; out.Len() < s.perAdd-len(s.msgs[len(s.msgs)-1])-120; i++ {
			fmt.Fprintf(&out, "%4d\tfunc step%d_%d(w io.Writer) error { return write(w, %d) }\n", i+1, t, i, i*t)
		}
		res, _ := json.Marshal(out.String())
		s.msgs = append(s.msgs, []byte(fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"%s","content":%s}]}`, call, res)))
	}
	var b bytes.Buffer
	b.Write(s.head)
	b.WriteByte('[')
	for i, m := range s.msgs[:2*n-1] {
		if i > 0 {
			b.WriteByte(',')
		}
		if i == 2*n-2 {
			// The newest message carries the cache marker on its last block.
			k := bytes.LastIndex(m, []byte("}]}"))
			b.Write(m[:k])
			b.WriteString(`,"cache_control":{"type":"ephemeral"}}]}`)
			continue
		}
		b.Write(m)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// reply is what the model answers to request t+1: a text and a tool
// call. The upstream streams it and the client puts it in the history it
// sends next, as a real client does.
type reply struct{ text, call, name, input string }

func replyOf(t int) reply {
	return reply{
		text:  fmt.Sprintf("Step %d: I read the module and will now change the function that writes frames so that it reports short writes. Next I run the tests for package %d.", t, t%7),
		call:  fmt.Sprintf("toolu_%024d", t),
		name:  fmt.Sprintf("Tool%d", t%16),
		input: fmt.Sprintf(`{"path":"pkg/mod%d/file.go","limit":200}`, t),
	}
}

// turnHeader tells the fake upstream which turn a request is, so that it
// streams the reply the client will resend.
const turnHeader = "X-Longsession-Turn"

// upstream is a fake Anthropic Messages API: every request gets its
// turn's reply, streamed as text (10 deltas) and a tool call.
type upstream struct{}

func (upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	turn, _ := strconv.Atoi(r.Header.Get(turnHeader))
	rep := replyOf(max(turn-1, 0))
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	ev := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	}
	ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}`, time.Now().UnixNano(), 12, n/4))
	f.Flush()
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for i, step := 0, (len(rep.text)+9)/10; i < len(rep.text); i += step {
		piece, _ := json.Marshal(rep.text[i:min(i+step, len(rep.text))])
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, piece))
		f.Flush()
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"%s","name":"%s","input":{}}}`, rep.call, rep.name))
	partial, _ := json.Marshal(rep.input)
	ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":%s}}`, partial))
	ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":64}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	f.Flush()
}

// cpuTime is the user plus system CPU time of process pid so far.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	s := string(b[bytes.LastIndexByte(b, ')')+2:])
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func moduleRoot() string {
	d, _ := os.Getwd()
	for p := d; ; p = filepath.Dir(p) {
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
			return p
		}
		if filepath.Dir(p) == p {
			return d
		}
	}
}

func waitHealth(ctx context.Context, base string) error {
	for {
		resp, err := http.Get(base + "/_bb/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the proxy did not start: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitDerived waits until the proxy's engine has derived want requests of
// the session and a fresh query no longer waits for derivation.
func waitDerived(ctx context.Context, dir, session string, want int) error {
	for {
		h, held, err := engine.ReadHolder(dir)
		if err == nil && held && h.Addr != "" {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.Addr+"/v1/sessions/"+session+"?fresh=1", nil)
			req.Header.Set("Authorization", "Bearer "+h.Token)
			t0 := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				var s struct {
					Requests int `json:"requests"`
				}
				json.NewDecoder(resp.Body).Decode(&s)
				resp.Body.Close()
				if s.Requests >= want && time.Since(t0) < 1500*time.Millisecond {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("derivation did not catch up in time")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// scrapeAdded reads the proxy's own account of the latency it adds
// (bbengine_proxy_overhead_seconds, mean to first byte and total), or ""
// when it cannot; with out set, it writes the whole scrape there.
func scrapeAdded(base, out string) string {
	resp, err := http.Get(base + "/_bb/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return ""
	}
	if out != "" {
		if err := os.WriteFile(out, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "longsession:", err)
		}
	}
	v := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "bbengine_proxy_overhead_seconds_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if f, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			v[line[:i]] = f
		}
	}
	mean := func(stage string) string {
		n := v[`bbengine_proxy_overhead_seconds_count{stage="`+stage+`"}`]
		if n == 0 {
			return "-"
		}
		return ms(time.Duration(v[`bbengine_proxy_overhead_seconds_sum{stage="`+stage+`"}`] / n * float64(time.Second)))
	}
	return mean("first_byte") + " to first byte, " + mean("total") + " total"
}

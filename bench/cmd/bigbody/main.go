// Command bigbody measures the peak memory (RSS) of the bbengine proxy and
// of the read commands on one very large exchange, and prints a Markdown
// table against the idle proxy.
//
//	go run ./bench/cmd/bigbody [-response 200MB] [-request 50MB] [-delta 1024] [-bin PATH] [-dir DIR]
//
// It builds bbengine (unless -bin names a binary), starts `bbengine proxy`
// in a subprocess against a fake Anthropic upstream on 127.0.0.1, and plays
// two exchanges through it: a streamed response of -response bytes (one
// text block of text_delta events of -delta bytes of text each) and a
// non-streaming request of -request bytes (one user message). It waits
// until the proxy's canonicalizer and memory derivation have caught up,
// reads the proxy's VmHWM from /proc/<pid>/status, stops it, and then
// runs trace, show, every export format and rebuild as subprocesses on
// the same data directory, each one's peak RSS being its rusage Maxrss.
// Linux only (it reads /proc).
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
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

func main() {
	response := flag.String("response", "200MB", "size of the streamed response body (SSE bytes)")
	request := flag.String("request", "50MB", "size of the large request body (0: skip it)")
	delta := flag.Int("delta", 1024, "bytes of text in each text_delta event")
	bin := flag.String("bin", "", "bbengine binary (default: go build it into a temporary directory)")
	dir := flag.String("dir", "", "data directory (default: a temporary directory, removed afterwards)")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	respN, err1 := parseSize(*response)
	reqN, err2 := parseSize(*request)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, "bigbody:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, respN, reqN, max(*delta, 1), *bin, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "bigbody:", err)
		os.Exit(1)
	}
}

// parseSize reads 200MB, 50MiB, 1GB, 4096 (bytes).
func parseSize(s string) (int64, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, x := range []struct {
		suffix string
		n      int64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(u, x.suffix) {
			u, mult = strings.TrimSuffix(u, x.suffix), x.n
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(u), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want bytes, e.g. 200MB or 50MiB", s)
	}
	return n * mult, nil
}

const session = "bigbody"

type row struct {
	what string
	peak int64 // bytes
	note string
}

func run(ctx context.Context, respN, reqN int64, delta int, bin, dir string) error {
	tmp, err := os.MkdirTemp("", "bigbody-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if dir == "" {
		dir = filepath.Join(tmp, "data")
	}
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

	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: upstream{delta: delta, size: respN}}
	go srv.Serve(up)
	defer srv.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	listen := ln.Addr().String()
	ln.Close()
	proxy := exec.CommandContext(ctx, bin, "--dir", dir, "proxy", "--listen", listen, "--breaker", "off",
		"--max-request-bytes", strconv.FormatInt(max(reqN+1<<20, 64<<20), 10),
		"--upstream", "anthropic=http://"+up.Addr().String())
	var proxyOut bytes.Buffer
	proxy.Stdout, proxy.Stderr = &proxyOut, &proxyOut
	if err := proxy.Start(); err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			proxy.Process.Kill()
			proxy.Wait()
		}
	}()
	base := "http://" + listen
	if err := waitHealth(ctx, base); err != nil {
		return fmt.Errorf("%w\n%s", err, proxyOut.String())
	}
	time.Sleep(time.Second)
	idle, _ := procStatus(proxy.Process.Pid, "VmRSS")

	var rows []row
	start := time.Now()
	fmt.Fprintf(os.Stderr, "streaming a %s response through the proxy\n", human(respN))
	sr := streamRequest()
	if err := send(ctx, base, bytes.NewReader(sr), int64(len(sr))); err != nil {
		return err
	}
	if reqN > 0 {
		fmt.Fprintf(os.Stderr, "sending a %s request through the proxy\n", human(reqN))
		body, size := bigRequest(reqN)
		if err := send(ctx, base, body, size); err != nil {
			return err
		}
	}
	captured, _ := procStatus(proxy.Process.Pid, "VmHWM")
	fmt.Fprintf(os.Stderr, "captured in %s; waiting for derivation\n", time.Since(start).Round(time.Millisecond))
	want := 1
	if reqN > 0 {
		want = 2
	}
	if err := waitDerived(ctx, dir, want); err != nil {
		return fmt.Errorf("%w\n%s", err, proxyOut.String())
	}
	derived, _ := procStatus(proxy.Process.Pid, "VmHWM")
	fmt.Fprintf(os.Stderr, "derived after %s\n", time.Since(start).Round(time.Millisecond))
	rows = append(rows, row{"proxy idle", idle, "VmRSS before the first request"},
		row{"proxy capture", captured, "VmHWM when the client has both responses"},
		row{"proxy capture+derive", derived, "VmHWM once derivation caught up"})
	proxy.Process.Signal(os.Interrupt)
	proxy.Wait()
	stopped = true

	ids, err := exchanges(dir)
	if err != nil {
		return err
	}
	debug.FreeOSMemory()
	cmds := [][]string{}
	for _, id := range ids {
		cmds = append(cmds, []string{"trace", strconv.FormatUint(id, 10)})
	}
	cmds = append(cmds, []string{"show", session}, []string{"show", session, "--format", "json"})
	for _, to := range []string{"atif", "bbox", "bbox-compact", "jsonl", "trajectory", "rlog", "json"} {
		cmds = append(cmds, []string{"export", session, "--to", to})
	}
	cmds = append(cmds, []string{"rebuild"})
	for _, args := range cmds {
		peak, n, d, err := measure(ctx, bin, dir, args)
		if err != nil {
			return fmt.Errorf("bbengine %s: %w", strings.Join(args, " "), err)
		}
		fmt.Fprintf(os.Stderr, "%s: %s in %s\n", strings.Join(args, " "), human(peak), d.Round(time.Millisecond))
		rows = append(rows, row{strings.Join(args, " "), peak, fmt.Sprintf("%s of output, %s", human(n), d.Round(time.Millisecond))})
	}

	fmt.Printf("One %s streamed response (text_delta events of %d bytes) and one %s request; peak RSS.\n\n", human(respN), delta, human(reqN))
	fmt.Println("| what | peak RSS | above idle proxy | note |")
	fmt.Println("|---|---:|---:|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s |\n", r.what, mib(r.peak), mib(r.peak-idle), r.note)
	}
	return nil
}

// moduleRoot is the directory of go.mod above the working directory.
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

// upstream is a fake Anthropic Messages API: a streaming request gets a
// text stream of size bytes, any other a short message.
type upstream struct {
	delta int
	size  int64
}

func (u upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var head struct {
		Stream bool `json:"stream"`
	}
	// The stream flag comes first in the requests this driver sends.
	br := bufio.NewReaderSize(r.Body, 1<<16)
	peek, _ := br.Peek(64)
	if i := bytes.IndexByte(peek, ','); i > 0 {
		json.Unmarshal(append(peek[:i:i], '}'), &head)
	}
	io.Copy(io.Discard, br)
	if !head.Stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_big","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":12500000,"output_tokens":1}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriterSize(w, 64<<10)
	var n int64
	write := func(s string) {
		m, _ := bw.WriteString(s)
		n += int64(m)
	}
	write("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_stream\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-bench\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	write("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	words := []string{"the ", "recorder ", "keeps ", "every ", "byte ", "of ", "a ", "very ", "long ", "answer, ", "line ", "after ", "line.\\n"}
	var text strings.Builder
	tail := `event: content_block_stop` + "\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":50000000}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	const pre = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""
	const post = "\"}}\n\n"
	for i := 0; n+int64(len(tail)) < u.size; i++ {
		text.Reset()
		for j := i; text.Len() < u.delta; j++ {
			text.WriteString(words[j%len(words)])
			if j%97 == 0 {
				text.WriteString(strconv.Itoa(i))
			}
		}
		write(pre + text.String() + post)
		if i%64 == 0 {
			bw.Flush()
			w.(http.Flusher).Flush()
		}
	}
	write(tail)
	bw.Flush()
}

func streamRequest() []byte {
	return []byte(`{"stream":true,"model":"claude-bench","max_tokens":64000,"messages":[{"role":"user","content":"Write a very long answer."}]}`)
}

// bigRequest is a non-streaming request of about n bytes, one user
// message of plain text, generated as it is read (the driver never holds
// it, so its own RSS stays small: a child's rusage Maxrss counts the
// parent's RSS at the fork).
func bigRequest(n int64) (io.Reader, int64) {
	const (
		prefix = `{"stream":false,"model":"claude-bench","max_tokens":16,"messages":[{"role":"user","content":"Summarize this log:\n`
		line   = "2026-11-25T07:00:00Z worker 17 processed job 4242 in 12ms, queue depth 3\\n"
		suffix = `"}]}`
	)
	k := max((n-int64(len(prefix)+len(suffix)))/int64(len(line)), 1)
	r := io.MultiReader(strings.NewReader(prefix), io.LimitReader(repeat(line), k*int64(len(line))), strings.NewReader(suffix))
	return r, int64(len(prefix)+len(suffix)) + k*int64(len(line))
}

// repeat reads s over and over.
type repeat string

func (s repeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], s)
	}
	return n, nil
}

func send(ctx context.Context, base string, body io.Reader, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", body)
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Bb-Session-Id", session)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("proxy answered %s (%d bytes)", resp.Status, n)
	}
	return nil
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

// waitDerived waits until the proxy's engine has derived want requests
// of the session and a fresh query no longer waits for the
// canonicalizer or the memory derivation (the query endpoint waits up
// to 2 s for them to reach the end of the WAL).
func waitDerived(ctx context.Context, dir string, want int) error {
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

// exchanges returns the ids of the exchanges recorded in dir's WAL.
func exchanges(dir string) ([]uint64, error) {
	log, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer log.Close()
	r := log.NewReader()
	defer r.Close()
	var ids []uint64
	for r.Next() {
		if h := r.Header(); h.Kind == frame.KindRequestStart {
			ids = append(ids, h.Exchange)
		}
	}
	return ids, r.Err()
}

// measure runs bbengine with args on dir, its output discarded, and
// returns its peak RSS, how many bytes it wrote and how long it took.
func measure(ctx context.Context, bin, dir string, args []string) (peak, n int64, d time.Duration, err error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--dir", dir}, args...)...)
	var cw countWriter
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &cw, &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, 0, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru != nil {
		peak = ru.Maxrss << 10 // KiB on Linux
	}
	return peak, cw.n, time.Since(t0), nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// procStatus returns a "kB" field of /proc/pid/status in bytes.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func human(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

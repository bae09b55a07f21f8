package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
)

// bb runs the command line as the binary would and returns stdout, stderr
// and the exit status.
func bb(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"bbengine"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// makeWAL writes a small log into <dir>/wal and returns the offsets of its
// frames (segment header excluded).
func makeWAL(t *testing.T, dir string) []uint64 {
	t.Helper()
	l, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{SegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	recs := []wal.Record{
		{Kind: frame.KindRequestStart, Exchange: 1, Time: 1e18, Payload: []byte("POST /v1/messages")},
		{Kind: frame.KindResponseStart, Exchange: 1, Time: 1e18 + 1, Payload: []byte(`{"status":200}`)},
		{Kind: frame.KindResponseBody, Exchange: 1, Time: 1e18 + 2, Payload: []byte(strings.Repeat("data: {\"delta\":\"hi\"}\n\n", 30))},
		{Kind: frame.KindResponseEnd, Exchange: 1, Time: 1e18 + 3, Last: true, Payload: []byte(`{"ms":12}`)},
		{Kind: frame.KindImport, Exchange: 2, Time: 1e18 + 4, Payload: []byte{0xff, 0x00, 0x01}},
	}
	var offs []uint64
	for _, r := range recs {
		off, err := l.Append(r)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	return offs
}

func TestReplay(t *testing.T) {
	dir := t.TempDir()
	offs := makeWAL(t, dir)

	out, errs, code := bb(t, "--dir", dir, "replay", "--from", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 6 || !strings.Contains(lines[0], "segment-header") {
		t.Fatalf("text output:\n%s", out)
	}
	want := strconv.FormatUint(offs[0], 10) + " "
	if !strings.HasPrefix(lines[1], want) || !strings.Contains(lines[1], "request-start") ||
		!strings.Contains(lines[1], "ex=1") || !strings.Contains(lines[1], `"POST /v1/messages"`) || !strings.Contains(lines[1], "2001-09-09T01:46:40") {
		t.Errorf("request line = %q", lines[1])
	}

	out, _, code = bb(t, "--dir", dir, "replay", "--from", strconv.FormatUint(offs[1], 10), "--to", strconv.FormatUint(offs[4], 10), "--format", "jsonl")
	if code != 0 {
		t.Fatalf("jsonl exit %d", code)
	}
	var got []api.Frame
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var j api.Frame
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			t.Fatalf("bad JSONL line %q: %v", sc.Text(), err)
		}
		got = append(got, j)
	}
	if len(got) != 3 || got[0].Offset != offs[1] || got[0].Kind != "response-start" || got[2].Kind != "response-end" || !got[2].Last {
		t.Fatalf("jsonl frames = %+v", got)
	}
	if !strings.HasPrefix(got[1].Payload, "data: ") || !got[1].Compressed {
		t.Errorf("body frame = %+v", got[1])
	}

	out, _, _ = bb(t, "--dir", dir, "replay", "--kind", "import", "--format", "jsonl")
	if !strings.Contains(out, `"payload_base64":"/wAB"`) {
		t.Errorf("binary payload not base64: %s", out)
	}
	out, _, _ = bb(t, "--dir", dir, "replay", "--exchange", "1", "--kind", "response-body", "--format", "raw")
	if out != strings.Repeat("data: {\"delta\":\"hi\"}\n\n", 30) {
		t.Errorf("raw output = %q", out)
	}
}

func TestReplayErrors(t *testing.T) {
	dir := t.TempDir()
	offs := makeWAL(t, dir)
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"replay", "--from", "abc"}, 2, "--from"},
		{[]string{"replay", "--from", "-5"}, 2, "--from"},
		{[]string{"replay", "--to", "x"}, 2, "--to"},
		{[]string{"replay", "--format", "xml"}, 2, "format"},
		{[]string{"replay", "--kind", "bogus"}, 2, "kind"},
		{[]string{"replay", "--exchange", "one"}, 2, "exchange"},
		{[]string{"replay", "extra"}, 2, "arguments"},
		{[]string{"replay", "--from", strconv.FormatUint(offs[1]+1, 10)}, 1, "next frame starts at " + strconv.FormatUint(offs[2], 10)},
		{[]string{"replay", "--from", "99999999"}, 1, "past the end"},
	}
	for _, tt := range tests {
		_, errs, code := bb(t, append([]string{"--dir", dir}, tt.args...)...)
		if code != tt.code || !strings.Contains(errs, tt.contains) {
			t.Errorf("%v: exit %d, stderr %q; want %d containing %q", tt.args, code, errs, tt.code, tt.contains)
		}
	}
	if _, errs, code := bb(t, "--dir", t.TempDir(), "replay"); code != 1 || !strings.Contains(errs, "no write-ahead log") {
		t.Errorf("missing log: exit %d, %q", code, errs)
	}
}

// TestReplayFollow runs replay --follow while a writer appends in the
// same process and stops it by cancelling the app's context.
func TestReplayFollow(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{SegmentSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		app := NewApp(pw, io.Discard)
		err := app.RunContext(ctx, []string{"bbengine", "--dir", dir, "replay", "--follow", "--kind", "tool-event", "--format", "raw"})
		pw.Close()
		if err != nil {
			done <- 1
			return
		}
		done <- 0
	}()
	go func() {
		for i := range 50 {
			l.Append(wal.Record{Kind: frame.KindToolEvent, Payload: []byte("event " + strconv.Itoa(i) + "\n")})
			time.Sleep(time.Millisecond)
		}
	}()
	sc := bufio.NewScanner(pr)
	for i := range 50 {
		if !sc.Scan() {
			t.Fatalf("follow stopped after %d lines", i)
		}
		if want := "event " + strconv.Itoa(i); sc.Text() != want {
			t.Fatalf("line %d = %q, want %q", i, sc.Text(), want)
		}
	}
	cancel()
	go io.Copy(io.Discard, pr)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("replay --follow ended with an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("replay --follow did not stop on cancel")
	}
}

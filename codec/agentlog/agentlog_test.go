package agentlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func lines(t *testing.T, s *Scanner) []Line {
	t.Helper()
	var out []Line
	for s.Next() {
		l := s.Line()
		l.Data = append([]byte(nil), l.Data...)
		out = append(out, l)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScannerOffsetsAndTail(t *testing.T) {
	in := "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":"
	s := NewScanner(strings.NewReader(in), 0, 0)
	got := lines(t, s)
	want := []Line{{0, 1, []byte(`{"a":1}`)}, {8, 2, []byte(`{"b":2}`)}, {17, 3, []byte{}}}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Offset != want[i].Offset || got[i].Number != want[i].Number || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Errorf("line %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	off, n := s.End()
	if off != 18 || n != 3 || s.Tail() != 5 {
		t.Fatalf("End = %d, %d, Tail = %d; want 18, 3, 5", off, n, s.Tail())
	}
	// Resuming where the last import stopped reads the finished line.
	s = NewScanner(strings.NewReader(in[off:]+"3}\n"), off, n)
	got = lines(t, s)
	if len(got) != 1 || got[0].Offset != 18 || got[0].Number != 4 || string(got[0].Data) != `{"c":3}` {
		t.Fatalf("resumed: %+v", got)
	}
}

func TestScannerLongLine(t *testing.T) {
	long := strings.Repeat("x", MaxLine+10)
	s := NewScanner(strings.NewReader("a\n"+long+"\nb\n"), 0, 0)
	got := lines(t, s)
	if len(got) != 2 || string(got[1].Data) != "b" || got[1].Number != 3 {
		t.Fatalf("got %d lines", len(got))
	}
	sk := s.Skipped()
	if len(sk) != 1 || sk[0].Number != 2 || sk[0].Offset != 2 || !errors.Is(sk[0].Err, ErrLineTooLong) {
		t.Fatalf("skipped = %+v", sk)
	}
}

func TestOpenZstd(t *testing.T) {
	dir := t.TempDir()
	plain := "{\"type\":\"session_meta\"}\n{\"type\":\"event_msg\"}\n"
	var buf bytes.Buffer
	w, _ := zstd.NewWriter(&buf)
	w.Write([]byte(plain))
	w.Close()
	for _, name := range []string{"rollout-x.jsonl.zst", "no-suffix.jsonl"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got := lines(t, NewScanner(f, 0, 0))
		f.Close()
		if !f.Compressed || len(got) != 2 || got[1].Offset != 24 {
			t.Fatalf("%s: compressed=%v lines=%+v", name, f.Compressed, got)
		}
	}
}

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		in        string
		want      []string
		err       string
		truncated bool
	}{
		{in: `{"type":"user","id":7,"x":{"type":"no"}}`, want: []string{"user", ""}},
		{in: " {\"id\":\"a\",\"id\":\"b\",\"s\":\"\xff\"} ", want: []string{"", "b"}},
		{in: `{}`, want: []string{"", ""}},
		{in: `{oops`, err: "not JSON: invalid character 'o' at start of value at column 2"},
		{in: "\x00\x01\x02", err: "not JSON: invalid character '\\x00' at start of value at column 1"},
		{in: `{"type":"user"}x`, err: "not JSON: invalid character 'x' at start of value at column 16"},
		{in: `{"type":"us`, err: "not JSON: unexpected EOF at column 12", truncated: true},
		{in: `{"a":[1,2`, err: "not JSON: unexpected EOF at column 10", truncated: true},
		{in: strings.Repeat("[", 100000), err: "not JSON: exceeded max depth at column 10001"},
		{in: strings.Repeat(`{"a":`, 20000), err: "not JSON: exceeded max depth"},
		{in: `[1,2]`, err: "not a JSON object: an array"},
		{in: `{"a":1}  {"b":2}`, err: "not JSON: more than one JSON value at column 10"},
		{in: `0000000`, err: "not JSON: "},
		{in: `"type"`, err: "not a JSON object: a string"},
		{in: `42`, err: "not a JSON object: a number"},
		{in: `null`, err: "not a JSON object: null"},
		{in: `[1,`, err: "unexpected EOF", truncated: true},
		{in: ``, err: "not JSON: no value at column 1", truncated: true},
	} {
		got, err := Fields([]byte(tc.in), "type", "id")
		if tc.err == "" {
			if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("Fields(%.30q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			continue
		}
		var se *SyntaxError
		if err == nil || !strings.Contains(err.Error(), tc.err) || errors.As(err, &se) && se.Truncated != tc.truncated {
			t.Errorf("Fields(%.30q) = %v; want an error with %q (truncated %v)", tc.in, err, tc.err, tc.truncated)
		}
	}
}

func TestCorruptZstd(t *testing.T) {
	var plain bytes.Buffer
	for i := range 20000 {
		plain.WriteString(`{"type":"event_msg","n":` + strings.Repeat("1", i%50) + "}\n")
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
	z := enc.EncodeAll(plain.Bytes(), nil)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"truncated", z[:len(z)/2]},
		{"corrupt", func() []byte {
			b := bytes.Clone(z)
			for i := len(b) / 2; i < len(b)/2+64; i++ {
				b[i] ^= 0x5a
			}
			return b
		}()},
		{"not zstd", []byte("garbage, not zstd at all\n")},
	} {
		p := filepath.Join(dir, tc.name+".jsonl.zst")
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s := NewScanner(f, 0, 0)
		n := 0
		for s.Next() {
			n++
		}
		f.Close()
		var ce *CorruptError
		if !errors.As(s.Err(), &ce) || ce.Path != p || !strings.Contains(ce.Error(), "near compressed byte") || ce.Compressed > int64(len(tc.data)) {
			t.Errorf("%s: after %d lines, err %v; want a *CorruptError", tc.name, n, s.Err())
			continue
		}
		t.Logf("%s: %d lines read, then %v", tc.name, n, ce)
	}
}

// TestScannerRelease reads files one after another with released
// scanners: a reused read buffer carries nothing from the last file.
func TestScannerRelease(t *testing.T) {
	dir := t.TempDir()
	for i, content := range []string{"{\"a\":1}\n{\"a\":2}\n{\"partial", "", "x", "{\"b\":1}\n", "\x28\xb5"} {
		p := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, off := range []int64{0, int64(min(len(content), 8))} {
			f, err := OpenAt(p, off)
			if err != nil {
				t.Fatalf("file %d at %d: %v", i, off, err)
			}
			s := NewScanner(f, off, 0)
			var got strings.Builder
			for _, l := range lines(t, s) {
				got.Write(l.Data)
				got.WriteByte('\n')
			}
			if tl := s.TailLine(); tl.Data != nil {
				got.Write(tl.Data)
			}
			s.Release()
			s.Release()
			f.Close()
			if want := content[off:]; got.String() != want {
				t.Errorf("file %d at %d: read %q, want %q", i, off, got.String(), want)
			}
		}
	}
}

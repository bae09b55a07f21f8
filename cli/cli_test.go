package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run executes the command line and returns stdout, stderr and the exit
// status, exactly as the binary would.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"bbengine"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.bbox", "---\nformat: bbox/1\nid: s\nrepo_sha: abcdef1\n---\nu: hi\n")
	bad := writeFile(t, dir, "bad.bbox", "---\nformat: bbox/1\n---\no: id=x → y\n")
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
		inStdout string
	}{
		{"no args prints help", nil, 0, "", "USAGE"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`, "USAGE"},
		{"bad global flag", []string{"--nope", "version"}, 2, "flag provided but not defined: -nope", ""},
		{"bad command flag", []string{"validate", "--nope", good}, 2, "validate: flag provided but not defined: -nope", ""},
		{"missing argument", []string{"fmt"}, 2, "fmt: need exactly one FILE", ""},
		{"conflicting flags", []string{"fmt", "--compact", "--jsonl", good}, 2, "exclude each other", ""},
		{"version", []string{"version"}, 0, "", "bbengine dev"},
		{"version json", []string{"version", "--json"}, 0, "", `"version":"dev"`},
		{"validate ok", []string{"validate", good}, 0, "", "good.bbox: ok (0 errors, 0 warnings)"},
		{"validate errors", []string{"validate", good, bad}, 1, "validate: 1 of 2 files invalid", "bad.bbox:3:1: error E103: header is missing required key \"id\""},
		{"validate missing file", []string{"validate", filepath.Join(dir, "nope.bbox")}, 1, "nope.bbox: no such file or directory", ""},
		{"strict", []string{"validate", "--strict", writeFile(t, dir, "frag.bbox", "u: hi\n")}, 1, "1 of 1 files invalid", "W101"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errs)
			}
			if !strings.Contains(errs, tt.inStderr) {
				t.Errorf("stderr %q does not contain %q", errs, tt.inStderr)
			}
			if !strings.Contains(out, tt.inStdout) {
				t.Errorf("stdout %q does not contain %q", out, tt.inStdout)
			}
			if code == 1 && strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("runtime failure should be one line on stderr, got %q", errs)
			}
		})
	}
}

func TestValidateMarkdown(t *testing.T) {
	dir := t.TempDir()
	md := writeFile(t, dir, "doc.md", "# Title\n\n```\nu: hi\nq: hi\n```\n\n```json\n{}\n```\n\n```bbox\n---\nformat: bbox/1\n---\n```\n")
	out, _, code := run(t, "validate", md)
	if code != 1 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{
		"doc.md:4:1: warning W101",
		`doc.md:15:1: error E103: header is missing required key "id"`,
		"doc.md: invalid (2 errors, 1 warnings)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	empty := writeFile(t, dir, "empty.md", "no code here\n")
	if _, errs, code := run(t, "validate", empty); code != 1 || !strings.Contains(errs, "no fenced bbox examples") {
		t.Fatalf("empty md: %d %q", code, errs)
	}
}

func TestFmtAndStats(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "s.bbox", "---\nformat: bbox/1\nid: s\nrepo_sha: abcdef1\n---\n\nu:hi\nt:read  a.go->[ok]\n# metrics prompt=5 completion=2 cost=0.5\n")
	out, errs, code := run(t, "fmt", src)
	if code != 0 || out != "---\nformat: bbox/1\nid: s\nrepo_sha: abcdef1\n---\n\nu: hi\nt:read a.go → [ok]\n# metrics prompt=5 completion=2 cost=0.5\n" {
		t.Fatalf("fmt: %d %q %q", code, out, errs)
	}
	out, _, code = run(t, "fmt", "--compact", src)
	if code != 0 || !strings.Contains(out, "u:hi\nt:read a.go→[ok]\n") || strings.Contains(out, "\n\n") {
		t.Fatalf("fmt --compact: %q", out)
	}
	out, _, code = run(t, "fmt", "--jsonl", src)
	if code != 0 || !strings.Contains(out, `{"t":"t","n":"read","a":"a.go","r":"[ok]"}`) {
		t.Fatalf("fmt --jsonl: %q", out)
	}
	// The JSONL form reads back to the same canonical text.
	jl := writeFile(t, dir, "s.jsonl", out)
	back, _, code := run(t, "fmt", jl)
	canon, _, _ := run(t, "fmt", src)
	if code != 0 || back != canon {
		t.Fatalf("fmt of JSONL differs:\n%s\n---\n%s", back, canon)
	}
	// --write rewrites in place.
	if _, errs, code := run(t, "fmt", "-w", src); code != 0 {
		t.Fatalf("fmt -w: %s", errs)
	}
	if b, _ := os.ReadFile(src); string(b) != canon {
		t.Fatalf("fmt -w wrote %q", b)
	}
	out, _, code = run(t, "stats", src)
	if code != 0 || !strings.Contains(out, "tools    read×1") || !strings.Contains(out, "metrics  1 lines: prompt=5 completion=2") {
		t.Fatalf("stats: %s", out)
	}
	out, _, code = run(t, "stats", "--json", src)
	if code != 0 || !strings.Contains(out, `"tools":[{"name":"read","count":1}]`) || !strings.Contains(out, `"id":"s"`) {
		t.Fatalf("stats --json: %s", out)
	}
	out, _, code = run(t, "validate", "--json", src)
	if code != 0 || !strings.Contains(out, `"valid":true`) {
		t.Fatalf("validate --json: %s", out)
	}
}

// TestConfigAndEnv: a flag comes from the command line, else the
// environment, else the config file.
func TestConfigAndEnv(t *testing.T) {
	dir := t.TempDir()
	frag := writeFile(t, dir, "frag.bbox", "u: hi\n")
	cfg := writeFile(t, dir, "bbengine.yaml", "validate:\n  strict: true\n")
	if _, _, code := run(t, "--config", cfg, "validate", frag); code != 1 {
		t.Fatalf("strict from config: exit %d, want 1", code)
	}
	t.Setenv("BBENGINE_STRICT", "false")
	if _, errs, code := run(t, "--config", cfg, "validate", frag); code != 0 {
		t.Fatalf("env overrides config: exit %d: %s", code, errs)
	}
	if _, _, code := run(t, "--config", cfg, "validate", "--strict=true", frag); code != 1 {
		t.Fatalf("flag overrides env: exit %d", code)
	}
	os.Unsetenv("BBENGINE_STRICT") // restored by t.Setenv's cleanup
	top := writeFile(t, dir, "top.yaml", "strict: true\n")
	if _, _, code := run(t, "--config", top, "validate", frag); code != 1 {
		t.Fatalf("top-level key: exit %d", code)
	}
	typo := writeFile(t, dir, "typo.yaml", "dir: /tmp\nstrikt: true\n")
	_, errs, code := run(t, "--config", typo, "validate", frag)
	if code != 1 || !strings.Contains(errs, `typo.yaml:2: unknown key "strikt"`) {
		t.Fatalf("unknown key: %d %q", code, errs)
	}
	broken := writeFile(t, dir, "broken.yaml", "dir: [\n")
	if _, errs, code := run(t, "--config", broken, "version"); code != 1 || !strings.Contains(errs, "broken.yaml") {
		t.Fatalf("broken config: %d %q", code, errs)
	}
	if _, errs, code := run(t, "--config", filepath.Join(dir, "missing.yaml"), "version"); code != 1 || !strings.Contains(errs, "missing.yaml") {
		t.Fatalf("missing config: %d %q", code, errs)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data")
	if got := DefaultDir(); got != filepath.Join("/data", "bbengine") {
		t.Fatalf("DefaultDir = %q", got)
	}
	t.Setenv("XDG_DATA_HOME", "relative")
	if got := DefaultDir(); !filepath.IsAbs(got) || !strings.HasSuffix(got, "bbengine") {
		t.Fatalf("DefaultDir with relative XDG = %q", got)
	}
}

func TestFlagsAfterArguments(t *testing.T) {
	app := NewApp(io.Discard, io.Discard)
	for _, tt := range []struct{ in, want string }{
		{"bbengine show S --format json", "bbengine show --format json S"},
		{"bbengine --dir D trace 7 --bodies=false --json", "bbengine --dir D trace --bodies=false --json 7"},
		{"bbengine stats - --json", "bbengine stats --json -"},
		{"bbengine validate a.bbox -- --strict", "bbengine validate a.bbox -- --strict"},
		{"bbengine wal stat --json", "bbengine wal stat --json"},
	} {
		if got := strings.Join(flagsFirst(app, strings.Fields(tt.in)), " "); got != tt.want {
			t.Errorf("flagsFirst(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

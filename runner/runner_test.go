package runner

import (
	"os"
	"slices"
	"strings"
	"testing"

	_ "github.com/bbengine/bbengine/agents/all"
	"github.com/bbengine/bbengine/codec/exchange"
)

// TestPrepare checks what an agent's command line becomes: {pack}
// replaced in its arguments, and Claude Code (an agents.Launcher, by its
// executable or its script under node) given --settings with bbengine's
// hooks right after its program; other commands get no arguments. The
// files written are removed at the end.
func TestPrepare(t *testing.T) {
	for _, c := range []struct {
		argv []string
		at   int // where --settings goes, -1 for nowhere
	}{
		{[]string{"/usr/bin/claude", "-p", "do {pack}"}, 1},
		{[]string{"/usr/bin/node", "/lib/node_modules/@anthropic-ai/claude-code/cli.js", "-p", "do {pack}"}, 2},
		{[]string{"/usr/bin/codex", "exec", "do {pack}"}, -1},
		{[]string{"/bin/sh", "-c", "do {pack}"}, -1},
	} {
		r := &run{t: &Task{Dir: "/data", Argv: c.argv}}
		if err := r.prepare("PACK"); err != nil {
			t.Fatalf("%q: %v", c.argv, err)
		}
		if slices.Equal(c.argv, r.argv) || !strings.Contains(c.argv[len(c.argv)-1], "{pack}") {
			t.Errorf("%q: the task's Argv was changed or not copied", c.argv)
		}
		if got := r.argv[len(r.argv)-1]; got != "do PACK" {
			t.Errorf("%q: last argument %q, want the pack in it", c.argv, got)
		}
		i := slices.Index(r.argv, "--settings")
		if i != c.at {
			t.Errorf("%q: --settings at %d, want %d (%q)", c.argv, i, c.at, r.argv)
		}
		if i >= 0 {
			b, err := os.ReadFile(r.argv[i+1])
			if err != nil || !strings.Contains(string(b), "hook claude") || !strings.Contains(string(b), "--dir") {
				t.Errorf("%q: settings %s: %v", c.argv, b, err)
			}
		}
		if b, err := os.ReadFile(r.packFile); err != nil || string(b) != "PACK" {
			t.Errorf("%q: pack file %q, %v", c.argv, b, err)
		}
		files := slices.Clone(r.files)
		r.cleanup()
		for _, f := range files {
			if _, err := os.Stat(f); !os.IsNotExist(err) {
				t.Errorf("%q: %s left behind", c.argv, f)
			}
		}
	}
}

func TestPromptArg(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "fix the tests", "--model", "opus"}, "fix the tests"},
		{[]string{"exec", "add a flag", "--full-auto"}, "add a flag"},
		{[]string{"--verbose"}, ""},
		{nil, ""},
	} {
		if got := PromptArg(c.args); got != c.want {
			t.Errorf("PromptArg(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestWithoutDir(t *testing.T) {
	changes := []exchange.FileStat{{Path: "a.go"}, {Path: ".bb/wal/x"}, {Path: ".bbx"}}
	st := &repoState{root: "/repo"}
	for _, c := range []struct {
		dir  string
		want []string
	}{
		{"/repo/.bb", []string{"a.go", ".bbx"}},
		{"/elsewhere", []string{"a.go", ".bb/wal/x", ".bbx"}},
		{"/repo", nil},
	} {
		var got []string
		for _, f := range withoutDir(slices.Clone(changes), st, c.dir) {
			got = append(got, f.Path)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("withoutDir(%s) = %q, want %q", c.dir, got, c.want)
		}
	}
}

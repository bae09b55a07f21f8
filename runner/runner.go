package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
)

// Task is one run of an agent for one task of a session.
type Task struct {
	// Dir is the data directory, absolute.
	Dir string
	// Session is the session's id; Task the task's, "" for the
	// session's next (api.NextTask); Run the run's (NewRun).
	Session, Task, Run string
	// Describe is what the task is, to rank the context pack (PromptArg
	// guesses it from the agent's arguments).
	Describe string
	// Goal, when not "", is recorded as the session's goal before the
	// agent starts.
	Goal string
	// Budget is the pack's budget in tokens, 0 for the default.
	Budget int
	// Argv is the agent's command line, its program found on the PATH.
	// Run replaces {pack} in its arguments and adds the arguments an
	// agents.Launcher asks for.
	Argv []string
}

// Run runs the agent of t through the proxy at proxyAddr, whose service
// m records the run: it settles the task id, records the goal, builds
// the context pack and gives it to the agent (a file named by
// BBENGINE_PACK_FILE, {pack} in its arguments, and an agents.Launcher's
// hooks), runs the agent with stdin, stdout and stderr as they are, and
// records the task's outcome (success on exit status 0) with the
// repository's changes. It returns the agent's exit status; a failure to
// record the outcome is said on stderr, not returned. While the agent
// runs, SIGINT reaches it from the terminal directly; Run ignores it and
// passes SIGTERM on.
func Run(ctx context.Context, m api.Service, proxyAddr string, t *Task, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if t.Task == "" {
		var err error
		if t.Task, err = api.NextTask(m, t.Session); err != nil {
			return 0, err
		}
	}
	if t.Goal != "" {
		if err := recordGoal(m, t.Session, t.Goal); err != nil {
			return 0, fmt.Errorf("run: record the goal: %w", err)
		}
	}
	p, err := m.Context(api.ContextRequest{Session: t.Session, TaskID: t.Task, Task: t.Describe, Budget: t.Budget})
	if err != nil {
		return 0, fmt.Errorf("run: build the context pack: %w", err)
	}
	md := ""
	if !p.Empty() {
		md = p.Markdown()
	}
	r := &run{t: t}
	defer r.cleanup()
	if err := r.prepare(md); err != nil {
		return 0, err
	}
	wd, _ := os.Getwd()
	before := snapshotRepo(ctx, wd)
	code, why, err := r.exec(proxyAddr, stdin, stdout, stderr)
	if err != nil {
		return 0, err
	}
	changes := withoutDir(repoChanges(ctx, before, snapshotRepo(ctx, wd)), before, t.Dir)
	status := "success"
	if code != 0 {
		status = "fail"
	}
	summary := why // a success needs no "exited with status 0" bullet
	if code == 0 {
		summary = ""
	}
	if err := recordOutcome(m, t.Session, t.Task, status, summary, code, changes); err != nil {
		fmt.Fprintf(stderr, "bbengine run: the agent exited (%s) but its outcome was not recorded: %v\n", why, err)
	}
	return code, nil
}

// run is a Task being run.
type run struct {
	t        *Task
	argv     []string
	packFile string
	files    []string // to remove when the run ends
}

func (r *run) cleanup() {
	for _, f := range r.files {
		os.Remove(f)
	}
}

// prepare writes the pack file (and a Launcher's hook settings), and
// puts the pack into the agent's arguments for {pack}.
func (r *run) prepare(md string) error {
	f, err := os.CreateTemp("", "bbengine-pack-*.md")
	if err != nil {
		return fmt.Errorf("run: pack file: %w", err)
	}
	r.files = append(r.files, f.Name())
	_, err = io.WriteString(f, md)
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("run: pack file: %w", err)
	}
	r.packFile = f.Name()
	r.argv = slices.Clone(r.t.Argv)
	l, at := launcher(r.argv)
	for i := 1; i < len(r.argv); i++ {
		r.argv[i] = strings.ReplaceAll(r.argv[i], "{pack}", md)
	}
	if l == nil {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("run: find the bbengine executable for %s's hooks: %w", l.Doc().Title, err)
	}
	args, files, err := l.LaunchArgs(exe, r.t.Dir)
	r.files = append(r.files, files...)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	at++
	r.argv = append(append(r.argv[:at:at], args...), r.argv[at:]...)
	return nil
}

// launcher returns the registered agent that argv runs, if it is a
// Launcher, and where its program is in argv.
func launcher(argv []string) (agents.Launcher, int) {
	for _, a := range agents.All() {
		if l, ok := a.(agents.Launcher); ok {
			if at := l.LaunchAt(argv); at >= 0 {
				return l, at
			}
		}
	}
	return nil, -1
}

// exec runs the agent and returns its exit status and a word on how it
// ended.
func (r *run) exec(proxyAddr string, stdin io.Reader, stdout, stderr io.Writer) (int, string, error) {
	base := "http://" + proxyAddr
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	headers := fmt.Sprintf("X-Bb-Session-Id: %s\nX-Bb-Task-Id: %s\nX-Bb-Run-Id: %s", r.t.Session, r.t.Task, r.t.Run)
	if wd, err := os.Getwd(); err == nil && !strings.ContainsAny(wd, "\r\n") {
		// The project whose bbengine.yaml sets the circuit breaker's
		// thresholds for this run.
		headers += "\nX-Bb-Project: " + wd
	}
	if h := os.Getenv("ANTHROPIC_CUSTOM_HEADERS"); h != "" {
		headers = h + "\n" + headers
	}
	cmd.Env = append(agentEnv(os.Environ()),
		"ANTHROPIC_BASE_URL="+base,
		"ANTHROPIC_CUSTOM_HEADERS="+headers,
		"OPENAI_BASE_URL="+base+"/v1",
		"GOOGLE_GEMINI_BASE_URL="+base,
		"BBENGINE_DIR="+r.t.Dir,
		"BBENGINE_SESSION="+r.t.Session,
		"BBENGINE_TASK_ID="+r.t.Task,
		"BBENGINE_TASK_TEXT="+r.t.Describe,
		"BBENGINE_RUN_ID="+r.t.Run,
		"BBENGINE_PACK_FILE="+r.packFile,
	)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, "", fmt.Errorf("run: start %s: %w", r.argv[0], err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGTERM {
					cmd.Process.Signal(s)
				}
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, "the agent exited with status 0", nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), "the agent was killed by " + ws.Signal().String(), nil
		}
		return ee.ExitCode(), fmt.Sprintf("the agent exited with status %d", ee.ExitCode()), nil
	}
	return 0, "", fmt.Errorf("run: %s: %w", r.argv[0], err)
}

// NewSession returns a new session id: ses-<UTC time>-<random>.
func NewSession() string {
	return "ses-" + time.Now().UTC().Format("20060102-150405") + "-" + randHex(3)
}

// NewRun returns a new run id: run-<random>.
func NewRun() string { return "run-" + randHex(6) }

// PromptArg guesses the task from the agent's arguments: the longest one
// that is not a flag, which is the prompt of `claude -p "..."` or
// `codex exec "..."` whatever flags follow it.
func PromptArg(args []string) string {
	best := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && len(a) > len(best) {
			best = a
		}
	}
	return best
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// recordGoal records the session's goal (source "run") before the agent
// starts; it beats a goal from an X-Bb-Session-Goal header.
func recordGoal(m api.Service, session, goal string) error {
	_, err := m.Note(exchange.Note{Op: "goal", Session: session, Text: goal, Source: "run"})
	return err
}

// recordOutcome records how the task ended, from the agent's exit.
func recordOutcome(m api.Service, session, task, status, why string, code int, changes []exchange.FileStat) error {
	_, err := m.Note(exchange.Note{Op: "outcome", Session: session, TaskID: task, Status: status, Text: why, Exit: &code, Changes: changes, Source: "run"})
	return err
}

// withoutDir drops the changes under the data directory dir (a data
// directory kept inside the repository changes while the agent runs).
func withoutDir(changes []exchange.FileStat, st *repoState, dir string) []exchange.FileStat {
	if st == nil {
		return changes
	}
	rel, err := filepath.Rel(st.root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return changes
	}
	if rel == "." {
		return nil
	}
	rel = filepath.ToSlash(rel) + "/"
	return slices.DeleteFunc(changes, func(c exchange.FileStat) bool { return strings.HasPrefix(c.Path+"/", rel) })
}

// unlockEnv are the variables that unlock an encrypted data directory.
// The agent never gets them: a tool call that prints its environment
// would send the passphrase upstream and into the agent's own logs.
var unlockEnv = []string{"BBENGINE_PASSPHRASE", "BBENGINE_NEW_PASSPHRASE", "BBENGINE_AGE_IDENTITY"}

// agentEnv returns env without unlockEnv.
func agentEnv(env []string) []string {
	out := make([]string, 0, len(env))
outer:
	for _, kv := range env {
		for _, name := range unlockEnv {
			if strings.HasPrefix(kv, name+"=") {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}

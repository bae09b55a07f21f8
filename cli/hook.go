package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/bbengine/bbengine/api"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/safefile"
	"github.com/bbengine/bbengine/pack"
	ucli "github.com/urfave/cli/v2"
)

// hookStateKeep is how long a per-session hook state file is kept.
const hookStateKeep = 30 * 24 * time.Hour

func hookCommand() *ucli.Command {
	flags := func() []ucli.Flag {
		return []ucli.Flag{
			&ucli.StringFlag{Name: "session", Usage: "the bbengine session (default: the agent's own session id from the hook input)"},
			&ucli.StringFlag{Name: "task-id", Usage: "the task about to start (X-Bb-Task-Id)"},
			// BBENGINE_TASK_TEXT is what bbengine run sets (its BBENGINE_TASK
			// would be --task of run itself, a task id).
			&ucli.StringFlag{Name: "task", EnvVars: []string{"BBENGINE_TASK_TEXT"}, Usage: "what the task is about to do (default: the prompt of UserPromptSubmit)"},
			&ucli.IntFlag{Name: "budget", Usage: "total tokens of the pack (default 1200); the pack stays under 9,000 characters whatever the budget"},
			&ucli.DurationFlag{Name: "timeout", Value: 500 * time.Millisecond, Usage: "give up silently after this long"},
			&ucli.BoolFlag{Name: "verbose", Usage: "write one line to stderr saying what the hook did and why"},
		}
	}
	desc := "Installed by `bbengine install claude` (or codex) and run by the agent, which writes the\n" +
		"hook event as JSON on stdin (session_id, hook_event_name, source, prompt, ...). The\n" +
		"answer on stdout is {\"hookSpecificOutput\":{\"hookEventName\":EVENT,\"additionalContext\":PACK}},\n" +
		"PACK being the Markdown of `bbengine mem context` (under 9,000 characters whatever --budget).\n\n" +
		"The session is --session (BBENGINE_SESSION, which `bbengine run` sets) or else the agent's\n" +
		"session_id, which is how the proxy knows the agent's traffic (an imported session\n" +
		"\"claude:<id>\" is found by it too). The task is --task (BBENGINE_TASK_TEXT, set by run, or\n" +
		"BBENGINE_TASK) or else the prompt; its id --task-id (BBENGINE_TASK_ID).\n\n" +
		"Once per agent session: the first pack the hook builds in an agent session is recorded in\n" +
		"<dir>/hooks/<agent>-<session_id>.json (written atomically). SessionStart (startup, resume,\n" +
		"clear, compact: each begins a context without the pack) always injects the pack. A\n" +
		"UserPromptSubmit injects only when no pack of this bbengine session was built yet in the\n" +
		"agent session (SessionStart is not installed, or it gave up). It does not inject because\n" +
		"memory changed since: what changed it is this conversation, which the agent has in\n" +
		"context; an empty pack at SessionStart is recorded for the same reason. A compaction runs\n" +
		"SessionStart again. So under `bbengine run` the task's pack reaches the model once per run.\n\n" +
		"The hook never stands in the agent's way: it asks the running proxy, or opens the data\n" +
		"directory itself when no proxy runs, and gives up after --timeout. Whatever goes wrong\n" +
		"(bad input, unknown event or session, no data directory, an empty pack), it prints\n" +
		"nothing and exits 0; --verbose says why, in one line on stderr."
	return &ucli.Command{
		Name:        "hook",
		Usage:       "answer an agent's SessionStart or UserPromptSubmit hook with the session's context pack",
		Description: desc,
		Subcommands: agentCommands(func(a agents.Agent) *ucli.Command {
			return &ucli.Command{
				Name:        a.Name(),
				Usage:       a.Doc().HookUsage,
				Description: desc,
				Flags:       flags(),
				Action:      func(c *ucli.Context) error { return runHook(c, a) },
			}
		}),
	}
}

// hookState is what the hook remembers about one agent session: the
// last pack it built for it, injected (Chars > 0) or empty.
type hookState struct {
	Agent string `json:"agent"`
	// AgentSession is the agent's session id; Session the bbengine
	// session asked for (--session or the agent's id) and PackSession
	// the one it resolved to.
	AgentSession string `json:"agent_session"`
	Session      string `json:"session"`
	PackSession  string `json:"pack_session"`
	Event        string `json:"event"`
	Source       string `json:"source,omitempty"`
	TaskID       string `json:"task_id,omitempty"`
	// State is the memory digest the pack was built from; Chars the
	// length of the Markdown injected, 0 for an empty pack.
	State string `json:"state,omitempty"`
	Chars int    `json:"chars"`
	Time  string `json:"time"`
}

// hookWork counts the local engine opens still running after the hook
// gave up on them; tests wait for them before removing the directory.
var hookWork sync.WaitGroup

// runHook answers one hook event of agent a. It returns nil whatever
// happens, even a panic: what went wrong goes to stderr with --verbose
// only. The pack builder keeps a pack under 9,000 characters
// (pack.DefaultMaxChars) whatever its token budget; the hook checks it
// against the agent's cap.
func runHook(c *ucli.Context, a agents.Agent) (err error) {
	agent := a.Name()
	start := time.Now()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	say := func(format string, args ...any) {
		if c.Bool("verbose") {
			fmt.Fprintf(c.App.ErrWriter, "bbengine hook %s: %s (%s)\n", agent, fmt.Sprintf(format, args...), time.Since(start).Round(time.Microsecond))
		}
	}
	defer func() {
		if r := recover(); r != nil {
			say("silent: %v", r)
			err = nil
		}
	}()
	if c.NArg() > 0 {
		say("silent: unexpected argument %q", c.Args().First())
		return nil
	}
	in, err := readHookInput(ctx, a, c.App.Reader)
	if err != nil {
		say("silent: %v", err)
		return nil
	}
	if in.Event != "SessionStart" && in.Event != "UserPromptSubmit" {
		say("silent: event %q (only SessionStart and UserPromptSubmit carry the pack)", in.Event)
		return nil
	}
	req := api.ContextRequest{Session: c.String("session"), TaskID: c.String("task-id"), Task: c.String("task"), Budget: c.Int("budget"), Project: in.Cwd}
	if req.Session == "" {
		req.Session = in.SessionID
	}
	if req.Task == "" && in.Event == "UserPromptSubmit" {
		req.Task = in.Prompt
	}
	if strings.TrimSpace(req.Session) == "" {
		say("silent: no session (neither --session, BBENGINE_SESSION nor session_id)")
		return nil
	}
	dir := c.String("dir")
	key := in.SessionID
	if key == "" {
		key = req.Session
	}
	statePath := filepath.Join(dir, "hooks", stateName(agent, key))
	if in.Event == "UserPromptSubmit" {
		if st, ok := readHookState(statePath); ok && st.Session == req.Session {
			if st.Chars > 0 {
				say("silent: the pack of %s was injected at %s of this session (%s)", st.PackSession, st.Event, st.Time)
			} else {
				say("silent: the pack of %s was empty at %s of this session (%s), so its memory since is this conversation's own", st.PackSession, st.Event, st.Time)
			}
			return nil
		}
	}
	p, err := hookPack(ctx, dir, req)
	if err != nil {
		say("silent: %v", err)
		return nil
	}
	st := hookState{Agent: agent, AgentSession: in.SessionID, Session: req.Session, PackSession: p.Session, Event: in.Event, Source: in.Source,
		TaskID: req.TaskID, State: p.State, Time: time.Now().UTC().Format(time.RFC3339Nano)}
	record := func() {
		if err := writeHookState(statePath, st); err != nil {
			// Without the record a later prompt asks again, which is
			// better than not at all.
			say("could not record the pack in %s: %v", statePath, err)
		}
	}
	md := p.Markdown()
	switch {
	case p.Empty():
		record()
		say("silent: the pack of %s is empty", req.Session)
		return nil
	case len(md) > a.HookMaxChars():
		say("silent: the pack has %d characters, over the agent's cap of %d", len(md), a.HookMaxChars())
		return nil
	}
	out, err := a.HookAnswer(in, md)
	if err != nil {
		say("silent: %v", err)
		return nil
	}
	st.Chars = len(md)
	record()
	if _, err := c.App.Writer.Write(out); err != nil {
		say("silent: %v", err)
		return nil
	}
	say("%s: injected the pack of %s (%d characters, %d tokens, state %.12s)", in.Event, p.Session, len(md), p.Tokens, p.State)
	return nil
}

// maxHookInput bounds the hook event read from stdin (a prompt may hold
// a pasted file).
const maxHookInput = 16 << 20

// readHookInput reads the hook event and decodes it as agent a writes
// it, giving up when ctx ends (a terminal on stdin never closes).
func readHookInput(ctx context.Context, a agents.Agent, r io.Reader) (agents.HookEvent, error) {
	var in agents.HookEvent
	if r == nil {
		return in, errors.New("no stdin")
	}
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
		ch <- result{b, err}
	}()
	var res result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return in, errors.New("stdin did not end in time")
	}
	switch {
	case res.err != nil:
		return in, fmt.Errorf("read stdin: %v", res.err)
	case len(res.b) > maxHookInput:
		return in, fmt.Errorf("the hook input is over %d bytes", maxHookInput)
	}
	in, err := a.ParseHook(res.b)
	if err != nil {
		return in, fmt.Errorf("the hook input is not a JSON object: %v", err)
	}
	return in, nil
}

// hookPack builds the pack of req: through the proxy that owns dir when
// one runs, else with the engine opened here. Both are bounded by ctx.
func hookPack(ctx context.Context, dir string, req api.ContextRequest) (*pack.Pack, error) {
	h, held, err := engine.ReadHolder(dir)
	if err != nil {
		return nil, fmt.Errorf("read the lock of %s: %v", dir, err)
	}
	if held {
		if h.Addr == "" {
			return nil, fmt.Errorf("process %d holds %s and serves no queries", h.PID, dir)
		}
		return (&api.Remote{Addr: h.Addr, Token: h.Token, PID: h.PID}).ContextWithin(ctx, req)
	}
	if _, err := os.Stat(filepath.Join(dir, "db")); err != nil {
		return nil, fmt.Errorf("no data directory at %s: %v", dir, err)
	}
	type result struct {
		p   *pack.Pack
		err error
	}
	ch := make(chan result, 1)
	hookWork.Add(1)
	go func() {
		defer hookWork.Done()
		defer func() {
			if r := recover(); r != nil {
				ch <- result{nil, fmt.Errorf("opening %s: %v", dir, r)}
			}
		}()
		p, err := localPack(ctx, dir, req)
		ch <- result{p, err}
	}()
	select {
	case res := <-ch:
		return res.p, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("opening %s took too long (no proxy runs)", dir)
	}
}

// localPack opens the engine of dir, catches up with the WAL within ctx
// and builds the pack; the index is not needed for it.
func localPack(ctx context.Context, dir string, req api.ContextRequest) (*pack.Pack, error) {
	e, err := engine.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if _, err := e.CatchUp(ctx); err != nil {
		return nil, err
	}
	return api.NewLocal(e, nil).Context(req)
}

// stateName is the file name of an agent session's hook state: the id
// itself when it is a plain one (a UUID), else its hash.
func stateName(agent, id string) string {
	plain := len(id) <= 100
	for i := 0; i < len(id) && plain; i++ {
		ch := id[i]
		plain = ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.' && i > 0
	}
	if !plain {
		sum := sha256.Sum256([]byte(id))
		id = "h" + hex.EncodeToString(sum[:16])
	}
	return agent + "-" + id + ".json"
}

func readHookState(path string) (hookState, bool) {
	var st hookState
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &st) != nil {
		return st, false
	}
	return st, true
}

// writeHookState replaces the state file atomically (a new file renamed
// over the old one) and removes state files not touched for a month.
func writeHookState(path string, st hookState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := safefile.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, ent := range ents {
			if info, err := ent.Info(); err == nil && info.Mode().IsRegular() && time.Since(info.ModTime()) > hookStateKeep {
				os.Remove(filepath.Join(dir, ent.Name()))
			}
		}
	}
	return nil
}

package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/safefile"
	"github.com/bbengine/bbengine/pack"
)

// HookRequest is one hook event of an agent (SessionStart,
// UserPromptSubmit) to answer with the session's context pack.
type HookRequest struct {
	// Dir is the data directory; its hooks/ folder keeps what was
	// injected in each agent session.
	Dir   string
	Agent agents.Agent
	Event agents.HookEvent
	// Session is the bbengine session (default: the agent's session id);
	// Task what the task is about to do (default: a UserPromptSubmit's
	// prompt); TaskID its id; Budget the pack's tokens (0: the default).
	Session, TaskID, Task string
	Budget                int
}

// HookAnswer is what the hook says: Out for the agent (nil: nothing),
// and Why, one line for a person saying what it did and why.
type HookAnswer struct {
	Out []byte
	Why string
}

// HookState is what the hook remembers about one agent session: the
// last pack it built for it, injected (Chars > 0) or empty.
type HookState struct {
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

// hookStateKeep is how long a per-session hook state file is kept.
const hookStateKeep = 30 * 24 * time.Hour

// hookWork counts the local engine opens still running after a hook
// gave up on them (WaitHookWork).
var hookWork sync.WaitGroup

// WaitHookWork waits for the engine opens that hooks gave up on to
// finish, so that their directory can be removed.
func WaitHookWork() { hookWork.Wait() }

// AnswerHook answers one hook event with the session's context pack,
// once per agent session: SessionStart (startup, resume, clear, compact:
// each begins a context without the pack) always injects it; a
// UserPromptSubmit only when no pack of this bbengine session was built
// yet in the agent session. The pack comes from the running proxy that
// owns req.Dir, or from the engine opened here when none runs, within
// ctx. Whatever goes wrong, the answer is silent (Out nil) and Why says
// why.
func AnswerHook(ctx context.Context, req HookRequest) HookAnswer {
	silent := func(format string, args ...any) HookAnswer {
		return HookAnswer{Why: "silent: " + fmt.Sprintf(format, args...)}
	}
	a, in := req.Agent, req.Event
	if in.Event != "SessionStart" && in.Event != "UserPromptSubmit" {
		return silent("event %q (only SessionStart and UserPromptSubmit carry the pack)", in.Event)
	}
	creq := ContextRequest{Session: req.Session, TaskID: req.TaskID, Task: req.Task, Budget: req.Budget, Project: in.Cwd}
	if creq.Session == "" {
		creq.Session = in.SessionID
	}
	if creq.Task == "" && in.Event == "UserPromptSubmit" {
		creq.Task = in.Prompt
	}
	if strings.TrimSpace(creq.Session) == "" {
		return silent("no session (neither --session, BBENGINE_SESSION nor session_id)")
	}
	key := in.SessionID
	if key == "" {
		key = creq.Session
	}
	statePath := HookStatePath(req.Dir, a.Name(), key)
	if in.Event == "UserPromptSubmit" {
		if st, ok := ReadHookState(statePath); ok && st.Session == creq.Session {
			if st.Chars > 0 {
				return silent("the pack of %s was injected at %s of this session (%s)", st.PackSession, st.Event, st.Time)
			}
			return silent("the pack of %s was empty at %s of this session (%s), so its memory since is this conversation's own", st.PackSession, st.Event, st.Time)
		}
	}
	p, err := hookPack(ctx, req.Dir, creq)
	if err != nil {
		return silent("%v", err)
	}
	st := HookState{Agent: a.Name(), AgentSession: in.SessionID, Session: creq.Session, PackSession: p.Session, Event: in.Event, Source: in.Source,
		TaskID: creq.TaskID, State: p.State, Time: time.Now().UTC().Format(time.RFC3339Nano)}
	var note string
	record := func() {
		if err := writeHookState(statePath, st); err != nil {
			// Without the record a later prompt asks again, which is
			// better than not at all.
			note = fmt.Sprintf("; could not record the pack in %s: %v", statePath, err)
		}
	}
	md := p.Markdown()
	switch {
	case p.Empty():
		record()
		return silent("the pack of %s is empty%s", creq.Session, note)
	case len(md) > a.HookMaxChars():
		return silent("the pack has %d characters, over the agent's cap of %d", len(md), a.HookMaxChars())
	}
	out, err := a.HookAnswer(in, md)
	if err != nil {
		return silent("%v", err)
	}
	st.Chars = len(md)
	record()
	return HookAnswer{Out: out, Why: fmt.Sprintf("%s: injected the pack of %s (%d characters, %d tokens, state %.12s)%s", in.Event, p.Session, len(md), p.Tokens, p.State, note)}
}

// hookPack builds the pack of req: through the proxy that owns dir when
// one runs, else with the engine opened here. Both are bounded by ctx.
func hookPack(ctx context.Context, dir string, req ContextRequest) (*pack.Pack, error) {
	h, held, err := engine.ReadHolder(dir)
	if err != nil {
		return nil, fmt.Errorf("read the lock of %s: %v", dir, err)
	}
	if held {
		if h.Addr == "" {
			return nil, fmt.Errorf("process %d holds %s and serves no queries", h.PID, dir)
		}
		return (&Remote{Addr: h.Addr, Token: h.Token, PID: h.PID}).ContextWithin(ctx, req)
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
func localPack(ctx context.Context, dir string, req ContextRequest) (*pack.Pack, error) {
	keys, err := Keys(dir)
	if err != nil {
		return nil, err
	}
	e, err := engine.Open(dir, &engine.Options{Keys: keys})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if _, err := e.CatchUp(ctx); err != nil {
		return nil, err
	}
	return NewLocal(e, nil).Context(req)
}

// HookStatePath is the file of an agent session's hook state under dir:
// hooks/<agent>-<id>.json, the id itself when it is a plain one (a UUID),
// else its hash.
func HookStatePath(dir, agent, id string) string {
	plain := len(id) <= 100
	for i := 0; i < len(id) && plain; i++ {
		ch := id[i]
		plain = ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.' && i > 0
	}
	if !plain {
		sum := sha256.Sum256([]byte(id))
		id = "h" + hex.EncodeToString(sum[:16])
	}
	return filepath.Join(dir, "hooks", agent+"-"+id+".json")
}

// ReadHookState reads a hook state file; ok is false when it is missing
// or unreadable.
func ReadHookState(path string) (st HookState, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &st) != nil {
		return st, false
	}
	return st, true
}

// writeHookState replaces the state file atomically (a new file renamed
// over the old one) and removes state files not touched for a month.
func writeHookState(path string, st HookState) error {
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

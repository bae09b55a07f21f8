package derive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine/schema"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/bbengine/bbengine/internal/memtext"
)

// promptText returns the text a person typed in a user message: the
// message without the blocks an agent wraps around it (system
// reminders, command output), or "" when nothing is left.
func promptText(ev *Event) string {
	if ev.Kind != KindMessage || ev.Role != "user" || ev.Meta != "" {
		return ""
	}
	t := StripPacks(ev.Text)
	for _, tag := range []string{"system-reminder", "local-command-stdout", "local-command-stderr", "command-message", "command-name", "command-args",
		"local-command-caveat", "bash-stdout", "bash-stderr", "user-prompt-submit-hook", "ide_selection", "ide_opened_file", "task-notification", "ide_diagnostics"} {
		t = stripTag(t, tag)
	}
	// A shell command the user ran (Claude Code's "!" prefix).
	t = strings.ReplaceAll(strings.ReplaceAll(t, "<bash-input>", "!"), "</bash-input>", "")
	t = strings.TrimSpace(t)
	if strings.HasPrefix(t, "[Request interrupted") || strings.HasPrefix(t, "Caveat: The messages below") {
		return ""
	}
	return t
}

// PackTag names the element a context pack (package pack) is wrapped
// in. Memory derivation removes such elements from what it reads, so a
// pack injected into a prompt is not mined again as if the agent or the
// user had said it anew.
const PackTag = "bbengine-context-pack"

// StripPacks removes every <bbengine-context-pack …>…</bbengine-context-pack>
// element from s; an element left open runs to the end of s.
func StripPacks(s string) string {
	open, end := "<"+PackTag, "</"+PackTag+">"
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return s
		}
		if r := i + len(open); r < len(s) && s[r] != ' ' && s[r] != '>' {
			return s // another element whose name starts the same
		}
		j := strings.Index(s[i:], end)
		if j < 0 {
			return s[:i]
		}
		s = s[:i] + s[i+j+len(end):]
	}
}

// stripTag removes every <tag>…</tag> block from s.
func stripTag(s, tag string) string {
	open, end := "<"+tag+">", "</"+tag+">"
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], end)
		if j < 0 {
			return s[:i]
		}
		s = s[:i] + s[i+j+len(end):]
	}
}

// evidence returns the evidence of ev.
func evidence(ev *Event) Evidence {
	return Evidence{Seq: ev.Seq, Kind: ev.Kind, Time: ev.Time, Prov: ev.Prov}
}

// artifactID returns the id of an artifact: a type prefix and 12 hex
// digits of the SHA-256 of the session and the parts that identify it.
func artifactID(prefix, session string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(session))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return prefix + "-" + hex.EncodeToString(h.Sum(nil)[:6])
}

// capText is schema.CapText: the cut an artifact's card makes too.
func capText(s string, n int) string { return schema.CapText(s, n) }

// firstLine returns the first non-empty line of s, capped.
func firstLine(s string, n int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return capText(l, n)
		}
	}
	return ""
}

// toolArgs decodes a tool call's arguments into a map. The v1
// semantics of go-json-experiment decode what encoding/json does
// (FuzzToolArgs) in half the time: an import's memory derivation
// decodes every call's arguments, some twice.
func toolArgs(ev *Event) map[string]any {
	if ev.Tool == nil || len(ev.Tool.Args) == 0 {
		return nil
	}
	var m map[string]any
	if jsonv1.Unmarshal(ev.Tool.Args, &m) != nil {
		return nil
	}
	return m
}

// argsOf is toolArgs(ev), decoded once while load or add runs. Nothing
// changes the map it returns.
func (m *miner) argsOf(ev *Event) map[string]any {
	if m.args == nil {
		return toolArgs(ev)
	}
	a, ok := m.args[ev]
	if !ok {
		a = toolArgs(ev)
		m.args[ev] = a
	}
	return a
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// resultInfo reads a shell result: its exit code and duration, from the
// importer's Extra (Codex exec_command_end) or the result's text.
func resultInfo(call, res *Event) (exit int, known bool, dur int64, output string) {
	if res == nil {
		return 0, false, 0, ""
	}
	output = res.Text
	if len(res.Extra) > 0 {
		var x struct {
			End *struct {
				Exit     *int `json:"exit_code"`
				Duration *struct {
					Secs  int64 `json:"secs"`
					Nanos int64 `json:"nanos"`
				} `json:"duration"`
				Output string `json:"aggregated_output"`
			} `json:"exec_command_end"`
		}
		if json.Unmarshal(res.Extra, &x) == nil && x.End != nil {
			if x.End.Exit != nil {
				exit, known = *x.End.Exit, true
			}
			if d := x.End.Duration; d != nil {
				dur = d.Secs*1e9 + d.Nanos
			}
			if output == "" {
				output = x.End.Output
			}
		}
	}
	if !known {
		exit, known = memtext.ExitCode(output)
	}
	if !known && !res.Tool.IsError {
		exit, known = 0, true
	}
	if dur == 0 && call != nil && res.Time > call.Time && call.Time > 0 {
		dur = res.Time - call.Time
	}
	return exit, known, dur, output
}

func addUnique(list []string, s ...string) []string {
	for _, x := range s {
		if x != "" && !slices.Contains(list, x) {
			list = append(list, x)
		}
	}
	return list
}

// outcome derives a task's outcome artifact, and the threads of the
// questions its answer asks, from what its events folded so far say;
// next is the next task's first prompt. t is not changed.
func (m *miner) outcome(t *mtask, next *Event) *taskOut {
	out := &taskOut{ver: t.ver, next: next}
	if t.ev0 == nil {
		return out
	}
	a := cloneArt(&t.a)
	o := t.o
	o.Files = slices.Clone(o.Files)
	o.Commands, o.Errors = slices.Clip(o.Commands), slices.Clip(o.Errors)
	a.Outcome = &o
	prompt, final, finalCall, lastErr, ev0, evN, lastTest, models := t.prompt, t.final, t.finalCall, t.lastErr, t.ev0, t.evN, t.lastTest, t.models
	a.First, a.Last = ev0.Time, evN.Time
	o.Duration = evN.Time - ev0.Time
	if prompt != nil {
		o.Prompt = capText(m.text(promptText(prompt)), 600)
		a.Evidence = append([]Evidence{evidence(prompt)}, a.Evidence...)
	}
	// Status.
	var finalText string
	if final != nil {
		finalText = m.text(final.Text)
		a.Evidence = append(a.Evidence, evidence(final))
	}
	switch {
	case lastErr != nil && (final == nil || lastErr.Seq > final.Seq):
		o.Status, o.Reason = "fail", "the last model call failed"
		if len(o.Errors) > 0 {
			o.Reason += ": " + o.Errors[len(o.Errors)-1]
		}
	case final == nil && lastCommandSucceeded(o.Commands, lastErr) && (lastTest == nil || lastTest.Test != "failed"):
		// The work ran and reported ("reindexed 2,400,000 docs in
		// 6m41s"); the session ended before the agent said so.
		c := o.Commands[len(o.Commands)-1]
		o.Status, o.Reason = "success", "its last command succeeded ("+capText(c.Command, 80)+"); the agent gave no answer"
	case final == nil:
		o.Status, o.Reason = "fail", "the agent gave no answer"
	case lastTest != nil && lastTest.Test == "failed":
		o.Status, o.Reason = "fail", "tests still fail: "+lastTest.Command
	case finalCall != nil && finalCall.Call != nil && (finalCall.Call.StopReason == "max_tokens" || finalCall.Call.StopReason == "length"):
		o.Status, o.Reason = "fail", "the answer was cut at the token limit"
	default:
		o.Status, o.Reason = "success", "the agent finished"
		for _, f := range memtext.Find(finalText, memtext.FindOptions{Role: "assistant", Questions: true}) {
			if f.Type == memtext.Type("blocker") {
				o.Status, o.Reason = "blocked", "the agent is blocked: "+f.Sentence
				break
			}
			if f.Type == memtext.Type("question") && o.Status == "success" {
				o.Status, o.Reason = "blocked", "the agent asked: "+f.Sentence
			}
		}
	}
	if final != nil {
		out.qs = m.questions(t, final, finalText, next)
	}
	// Cost.
	var names []string
	for k := range models {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if p, ok := llm.PriceOf(k, nil); ok {
			o.CostUSD += p.Cost(models[k])
		} else if k != "" && !models[k].IsZero() {
			o.Unpriced = append(o.Unpriced, k)
		}
	}
	o.CostUSD = float64(int64(o.CostUSD*1e6+0.5)) / 1e6
	// Summary.
	if finalText != "" {
		for _, s := range sentences(finalText, 2) {
			o.Summary = append(o.Summary, s)
		}
	}
	for _, r := range t.reports {
		// What the agent said once its tests passed, when its last
		// message says something else.
		if !slices.Contains(o.Summary, r) {
			o.Summary = append(o.Summary, r)
		}
	}
	if n := len(o.Files); n > 0 {
		var ps []string
		for i, f := range o.Files {
			if i == 5 {
				ps = append(ps, fmt.Sprintf("and %d more", n-5))
				break
			}
			ps = append(ps, f.Path)
		}
		o.Summary = append(o.Summary, fmt.Sprintf("Changed %d file%s: %s", n, plural(n), strings.Join(ps, ", ")))
	}
	if n := len(o.Commands); n > 0 {
		failed := 0
		for _, c := range o.Commands {
			if c.Exit != nil && *c.Exit != 0 {
				failed++
			}
		}
		s := fmt.Sprintf("Ran %d command%s", n, plural(n))
		if failed > 0 {
			s += fmt.Sprintf(" (%d failed)", failed)
		}
		if lastTest != nil {
			s += "; last test run " + lastTest.Test + ": " + capText(lastTest.Command, 80)
		}
		o.Summary = append(o.Summary, s)
	}
	if o.Summary == nil {
		o.Summary = []string{}
	}
	a.Status = o.Status
	a.Title, a.Text = outcomeTitle(&a), outcomeText(&a)
	a.Symbols = memtext.Identifiers(o.Prompt + "\n" + finalText)
	a.ID = artifactID("out", m.s.ID, t.id)
	out.a = &a
	return out
}

// outcomeTitle is the one-line title of an outcome artifact: what the
// task was asked (or reported) to do, its id and its status.
func outcomeTitle(a *Artifact) string {
	o := a.Outcome
	title := "task " + a.Task
	switch {
	case o.Prompt != "":
		title = firstLine(o.Prompt, 100)
	case o.Report != nil && o.Report.Summary != "":
		title = firstLine(o.Report.Summary, 100)
	}
	return fmt.Sprintf("%s (%s, %s)", title, a.Task, o.Status)
}

// outcomeText is the human-readable form of an outcome artifact. What
// finishArtifact would cut (beyond textCap) is not written: a long task's
// text costs the same to make at every pass.
func outcomeText(a *Artifact) string {
	o := a.Outcome
	var b strings.Builder
	fmt.Fprintf(&b, "Task %s: %s. %s.\n", a.Task, o.Status, o.Reason)
	if o.Prompt != "" {
		fmt.Fprintf(&b, "Asked: %s\n", o.Prompt)
	}
	for _, s := range o.Summary {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	for _, c := range o.Commands {
		if b.Len() > textCap {
			return b.String()
		}
		exit := "?"
		if c.Exit != nil {
			exit = strconv.Itoa(*c.Exit)
		}
		b.WriteString("$ ")
		b.WriteString(capText(c.Command, 200))
		b.WriteString("  [exit ")
		b.WriteString(exit)
		b.WriteString("]")
		if c.Result != "" {
			b.WriteString(" → ")
			b.WriteString(c.Result)
		}
		b.WriteByte('\n')
	}
	for _, e := range o.Errors {
		if b.Len() > textCap {
			return b.String()
		}
		b.WriteString("error: ")
		b.WriteString(e)
		b.WriteByte('\n')
	}
	if r := o.Report; r != nil && len(r.Files) > 0 {
		fmt.Fprintf(&b, "Reported files: %s\n", strings.Join(r.Files, ", "))
	}
	var changed []string
	for _, f := range o.Files {
		switch {
		case f.Op == "diff":
			changed = append(changed, fmt.Sprintf("%s (+%d -%d)", f.Path, f.Added, f.Deleted))
		case f.Op == "delete" && f.Deleted > 0:
			changed = append(changed, fmt.Sprintf("%s (deleted, -%d)", f.Path, f.Deleted))
		}
	}
	if len(changed) > 0 {
		fmt.Fprintf(&b, "Changed in the repository: %s\n", strings.Join(changed, ", "))
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// sentences returns up to n first sentences of prose, each capped.
func sentences(text string, n int) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		p := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(para), "#*->•0123456789. "))
		if p == "" || strings.HasPrefix(p, "```") || strings.HasPrefix(p, "|") {
			continue
		}
		for p != "" && len(out) < n {
			i := strings.Index(p, ". ")
			s := p
			if i >= 0 {
				s, p = p[:i+1], strings.TrimSpace(p[i+2:])
			} else {
				p = ""
			}
			out = append(out, capText(strings.TrimSpace(s), 240))
		}
		if len(out) >= n {
			break
		}
	}
	return out
}

// toolCall takes a tool call into the task's outcome and threads.
func (m *miner) toolCall(t *mtask, a *Artifact, ev, res *Event, lastTest **Command) {
	if ev.Tool == nil {
		return
	}
	o := a.Outcome
	m.toolAnswers(t, ev, res)
	args := m.argsOf(ev)
	failed := res != nil && res.Tool != nil && res.Tool.IsError
	for _, fe := range memtext.FileEdits(ev.Tool.Name, args, ev.Text) {
		if failed {
			continue
		}
		fe.Path = m.text(fe.Path)
		o.Files = addChange(o.Files, FileChange{Path: fe.Path, Op: fe.Op, Tool: ev.Tool.Name})
		a.Files = addUnique(a.Files, fe.Path)
		a.Evidence = append(a.Evidence, evidence(ev))
		m.todos(t, ev, fe)
	}
	cmd := memtext.ShellCommand(ev.Tool.Name, args)
	if cmd == "" {
		return
	}
	cmd = m.text(cmd)
	a.Evidence = append(a.Evidence, evidence(ev))
	exit, known, dur, output := resultInfo(ev, res)
	output = m.text(output)
	c := Command{Command: capText(cmd, 2000), Duration: dur, Seq: ev.Seq}
	if known {
		c.Exit = &exit
	}
	if (known && exit != 0) || failed {
		c.Error = memtext.FirstErrorLine(output)
		if c.Error == "" || strings.HasPrefix(c.Error, "Exit code ") {
			// The first line after Claude Code's "Exit code N".
			rest := output
			if strings.HasPrefix(rest, "Exit code ") {
				_, rest, _ = strings.Cut(rest, "\n")
			}
			if l := firstLine(rest, 200); l != "" {
				c.Error = l
			}
		}
	}
	if c.Error == "" && !failed && (!known || exit == 0) {
		c.Result = lastOutputLine(output)
	}
	tr := memtext.ParseTestResult(cmd, output, exit, known)
	// Output that looks like a test runner's counts only from a command
	// that runs tests (not "uv tool install ." printing a build failure).
	if tr.IsTest && (memtext.IsTestCommand(cmd) || strings.Contains(strings.ToLower(cmd), "test")) {
		switch {
		case tr.Failed:
			c.Test = "failed"
		case tr.Passed:
			c.Test = "passed"
		}
		if c.Test != "" {
			*lastTest = &c
		}
		m.testThreads(t, ev, res, cmd, tr)
	}
	if !tr.IsTest || !memtext.IsTestCommand(cmd) {
		switch {
		case known && exit == 0 && !failed:
			m.succeeded(ev, cmd)
		case (known && exit != 0 || failed) && !strings.Contains(output, "tool use was rejected"):
			m.failure(t, ev, cmd, memtext.FirstErrorLine(output), output)
		}
	}
	o.Commands = append(o.Commands, c)
	a.Commands = addUnique(a.Commands, capText(cmd, 300))
	if c.Error != "" {
		o.Errors = addUnique(o.Errors, c.Error)
		a.Errors = addUnique(a.Errors, c.Error)
	}
	if !failed {
		for _, p := range memtext.ShellWrites(cmd) {
			o.Files = addChange(o.Files, FileChange{Path: p, Op: "shell", Tool: ev.Tool.Name})
			a.Files = addUnique(a.Files, p)
		}
		for _, p := range memtext.ShellDeletes(cmd) {
			o.Files = addChange(o.Files, FileChange{Path: p, Op: "delete", Tool: ev.Tool.Name})
			a.Files = addUnique(a.Files, p)
		}
	}
}

func addChange(list []FileChange, c FileChange) []FileChange {
	for i := range list {
		if list[i].Path == c.Path {
			if c.Op == "delete" || list[i].Op == "shell" {
				list[i].Op, list[i].Tool = c.Op, c.Tool
			}
			return list
		}
	}
	return append(list, c)
}

// list returns the artifacts of a map in creation order.
func (m *miner) list(set map[string]*Artifact) []Artifact {
	out := make([]Artifact, 0, len(set))
	for _, a := range set {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Evidence[0].Seq != out[j].Evidence[0].Seq {
			return out[i].Evidence[0].Seq < out[j].Evidence[0].Seq
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// finishArtifact caps what an artifact carries and sets its builder.
func finishArtifact(a *Artifact) {
	a.Builder = MemoryVersion
	if len(a.Evidence) > 32 {
		a.Evidence = append(a.Evidence[:16:16], a.Evidence[len(a.Evidence)-16:]...)
	}
	if a.Evidence == nil {
		a.Evidence = []Evidence{}
	}
	sort.Strings(a.Symbols)
	if len(a.Symbols) > 64 {
		a.Symbols = a.Symbols[:64]
	}
	if len(a.Commands) > 64 {
		a.Commands = a.Commands[:64]
	}
	if len(a.Files) > 200 {
		a.Files = a.Files[:200]
	}
	if a.Text == "" {
		a.Text = describeArtifact(a)
	}
	a.Text = capText(a.Text, textCap)
}

// textCap is the most an artifact's text holds, in bytes.
const textCap = 16 << 10

// describeArtifact writes the human-readable form of a decision,
// constraint or open thread.
func describeArtifact(a *Artifact) string {
	var b strings.Builder
	where := "task " + a.Task
	switch {
	case a.Decision != nil:
		d := a.Decision
		if d.Setting != "" && d.Head != "" {
			// Not the whole list: its other settings may have changed.
			fmt.Fprintf(&b, "Decision (%s): %s (a setting of: %s)\n", a.Status, d.Setting, d.Head)
		} else {
			fmt.Fprintf(&b, "Decision (%s): %s\n", a.Status, d.Statement)
		}
		if d.Rationale != "" {
			fmt.Fprintf(&b, "Why: %s\n", d.Rationale)
		}
		if d.Context != "" {
			fmt.Fprintf(&b, "Context: %s\n", d.Context)
		}
		if d.Subject != "" {
			fmt.Fprintf(&b, "Subject: %s", d.Subject)
			if d.SubjectFrom != "" {
				fmt.Fprintf(&b, " (%s)", d.SubjectFrom)
			}
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Stated by the %s%s in %s", d.Role, viaText(d.Via), where)
		if d.Count > 1 {
			fmt.Fprintf(&b, ", %d times", d.Count)
		}
		b.WriteString(".\n")
		if len(d.Supersedes) > 0 {
			fmt.Fprintf(&b, "Supersedes: %s", strings.Join(d.Supersedes, ", "))
			if d.SupersedesWhy != "" {
				fmt.Fprintf(&b, " (%s)", d.SupersedesWhy)
			}
			b.WriteByte('\n')
		}
		if d.SupersededBy != "" {
			fmt.Fprintf(&b, "Superseded by: %s\n", d.SupersededBy)
		}
	case a.Constraint != nil:
		c := a.Constraint
		fmt.Fprintf(&b, "Constraint (%s, %s scope, %s): %s\n", a.Status, c.Scope, c.Modal, c.Statement)
		fmt.Fprintf(&b, "Stated by the %s%s in %s", c.Source, viaText(c.Via), where)
		if c.Count > 1 {
			fmt.Fprintf(&b, ", %d times", c.Count)
		}
		b.WriteString(".\n")
		if len(c.Supersedes) > 0 {
			fmt.Fprintf(&b, "Supersedes: %s\n", strings.Join(c.Supersedes, ", "))
		}
		if c.SupersededBy != "" {
			fmt.Fprintf(&b, "Superseded by: %s\n", c.SupersededBy)
		}
	case a.Thread != nil:
		t := a.Thread
		fmt.Fprintf(&b, "Open thread (%s, %s): %s\n", t.Kind, a.Status, t.Text)
		if t.File != "" {
			fmt.Fprintf(&b, "File: %s\n", t.File)
		}
		if t.Test != "" && len(a.Commands) > 0 {
			fmt.Fprintf(&b, "Command: %s\n", a.Commands[0])
		}
		for _, e := range a.Errors {
			fmt.Fprintf(&b, "error: %s\n", e)
		}
		fmt.Fprintf(&b, "Opened in %s.\n", where)
		if t.ClosedBy != nil {
			fmt.Fprintf(&b, "Closed at event %d: %s\n", t.ClosedBy.Seq, t.Why)
		}
	}
	return b.String()
}

// viaText says how the user stated a decision or constraint that was no
// typed prompt.
func viaText(via string) string {
	switch via {
	case "answer":
		return " (an answer to the agent's question)"
	case "plan":
		return " (a plan the user approved)"
	case "rejection":
		return " (the reason for rejecting a tool call)"
	case "subagent prompt":
		return " (in its prompt to a subagent)"
	case "summary":
		return " (in a compaction summary)"
	}
	return ""
}

// lastOutputLine returns the last line of a command's output that says
// something (not an exit code, a prompt or a rule of dashes), trimmed
// and capped at 160 bytes; "" when there is none.
func lastOutputLine(output string) string {
	for len(output) > 0 {
		i := strings.LastIndexByte(strings.TrimRight(output, "\n"), '\n')
		line := strings.TrimSpace(output[i+1:])
		output = output[:max(i, 0)]
		if line == "" || strings.HasPrefix(line, "Exit code") || strings.Trim(line, "-=─━*#.> ") == "" || strings.HasPrefix(line, "$ ") {
			if i < 0 {
				break
			}
			continue
		}
		return capText(line, 160)
	}
	return ""
}

// lastCommandSucceeded reports whether a task's last command exited 0
// and nothing failed after it.
func lastCommandSucceeded(cmds []Command, lastErr *Event) bool {
	if len(cmds) == 0 || lastErr != nil {
		return false
	}
	c := cmds[len(cmds)-1]
	return c.Exit != nil && *c.Exit == 0 && c.Error == "" && c.Test != "failed"
}

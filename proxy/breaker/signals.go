package breaker

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/internal/memtext"
)

// outcome is one tool call of a step with its result.
type outcome struct {
	call   *llm.Part // nil for a result whose call is not in the tail
	result *llm.Part
	failed bool
}

// outcomes pairs the step's tool results with the turn's calls.
func outcomes(st *step) []outcome {
	calls := map[string]*llm.Part{}
	if st.turn != nil {
		for i := range st.turn.Parts {
			if p := &st.turn.Parts[i]; p.Type == llm.PartToolCall {
				calls[p.ID] = p
			}
		}
	}
	var out []outcome
	for i := range st.after {
		for k := range st.after[i].Parts {
			p := &st.after[i].Parts[k]
			if p.Type != llm.PartToolResult {
				continue
			}
			o := outcome{call: calls[p.ID], result: p, failed: p.IsError}
			if !o.failed {
				if code, ok := memtext.ExitCode(p.Text); ok && code != 0 {
					o.failed = true
				}
			}
			out = append(out, o)
		}
	}
	return out
}

// progress returns the step's first progress signal, or "": a file
// changed by a successful call not made before, tests passing after they
// failed, or a successful tool result unlike every earlier one of the
// thread. It records what it saw in the thread.
func (b *Breaker) progress(t *thread, st *step) string {
	var signal string
	note := func(s string) {
		if signal == "" {
			signal = s
		}
	}
	for _, o := range outcomes(st) {
		name, args := "", map[string]any(nil)
		if o.call != nil {
			name = o.call.Name
			json.Unmarshal(o.call.Input, &args)
		}
		if !o.failed && o.call != nil {
			if edits := memtext.FileEdits(name, args, o.call.Text); len(edits) > 0 {
				if t.see(hashString(name + "\x00" + string(o.call.Input) + "\x00edit")) {
					note("file changed: " + edits[0].Path)
				}
			}
			if cmd := memtext.ShellCommand(name, args); cmd != "" {
				if w := memtext.ShellWrites(cmd); len(w) > 0 && t.see(hashString(cmd+"\x00write")) {
					note("file changed: " + w[0])
				}
			}
		}
		if o.call != nil {
			if cmd := memtext.ShellCommand(name, args); cmd != "" {
				code, known := memtext.ExitCode(o.result.Text)
				if o.result.IsError && !known {
					code, known = 1, true
				}
				if tr := memtext.ParseTestResult(cmd, o.result.Text, code, known); tr.IsTest {
					switch {
					case tr.Failed:
						t.testsFailing = true
					case tr.Passed && t.testsFailing:
						t.testsFailing = false
						note("tests pass: " + firstLine(cmp.Or(tr.Summary, cmd)))
					}
				}
			}
		}
		if !o.failed && t.see(resultHash(o.result)) {
			what := "a new tool result"
			if name != "" {
				what = "a new " + name + " result"
			}
			note(what)
		}
	}
	return signal
}

// see adds h to what the thread has seen and reports whether it is new.
func (t *thread) see(h uint64) bool {
	if _, ok := t.seen[h]; ok {
		return false
	}
	if len(t.seen) >= maxSeen {
		clear(t.seen)
	}
	t.seen[h] = struct{}{}
	return true
}

// stagnant says how a step without progress repeats the one before, or
// "".
func stagnant(t *thread, st *step) string {
	if c := callsHash(st.turn); c != 0 && c == t.lastCalls {
		return "the same call again: " + describeCalls(st.turn)
	}
	if e := errorHash(st); e != 0 && e == t.lastErr {
		for _, o := range outcomes(st) {
			if o.failed {
				return "the same error again: " + firstLine(o.result.Text)
			}
		}
	}
	if callsHash(st.turn) == 0 {
		if x := textHash(st.turn); x != 0 && x == t.lastText {
			return "the same answer again: " + firstLine(turnText(st.turn))
		}
	}
	return ""
}

// callsHash hashes the turn's tool calls with their arguments, in order;
// 0 when it made none.
func callsHash(m *llm.Message) uint64 {
	if m == nil {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(seed)
	n := 0
	for i := range m.Parts {
		if p := &m.Parts[i]; p.Type == llm.PartToolCall {
			h.WriteString(p.Name)
			h.WriteByte(0)
			h.Write(p.Input)
			h.WriteString(p.Text)
			h.WriteByte(0)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return h.Sum64() | 1
}

func turnText(m *llm.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for i := range m.Parts {
		if p := &m.Parts[i]; p.Type == llm.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// textHash hashes the turn's text; 0 when it has none.
func textHash(m *llm.Message) uint64 {
	s := strings.TrimSpace(turnText(m))
	if s == "" {
		return 0
	}
	return hashString(s) | 1
}

// errorHash hashes the step's results when every one failed; 0
// otherwise.
func errorHash(st *step) uint64 {
	os := outcomes(st)
	if len(os) == 0 {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(seed)
	for _, o := range os {
		if !o.failed {
			return 0
		}
		h.WriteString(o.result.Text)
		h.WriteByte(0)
	}
	return h.Sum64() | 1
}

func resultHash(p *llm.Part) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	writePart(&h, &llm.Part{Type: p.Type, Text: p.Text, Content: p.Content, IsError: p.IsError})
	return h.Sum64()
}

func hashString(s string) uint64 { return maphash.String(seed, s) }

// describeCalls names a turn's tool calls with their arguments, briefly.
func describeCalls(m *llm.Message) string {
	var parts []string
	for i := range m.Parts {
		if p := &m.Parts[i]; p.Type == llm.PartToolCall {
			in := string(p.Input)
			if in == "" {
				in = p.Text
			}
			if len(in) > 200 {
				in = in[:200] + "…"
			}
			parts = append(parts, fmt.Sprintf("%s %s", p.Name, in))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

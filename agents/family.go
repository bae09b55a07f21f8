package agents

import "slices"

// Family is how bbengine tells a client's recorded sessions apart: the
// proxy's by the User-Agent of their requests, imported ones by the
// source of their logs. Derivation gives every session the Name of its
// family (engine.Session.Agent); agents/all hands the families to the
// engine (engine.RegisterFamily), which names no client itself.
type Family struct {
	// Name is the family's name in derived sessions: "claude-code". It
	// never changes: derived sessions hold it, and bbengine sessions
	// --agent filters by it.
	Name string
	// UserAgents are lower-case strings any of which, found in a
	// request's User-Agent header or its Originator header (which Codex
	// sends), names the family: "claude-cli". None: the family is known
	// by the first product of its User-Agent alone ("aider/0.86").
	UserAgents []string
	// Sources are the import sources of the agent's logs, as its package
	// registers them with engine.RegisterImporter: "claude".
	Sources []string
	// Coding says the client is a coding agent, whose system prompt is
	// its own boilerplate (tool and skill listings), not the user's:
	// memory takes nothing from it. Every registered Agent is one.
	Coding bool
	// JoinByID says the agent sends, through the proxy, the session id
	// its own log is named by (SessionHeaders, or the body), so that a
	// proxied session and its imported log are read as one session.
	JoinByID bool
	// JoinByContent says the agent sends no session id its log is named
	// by, so a proxied session and an imported log are read as one
	// session when their replies are the same (Gemini CLI).
	JoinByContent bool
	// SessionHeaders are the request headers the agent sends its session
	// id in; Families sets them from the Agent.
	SessionHeaders []string
}

// others are the clients bbengine recognises in the proxy's traffic but
// has no directory for yet, in the order they are tried. When an agent
// of one of these families is added, its own Family replaces the row
// (Families skips a row whose Name a registered agent claims); delete
// the row then.
var others = []Family{
	{Name: "anthropic-sdk", UserAgents: []string{"anthropic/js", "anthropic/python"}},
	{Name: "openai-sdk", UserAgents: []string{"openai/js", "openai/python"}},
	{Name: "aider", Coding: true},
	{Name: "cursor", Coding: true},
	{Name: "cline", Coding: true},
}

// Families returns the families of the registered agents, in the order
// of All and with Coding set, followed by those of the clients bbengine
// knows without a directory, less the ones a registered agent claims.
// The order is the order in which a request's User-Agent is matched.
func Families() []Family {
	var out []Family
	for _, a := range All() {
		f := a.Family()
		f.Coding = true
		f.SessionHeaders = slices.Clone(a.SessionHeaders())
		out = append(out, f)
	}
	for _, f := range others {
		if !slices.ContainsFunc(out, func(g Family) bool { return g.Name == f.Name }) {
			f.UserAgents = slices.Clone(f.UserAgents)
			out = append(out, f)
		}
	}
	return out
}

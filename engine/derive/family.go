package derive

import (
	"slices"
	"strings"
)

// Family is a kind of client as derivation tells them apart: the proxy's
// sessions by the User-Agent of their requests, imported ones by the
// source of their logs. The engine names no client itself: agents/all
// registers the family of every agent of agents/ and of the clients
// bbengine knows without a directory (agents.Families).
type Family struct {
	// Name is Session.Agent of the family's sessions: "claude-code".
	Name string
	// UserAgents are lower-case strings any of which, in a request's
	// User-Agent or Originator header, names the family.
	UserAgents []string
	// Sources are the import sources (RegisterImporter) of its logs.
	Sources []string
	// Coding says it is a coding agent, whose system prompt is its own
	// boilerplate, not the user's: memory takes nothing from it.
	Coding bool
	// JoinByID says the family's requests carry the session id its logs
	// are named by: in one of SessionHeaders, or in the body (the
	// proxy's session source "body"). A proxied session that sent id X
	// and the imported session "<source>:X" of one of Sources are then
	// merged (merge.go).
	JoinByID       bool
	SessionHeaders []string
	// JoinByContent says the family's requests carry no id its logs are
	// named by: a proxied session and an imported one of its Sources
	// are merged when their first replies are the same (mergecontent.go).
	JoinByContent bool
}

// families are the registered families, in the order they are matched.
var families []Family

// RegisterFamily adds f to the families derivation knows, after those
// registered before it: a request's User-Agent takes the first family
// that matches. Call it from an init function: the list is not guarded,
// and derivation reads it. Every program that derives must register the
// same families in the same order (they link agents/all), or a rebuild
// would name sessions differently. It panics when f has no name or its
// name is taken.
func RegisterFamily(f Family) {
	if f.Name == "" {
		panic("engine: RegisterFamily of a family without a name")
	}
	if slices.ContainsFunc(families, func(g Family) bool { return g.Name == f.Name }) {
		panic("engine: RegisterFamily called twice for " + f.Name)
	}
	families = append(families, f)
}

// agentOf names the client family and version from its User-Agent (and
// the Originator header): the first registered family whose words it
// holds, else the name of its first product ("aider" of "aider/0.86").
func agentOf(ua, originator string) (agent, client string) {
	client, _, _ = strings.Cut(strings.TrimSpace(ua), " ")
	lower := strings.ToLower(ua + " " + originator)
	for _, f := range families {
		for _, w := range f.UserAgents {
			if strings.Contains(lower, w) {
				return f.Name, client
			}
		}
	}
	if client != "" {
		agent, _, _ = strings.Cut(client, "/")
	}
	return agent, client
}

// agentCLI reports whether a session is a known coding agent's, whose
// system prompt is the agent's own: its family is a coding agent's, or
// it was imported from an agent's logs.
func agentCLI(s *Session) bool {
	for _, f := range families {
		if f.Coding && f.Name == s.Agent || s.Import != nil && slices.Contains(f.Sources, s.Import.Source) {
			return true
		}
	}
	return false
}

// familyNamed returns the registered family called name, or nil.
func familyNamed(name string) *Family {
	for i := range families {
		if families[i].Name == name {
			return &families[i]
		}
	}
	return nil
}

// joinsBySource reports whether the import source belongs to a family
// that joins by id.
func joinsBySource(source string) bool {
	for _, f := range families {
		if f.JoinByID && slices.Contains(f.Sources, source) {
			return true
		}
	}
	return false
}

// joinsByContent reports whether the import source belongs to a family
// that joins by content.
func joinsByContent(source string) bool {
	for _, f := range families {
		if f.JoinByContent && slices.Contains(f.Sources, source) {
			return true
		}
	}
	return false
}

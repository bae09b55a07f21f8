package all

import (
	"github.com/bbengine/bbengine/agents"
	_ "github.com/bbengine/bbengine/agents/claude"
	_ "github.com/bbengine/bbengine/agents/codex"
	_ "github.com/bbengine/bbengine/agents/gemini"
	_ "github.com/bbengine/bbengine/agents/opencode"
	"github.com/bbengine/bbengine/engine"
)

// init hands the engine the families of the agents registered above (the
// packages imported here ran their init functions first) and of the
// clients bbengine knows without a directory.
func init() {
	for _, f := range agents.Families() {
		engine.RegisterFamily(engine.Family{Name: f.Name, UserAgents: f.UserAgents, Sources: f.Sources, Coding: f.Coding,
			JoinByID: f.JoinByID, JoinByContent: f.JoinByContent, SessionHeaders: f.SessionHeaders})
	}
}

package all

import (
	_ "github.com/bbengine/bbengine/agents/claude"
	_ "github.com/bbengine/bbengine/agents/codex"
)

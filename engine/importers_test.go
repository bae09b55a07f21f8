package engine_test

// The engine's own tests import Claude Code and Codex logs; the
// importers of those sources live in the agents' directories, above the
// engine, and register themselves with engine.RegisterImporter. This
// external test file links them into the test binary (a test may import
// what sits above its package; see internal/layers).

import (
	_ "github.com/bbengine/bbengine/agents/claude"
	_ "github.com/bbengine/bbengine/agents/codex"
)

package engine_test

// The engine's own tests import Claude Code and Codex logs and derive
// their proxied traffic; the importers of those sources and the client
// families live above the engine, in the agents' directories, and
// agents/all registers them (engine.RegisterImporter,
// engine.RegisterFamily). This external test file links them into the
// test binary (a test may import what sits above its package; see
// internal/layers).

import (
	_ "github.com/bbengine/bbengine/agents/all"
)

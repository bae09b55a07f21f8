package derive_test

// The pipeline's tests import Claude Code and Codex logs; the importers
// of those sources and the client families live above the engine, in
// the agents' directories, and agents/all registers them. This external
// test file links them into the test binary, as engine/importers_test.go
// does for the engine's.

import (
	_ "github.com/bbengine/bbengine/agents/all"
)

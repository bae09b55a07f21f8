package export_test

// The golden conversions read Claude Code and Codex logs, whose
// importers live in the agents' directories above this package and
// register themselves with engine.RegisterImporter. This external test
// file links them into the test binary (a test may import what sits
// above its package; see internal/layers).

import (
	_ "github.com/bbengine/bbengine/agents/claude"
	_ "github.com/bbengine/bbengine/agents/codex"
)

package export_test

// The golden conversions read Claude Code and Codex logs, whose
// importers live in the agents' directories above this package and
// register themselves with engine.RegisterImporter; agents/all also
// registers the client families derivation names sessions by. This
// external test file links them into the test binary (a test may import
// what sits above its package; see internal/layers).

import (
	_ "github.com/bbengine/bbengine/agents/all"
)

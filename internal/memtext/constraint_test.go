package memtext

import "testing"

// TestFindRules covers rules phrased as people state them, in wording of
// our own, and descriptions that are no rule.
func TestFindRules(t *testing.T) {
	tests := []struct {
		role, text string
		modal      string // "" for no constraint
		neg        bool
	}{
		{"user", "Rule number one: nobody edits the generated protobuf code by hand.", "must not", true},
		{"user", "Hard rule: keep every public function documented.", "must", false},
		{"user", "Ground rule for this repo: schema changes reach production only through the deploy pipeline, never from someone's terminal.", "must not", true},
		{"user", "House rule for the team: every PR gets a second reviewer.", "must", false},
		{"user", "The rule for this repo is unclear to me.", "", false},
		{"user", "We need a rule for the cache: it has no eviction.", "", false},
		{"user", "The public REST schema is frozen, no renames of fields.", "must not", true},
		{"user", "Each release has to keep the old config format readable.", "must", false},
		{"user", "We have to support Python 3.9 until June.", "must", false},
		{"user", "No direct pushes to main allowed.", "must not", true},
		{"user", "Nobody deploys on Fridays.", "must not", true},
		{"user", "From now on, run the linter before every commit.", "always", false},
		{"user", "Never hand-edit the lockfile.", "never", true},
		{"user", "Always squash before merging.", "always", false},
		{"user", "Migrations must be reversible.", "must", false},
		{"user", "Do not add new dependencies.", "do not", true},
		// Descriptions and inferences.
		{"assistant", "The type checker knows the record is always a struct (never nil) here.", "", false},
		{"assistant", "The CI workflow runs the linters and the unit tests on every push.", "", false},
		{"assistant", "The handler has to be the culprit.", "", false},
		{"user", "The handler has to be the culprit.", "", false},
		{"assistant", "Each request has to wait for the lock, which is why it is slow.", "", false},
		{"user", "Nobody knows why the test is flaky.", "", false},
		{"assistant", "Rule one: read the docs.", "", false},
		{"user", "It has to be something in the cache.", "", false},
		{"user", "The API is not frozen yet.", "", false},
	}
	for _, tt := range tests {
		var got *Finding
		for _, f := range Find(tt.text, FindOptions{Role: tt.role}) {
			if f.Type == TypeConstraint {
				got = &f
			}
		}
		switch {
		case tt.modal == "" && got != nil:
			t.Errorf("Find(%q, %s) = constraint %q, want none", tt.text, tt.role, got.Modal)
		case tt.modal != "" && got == nil:
			t.Errorf("Find(%q, %s): no constraint, want %q", tt.text, tt.role, tt.modal)
		case got != nil && (got.Modal != tt.modal || got.Negative != tt.neg):
			t.Errorf("Find(%q, %s) = %q neg=%t, want %q neg=%t", tt.text, tt.role, got.Modal, got.Negative, tt.modal, tt.neg)
		}
	}
}

package proxy

import (
	"slices"
	"testing"
)

// TestCannedHistoryNotJoined: a request whose conversation starts with
// another session's first message but goes on with an assistant turn
// that is not that session's reply (a script sending canned few-shot
// history, another user's copy of a fixed agent prompt) starts its own
// session, though that session is the only one that sent the prefix.
func TestCannedHistoryNotJoined(t *testing.T) {
	for _, sh := range convShapes {
		t.Run(sh.name, func(t *testing.T) {
			ids, _ := sessionsOf(t, sh, []convStep{
				{turns: turns("Review this diff."), reply: "LGTM, ship it"},
				{turns: turns("Review this diff.", "Example: the diff adds a nil check.", "Now review: rm -rf /")},
			})
			if got := groups(ids); !slices.Equal(got, []int{0, 1}) {
				t.Errorf("sessions %v, want [0 1]: a conversation whose assistant turn is not the reply given was merged (%v)", got, ids)
			}
		})
	}
}

// TestSameRequestAnsweredNotJoined: a request that resends exactly an
// earlier one that was answered well is another terminal that began the
// same way, not a retry: a shorter prefix of it, which only the first
// terminal sent, does not claim it either (a script with a fixed
// few-shot prompt run twice, two CI jobs).
func TestSameRequestAnsweredNotJoined(t *testing.T) {
	for _, sh := range convShapes {
		t.Run(sh.name, func(t *testing.T) {
			ids, _ := sessionsOf(t, sh, []convStep{
				{turns: turns("hello")},
				{turns: turns("hello", "ok", "go")},
				{turns: turns("hello", "ok", "go")},
			})
			if got := groups(ids); !slices.Equal(got, []int{0, 0, 2}) {
				t.Errorf("sessions %v, want [0 0 2]: an exact resend of an answered request joined (%v)", got, ids)
			}
		})
	}
}

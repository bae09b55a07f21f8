package derive

import "testing"

// TestPairContentBackwardBound: pairContent's backward pass is for a
// live group before its thread's first pair. A live call after a pair
// (x2, after x1's pair with g1) must not pair with an imported call
// before that pair's partner (g0): the order would be inverted, and the
// log's call g0, which the proxy never saw, would disappear from the
// merged view with its usage.
//
// live: x1 (msg_1), x2 "A" (a call the log does not have), x3 (msg_3)
// log:  g0 "A" (before the proxy), g1 (msg_1), g3 (msg_3)
func TestPairContentBackwardBound(t *testing.T) {
	live := tl(lresp(1, call("msg_1", "")), lresp(1, msg("assistant", "one")), lresp(1, usage(1)),
		lresp(2, call("", "")), lresp(2, msg("assistant", "A")), lresp(2, usage(2)),
		lresp(3, call("msg_3", "")), lresp(3, msg("assistant", "three")), lresp(3, usage(3)))
	imported := tl(imp(call("", ""), ""), imp(msg("assistant", "A"), ""), imp(usage(50), ""),
		imp(call("msg_1", ""), ""), imp(msg("assistant", "one"), ""), imp(usage(1), ""),
		imp(call("msg_3", ""), ""), imp(msg("assistant", "three"), ""), imp(usage(3), ""))
	order, st := MergeOrder(live, imported)
	t.Logf("order %s", orderString(order))
	for _, o := range order {
		if o.Tag == OrderPair && o.Live == 4 {
			t.Errorf("live call x2 (seq 4, after x1's pair with the log's seq 4) paired with the log's seq %d, before that pair", o.Imp)
		}
	}
	view, threads, err := MergeView("L", live, "I", imported, order)
	if err != nil {
		t.Fatal(err)
	}
	s := MergeSummary(&Session{ID: "L", Requests: 3}, &Session{ID: "I"}, view, threads, st)
	if s.Usage.Input != 1+2+3+50 || s.Requests != 4 {
		t.Errorf("merged summary: %d requests, input %d; want 4 calls (3 proxied, 1 only in the log), input 56", s.Requests, s.Usage.Input)
	}
}

// TestContentScoreExactPairsUsage: only the pairs made by content must
// agree on usage (docs/design/merge.md 2.2); a log whose calls are proven
// the same by their ids, and that differs from the wire only in one
// call's usage, joins.
func TestContentScoreExactPairsUsage(t *testing.T) {
	live := tl(lresp(1, call("", "")), lresp(1, tcallArgs("c1", "read", `{"a":1}`)), lresp(1, usage(100)),
		lreq(2, tresult("c1")), lresp(2, call("", "")), lresp(2, tcallArgs("c2", "read", `{"a":2}`)), lresp(2, usage(130)))
	imported := tl(imp(call("", ""), ""), imp(tcallArgs("c1", "read", `{"a":1}`), ""), imp(usage(100), ""),
		imp(tresult("c1"), ""), imp(call("", ""), ""), imp(tcallArgs("c2", "read", `{"a":2}`), ""), imp(usage(131), ""))
	if got := contentScore(live, imported); got != 2 {
		t.Errorf("contentScore = %d, want 2: both calls pair by their ids, and only pairs made by content must agree on usage", got)
	}
}

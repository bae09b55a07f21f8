package derive

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// tl builds a timeline: each event gets the next seq and, unless set,
// thread 1 and a time 10 ns after the one before.
func tl(evs ...Event) []Event {
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
		if evs[i].Thread == 0 {
			evs[i].Thread = 1
		}
		if evs[i].Time == 0 {
			evs[i].Time = int64(10 * (i + 1))
		}
	}
	return evs
}

// The live side: events of exchange x, request or response side.
func lreq(x uint64, ev Event) Event  { ev.Prov = Provenance{Exchange: x, Side: "request"}; return ev }
func lresp(x uint64, ev Event) Event { ev.Prov = Provenance{Exchange: x, Side: "response"}; return ev }

// imp is an imported event; rid its Prov.RequestID.
func imp(ev Event, rid string) Event { ev.Prov = Provenance{Side: "import", RequestID: rid}; return ev }

func call(resp, up string) Event {
	return Event{Kind: KindModelCall, Call: &Call{ResponseID: resp, UpstreamID: up}}
}
func usage(in int64) Event     { return Event{Kind: KindUsage, Usage: &Usage{Input: in}} }
func msg(role, s string) Event { return Event{Kind: KindMessage, Role: role, Text: s} }
func tcall(id string) Event {
	return Event{Kind: KindToolCall, Role: "assistant", Tool: &Tool{ID: id, Name: "Bash"}}
}

// tcallArgs is a tool call with arguments; an id with '#' is synthetic.
func tcallArgs(id, name, args string) Event {
	return Event{Kind: KindToolCall, Role: "assistant", Tool: &Tool{ID: id, Name: name, Args: []byte(args), SyntheticID: strings.Contains(id, "#")}}
}
func synthetic(ev Event) Event { ev.Tool.SyntheticID = true; return ev }
func tresult(id string) Event  { return Event{Kind: KindToolResult, Role: "user", Tool: &Tool{ID: id}} }
func think(sig string) Event {
	return Event{Kind: KindThinking, Role: "assistant", Text: "hmm", Signature: sig}
}
func record(typ string) Event { return Event{Kind: KindRecord, Record: &Record{Type: typ}} }
func system(s string) Event   { return Event{Kind: KindSystem, Role: "system", Text: s} }
func blobText(role string) Event {
	return Event{Kind: KindMessage, Role: role, Text: "cut", TextBlob: "ab"}
}

// longText is a text replyKey takes by its digest, longSum the digest.
var (
	longText = strings.Repeat("a long answer. ", 100)
	longSum  = func() string { s := sha256.Sum256([]byte(longText)); return hex.EncodeToString(s[:]) }()
)

// orderString writes an order as "P1:2 L3 I4 W5".
func orderString(order []OrderEntry) string {
	var out []string
	for _, o := range order {
		switch o.Tag {
		case OrderPair:
			out = append(out, fmt.Sprintf("P%d:%d", o.Live, o.Imp))
		case OrderLive, OrderRemainder:
			out = append(out, fmt.Sprintf("%c%d", o.Tag, o.Live))
		case OrderImport:
			out = append(out, fmt.Sprintf("I%d", o.Imp))
		}
	}
	return strings.Join(out, " ")
}

func TestMergeOrder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		live, imp []Event
		want      string // the order
		paired    int64
		ambiguous int64
	}{{
		name: "resp key",
		live: tl(lresp(1, call("msg_1", "")), lresp(1, msg("assistant", "hi")), lresp(1, usage(5))),
		imp:  tl(imp(call("msg_1", ""), ""), imp(msg("assistant", "hi"), ""), imp(usage(5), "")),
		want: "P1:1 P2:2 P3:3", paired: 3,
	}, {
		name: "up key: the provider's request id",
		live: tl(lresp(1, call("", "req_9")), lresp(1, usage(5))),
		imp:  tl(imp(call("", ""), "req_9"), imp(usage(5), "")),
		want: "P1:1 P2:2", paired: 2,
	}, {
		name: "call key",
		live: tl(lresp(1, call("", "")), lresp(1, tcall("toolu_1")), lresp(1, usage(5))),
		imp:  tl(imp(call("", ""), ""), imp(tcall("toolu_1"), ""), imp(usage(5), "")),
		want: "P1:1 P2:2 P3:3", paired: 3,
	}, {
		name: "sig key",
		live: tl(lresp(1, call("", "")), lresp(1, think("sig-abc")), lresp(1, usage(5))),
		imp:  tl(imp(call("", ""), ""), imp(think("sig-abc"), ""), imp(usage(5), "")),
		want: "P1:1 P2:2 P3:3", paired: 3,
	}, {
		name: "no key: apart",
		live: tl(lresp(1, call("", "")), lresp(1, usage(5))),
		imp:  tl(imp(call("", ""), ""), imp(usage(5), "")),
		want: "L1 I1 L2 I2", // by time, live first on a tie
	}, {
		name: "a key two imported calls share is ignored",
		live: tl(lresp(1, call("msg_1", "")), lresp(1, usage(5))),
		imp:  tl(imp(call("msg_1", ""), ""), imp(usage(5), ""), imp(call("msg_1", ""), ""), imp(usage(6), "")),
		want: "L1 I1 L2 I2 I3 I4", ambiguous: 1,
	}, {
		name: "the first live call a key names wins",
		live: tl(lresp(1, call("msg_1", "")), lresp(1, usage(5)), lresp(2, call("msg_1", "")), lresp(2, usage(5))),
		imp:  tl(imp(call("msg_1", ""), ""), imp(usage(5), "")),
		want: "P1:1 P2:2 L3 L4", paired: 2,
	}, {
		name: "assistant text pairs only when equal",
		live: tl(lresp(1, call("msg_1", "")), lresp(1, msg("assistant", "hi there")), lresp(1, usage(5))),
		imp:  tl(imp(call("msg_1", ""), ""), imp(msg("assistant", "hi"), ""), imp(usage(5), "")),
		want: "P1:1 L2 I2 P3:3", paired: 2,
	}, {
		name: "tool result by id, user message by the boundary rule (Claude: a reminder in front)",
		live: tl(lreq(1, system("sys")), lreq(1, msg("user", "<reminder>\nx\n</reminder>\nfix it")), lresp(1, call("msg_1", "")), lresp(1, tcall("t1")), lresp(1, usage(5)),
			lreq(2, tresult("t1")), lresp(2, call("msg_2", "")), lresp(2, usage(6))),
		imp: tl(imp(record("queue"), ""), imp(msg("user", "fix it"), ""), imp(call("msg_1", ""), ""), imp(tcall("t1"), ""), imp(usage(5), ""),
			imp(tresult("t1"), ""), imp(call("msg_2", ""), ""), imp(usage(6), "")),
		want: "L1 I1 W2 P2:2 P3:3 P4:4 P5:5 P6:6 P7:7 P8:8", paired: 7,
	}, {
		name: "user messages equal when joined (Gemini: one wire message, two in the log)",
		live: tl(lreq(1, msg("user", "<ctx>\ndo it")), lresp(1, call("msg_1", "")), lresp(1, usage(5))),
		imp:  tl(imp(msg("user", "<ctx>"), ""), imp(msg("user", "do it"), ""), imp(call("msg_1", ""), ""), imp(usage(5), "")),
		want: "P1:1 P1:2 P2:3 P3:4", paired: 4,
	}, {
		name: "no boundary: the texts differ",
		live: tl(lreq(1, msg("user", "fix it now")), lresp(1, call("msg_1", "")), lresp(1, usage(5))),
		imp:  tl(imp(msg("user", "fix it"), ""), imp(call("msg_1", ""), ""), imp(usage(5), "")),
		want: "L1 I1 P2:2 P3:3", paired: 2,
	}, {
		name: "a text in a blob is not compared",
		live: tl(lreq(1, blobText("user")), lresp(1, call("msg_1", "")), lresp(1, usage(5))),
		imp:  tl(imp(blobText("user"), ""), imp(call("msg_1", ""), ""), imp(usage(5), "")),
		want: "L1 I1 P2:2 P3:3", paired: 2,
	}, {
		name: "an imported event goes after the last paired event of its thread before it",
		live: tl(lresp(1, call("msg_1", "")), lresp(1, usage(5)), lreq(2, system("late")), lresp(2, call("msg_2", "")), lresp(2, usage(6))),
		imp: tl(imp(call("msg_1", ""), ""), imp(usage(5), ""), imp(record("a"), ""), imp(record("b"), ""),
			imp(call("msg_2", ""), ""), imp(usage(6), ""), imp(record("c"), "")),
		want: "P1:1 P2:2 L3 I3 I4 P4:5 P5:6 I7", paired: 4,
	}, {
		name: "the proxy saw only the last call: the history its request re-sent pairs",
		live: tl(lreq(3, msg("user", "fix it")), lreq(3, think("sig-1")), lreq(3, msg("assistant", "Running.")), lreq(3, tcall("t1")), lreq(3, tresult("t1")),
			lresp(3, call("msg_3", "")), lresp(3, usage(9))),
		imp: tl(imp(msg("user", "fix it"), ""), imp(call("msg_1", ""), ""), imp(think("sig-1"), ""), imp(msg("assistant", "Running."), ""),
			imp(tcall("t1"), ""), imp(usage(5), ""), imp(tresult("t1"), ""), imp(call("msg_3", ""), ""), imp(usage(9), "")),
		want: "P1:1 I2 P2:3 P3:4 P4:5 I6 P5:7 P6:8 P7:9", paired: 7,
	}, {
		name: "the boundary rule message by message (a resumed session re-sends its prompts)",
		live: tl(lreq(2, msg("user", "<r>\np1")), lreq(2, msg("user", "p2")), lresp(2, call("msg_2", "")), lresp(2, usage(6))),
		imp:  tl(imp(msg("user", "p1"), ""), imp(msg("user", "meta only in the log"), ""), imp(msg("user", "p2"), ""), imp(call("msg_2", ""), ""), imp(usage(6), "")),
		want: "W1 P1:1 I2 P2:3 P3:4 P4:5", paired: 4,
	}, {
		name: "a tool result before a call no key pairs still pairs by its id",
		live: tl(lresp(1, call("", "")), lresp(1, tcall("t1")), lresp(1, usage(5)), lreq(2, tresult("t1")), lresp(2, call("", "")), lresp(2, msg("assistant", "done")), lresp(2, usage(6))),
		imp:  tl(imp(call("", ""), ""), imp(tcall("t1"), ""), imp(usage(5), ""), imp(tresult("t1"), ""), imp(call("", ""), ""), imp(msg("assistant", "done"), ""), imp(usage(6), "")),
		want: "P1:1 P2:2 P3:3 P4:4 P5:5 P6:6 P7:7", paired: 7,
	}, {
		name: "a tool result before a call whose reply differs pairs by its id",
		live: tl(lresp(1, call("", "")), lresp(1, tcall("t1")), lresp(1, usage(5)), lreq(2, tresult("t1")), lresp(2, call("", "")), lresp(2, msg("assistant", "done")), lresp(2, usage(6))),
		imp:  tl(imp(call("", ""), ""), imp(tcall("t1"), ""), imp(usage(5), ""), imp(tresult("t1"), ""), imp(call("", ""), ""), imp(msg("assistant", "finished"), ""), imp(usage(6), "")),
		want: "P1:1 P2:2 P3:3 P4:4 L5 I5 L6 I6 L7 I7", paired: 4,
	}, {
		name: "content: a text-only answer after a pair pairs by its reply (Codex)",
		live: tl(lresp(1, call("resp_1", "")), lresp(1, tcall("c1")), lresp(1, usage(5)), lreq(2, tresult("c1")),
			lresp(2, call("resp_2", "req_2")), lresp(2, msg("assistant", "All  tests\npass.")), lresp(2, usage(9))),
		imp: tl(imp(call("", ""), ""), imp(tcall("c1"), ""), imp(usage(5), ""), imp(tresult("c1"), ""),
			imp(call("", ""), ""), imp(msg("assistant", "All tests pass. "), ""), imp(usage(7), "")),
		want: "P1:1 P2:2 P3:3 P4:4 P5:5 P6:6 P7:7", paired: 7,
	}, {
		name: "a usage the log writes after the tool's output ends its call (Codex 0.169)",
		live: tl(lresp(1, call("resp_1", "")), lresp(1, tcall("c1")), lresp(1, usage(5)), lreq(2, tresult("c1")),
			lresp(2, call("resp_2", "")), lresp(2, msg("assistant", "ok")), lresp(2, usage(9))),
		imp: tl(imp(call("resp_1", ""), ""), imp(tcall("c1"), ""), imp(tresult("c1"), ""), imp(usage(5), ""),
			imp(call("resp_2", ""), ""), imp(msg("assistant", "ok"), ""), imp(record("x"), ""), imp(usage(9), "")),
		want: "P1:1 P2:2 P3:4 P4:3 P5:5 P6:6 I7 P7:8", paired: 7,
	}, {
		name: "a record inside an imported reply does not end it (opencode's step-start)",
		live: tl(lresp(1, call("", "")), lresp(1, msg("assistant", "run")), lresp(1, tcall("c1")), lresp(1, usage(5))),
		imp:  tl(imp(call("", ""), ""), imp(record("step-start"), ""), imp(msg("assistant", "run"), ""), imp(tcall("c1"), ""), imp(usage(4), "")),
		want: "P1:1 I2 P2:3 P3:4 P4:5", paired: 4,
	}, {
		name: "a usage after the next call is not the last call's",
		live: tl(lresp(1, call("resp_1", "")), lresp(1, tcall("c1")), lresp(1, usage(5))),
		imp:  tl(imp(call("resp_1", ""), ""), imp(tcall("c1"), ""), imp(tresult("c1"), ""), imp(call("", ""), ""), imp(usage(5), "")),
		want: "P1:1 P2:2 L3 I3 I4 I5", paired: 2,
	}, {
		name: "content: only the next imported group of the thread is compared",
		live: tl(lresp(1, call("", "")), lresp(1, tcall("c1")), lresp(1, usage(5)),
			lresp(2, call("", "")), lresp(2, msg("assistant", "b")), lresp(2, usage(6))),
		imp: tl(imp(call("", ""), ""), imp(tcall("c1"), ""), imp(usage(5), ""),
			imp(call("", ""), ""), imp(msg("assistant", "a"), ""), imp(usage(6), ""),
			imp(call("", ""), ""), imp(msg("assistant", "b"), ""), imp(usage(6), "")),
		want: "P1:1 P2:2 P3:3 L4 I4 L5 I5 L6 I6 I7 I8 I9", paired: 3,
	}, {
		name: "content: no exact key at all pairs the first group by reply and usage (Gemini)",
		live: tl(lresp(1, call("", "")), lresp(1, tcallArgs("read#1.0", "read", `{"b":1,"a":"x"}`)), lresp(1, usage(100)),
			lreq(2, synthetic(tresult("read#1.0"))), lresp(2, call("", "")), lresp(2, msg("assistant", "done")), lresp(2, usage(130))),
		imp: tl(imp(call("", ""), ""), imp(tcallArgs("read__c1", "read", `{"a":"x","b":1}`), ""), imp(usage(100), ""),
			imp(tresult("read__c1"), ""), imp(call("", ""), ""), imp(msg("assistant", "done"), ""), imp(usage(130), "")),
		want: "P1:1 P2:2 P3:3 P4:4 P5:5 P6:6 P7:7", paired: 7,
	}, {
		name: "content: a tool call pairs by name and canonical arguments only",
		live: tl(lresp(1, call("", "")), lresp(1, tcallArgs("read#1.0", "read", `{"a":"x"}`)), lresp(1, msg("assistant", "t")), lresp(1, usage(100))),
		imp:  tl(imp(call("", ""), ""), imp(tcallArgs("c1", "read", `{"a":"y"}`), ""), imp(msg("assistant", "t"), ""), imp(usage(100), "")),
		want: "L1 I1 L2 I2 L3 I3 L4 I4",
	}, {
		name: "content: the first group's usage must agree",
		live: tl(lresp(1, call("", "")), lresp(1, msg("assistant", "done")), lresp(1, usage(100))),
		imp:  tl(imp(call("", ""), ""), imp(msg("assistant", "done"), ""), imp(usage(101), "")),
		want: "L1 I1 L2 I2 L3 I3",
	}, {
		name: "content: the first group's place is found by its usage",
		live: tl(lresp(5, call("", "")), lresp(5, msg("assistant", "ok")), lresp(5, usage(300))),
		imp: tl(imp(call("", ""), ""), imp(msg("assistant", "ok"), ""), imp(usage(100), ""),
			imp(call("", ""), ""), imp(msg("assistant", "ok"), ""), imp(usage(300), "")),
		want: "I1 I2 I3 P1:4 P2:5 P3:6", paired: 3,
	}, {
		name: "content: groups before the thread's first exact pair pair backwards",
		live: tl(lresp(1, call("", "")), lresp(1, msg("assistant", "one")), lresp(1, usage(1)),
			lresp(2, call("", "")), lresp(2, msg("assistant", "two")), lresp(2, usage(2)),
			lresp(3, call("msg_3", "")), lresp(3, usage(3))),
		imp: tl(imp(call("", ""), ""), imp(msg("assistant", "zero"), ""), imp(usage(0), ""),
			imp(call("", ""), ""), imp(msg("assistant", "one"), ""), imp(usage(9), ""),
			imp(call("", ""), ""), imp(msg("assistant", "two"), ""), imp(usage(9), ""),
			imp(call("msg_3", ""), ""), imp(usage(3), "")),
		want: "I1 I2 I3 P1:4 P2:5 P3:6 P4:7 P5:8 P6:9 P7:10 P8:11", paired: 8,
	}, {
		name: "content: a long text in a blob pairs with the same text whole",
		live: tl(lresp(1, call("", "")), lresp(1, tcall("c1")), lresp(1, usage(5)),
			lresp(2, call("", "")), lresp(2, Event{Kind: KindMessage, Role: "assistant", Text: "cut", TextBlob: longSum}), lresp(2, usage(6))),
		imp: tl(imp(call("", ""), ""), imp(tcall("c1"), ""), imp(usage(5), ""),
			imp(call("", ""), ""), imp(msg("assistant", longText), ""), imp(usage(6), "")),
		want: "P1:1 P2:2 P3:3 P4:4 P5:5 P6:6", paired: 6,
	}, {
		name: "content: a reply of thinking alone has no key",
		live: tl(lresp(1, call("", "")), lresp(1, tcall("c1")), lresp(1, usage(5)), lresp(2, call("", "")), lresp(2, think("")), lresp(2, usage(6))),
		imp:  tl(imp(call("", ""), ""), imp(tcall("c1"), ""), imp(usage(5), ""), imp(call("", ""), ""), imp(think(""), ""), imp(usage(6), "")),
		want: "P1:1 P2:2 P3:3 L4 I4 L5 I5 L6 I6", paired: 3,
	}, {
		name: "content: a live group an exact key names elsewhere is not content's",
		live: tl(lresp(1, call("msg_1", "")), lresp(1, msg("assistant", "x")), lresp(1, usage(5)),
			lresp(2, call("msg_1", "")), lresp(2, msg("assistant", "x")), lresp(2, usage(5))),
		imp: tl(imp(call("msg_1", ""), ""), imp(msg("assistant", "x"), ""), imp(usage(5), ""),
			imp(call("", ""), ""), imp(msg("assistant", "x"), ""), imp(usage(5), "")),
		want: "P1:1 P2:2 P3:3 L4 I4 L5 I5 L6 I6", paired: 3,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			order, st := MergeOrder(tc.live, tc.imp)
			if got := orderString(order); got != tc.want {
				t.Errorf("order %s, want %s", got, tc.want)
			}
			if st.Paired != tc.paired || st.Ambiguous != tc.ambiguous {
				t.Errorf("paired %d, ambiguous %d; want %d, %d", st.Paired, st.Ambiguous, tc.paired, tc.ambiguous)
			}
			// Every event of each side is in the order exactly once.
			var ls, is []uint64
			for _, o := range order {
				if o.Live != 0 && o.Tag != OrderRemainder && !slices.Contains(ls, o.Live) {
					ls = append(ls, o.Live)
				}
				if o.Imp != 0 {
					is = append(is, o.Imp)
				}
			}
			if len(ls) != len(tc.live) || len(is) != len(tc.imp) {
				t.Errorf("the order holds %d live and %d imported events, the sides %d and %d", len(ls), len(is), len(tc.live), len(tc.imp))
			}
			view, _, err := MergeView("L", tc.live, "I", tc.imp, order)
			if err != nil {
				t.Fatal(err)
			}
			if len(view) != len(order) {
				t.Fatalf("view of %d events, order of %d", len(view), len(order))
			}
		})
	}
}

// Inside a gap the two sides' unpaired events merge by time, each in
// its own order, live first on a tie.
func TestMergeOrderGapTime(t *testing.T) {
	live := tl(lreq(1, Event{Kind: KindSystem, Text: "s", Time: 20}), lreq(1, Event{Kind: KindMessage, Role: "system", Text: "env", Time: 40}),
		lresp(1, Event{Kind: KindModelCall, Call: &Call{ResponseID: "m"}, Time: 50}), lresp(1, Event{Kind: KindUsage, Usage: &Usage{}, Time: 60}))
	imp := tl(imp(Event{Kind: KindRecord, Record: &Record{}, Time: 10}, ""), imp(Event{Kind: KindRecord, Record: &Record{}, Time: 40}, ""),
		imp(Event{Kind: KindRecord, Record: &Record{}, Time: 30}, ""), imp(Event{Kind: KindModelCall, Call: &Call{ResponseID: "m"}, Time: 55}, ""),
		imp(Event{Kind: KindUsage, Usage: &Usage{}, Time: 56}, ""))
	order, _ := MergeOrder(live, imp)
	if got, want := orderString(order), "I1 L1 L2 I2 I3 P3:4 P4:5"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// The view: the live side wins but for user messages, the loser's
// provenance is in Also, imported threads take the live thread of their
// first pair and the others the numbers after the live ones.
func TestMergeView(t *testing.T) {
	live := tl(lreq(1, msg("user", "<r>\nfix it")), lresp(1, call("msg_1", "")), lresp(1, usage(5)))
	imported := tl(imp(msg("user", "fix it"), ""), imp(Event{Kind: KindRecord, Record: &Record{Type: "x"}, Thread: 3}, ""),
		imp(call("msg_1", ""), ""), imp(usage(7), ""))
	for i := range imported {
		imported[i].UUID = fmt.Sprintf("u%d", i+1)
		if imported[i].Kind != KindRecord {
			imported[i].Thread = 2
		}
	}
	order, st := MergeOrder(live, imported)
	view, threads, err := MergeView("L", live, "I", imported, order)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range view {
		s := fmt.Sprintf("%d %s t%d %q %s", ev.Seq, ev.Kind, ev.Thread, ev.Text, ev.Prov.Side)
		if ev.UUID != "" {
			s += " " + ev.UUID
		}
		for _, a := range ev.Also {
			s += fmt.Sprintf(" also %s#%d/%s", a.Session, a.Seq, a.Prov.Side)
		}
		if ev.Usage != nil {
			s += fmt.Sprintf(" in=%d", ev.Usage.Input)
		}
		got = append(got, s)
	}
	// The record's thread has no pair: it goes at the start.
	want := []string{
		`1 record t2 "" import u2`,
		`2 message t1 "<r>" request`,
		`3 message t1 "fix it" import u1 also L#1/request`,
		`4 model_call t1 "" response u3 also I#3/import`,
		`5 usage t1 "" response u4 also I#4/import in=5`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("view:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if threads[2] != 1 || threads[3] != 2 {
		t.Errorf("threads %v, want 2→1, 3→2", threads)
	}
	ls := Session{ID: "L", Requests: 1, First: 10, Last: 30}
	is := Session{ID: "I", CWD: "/p", First: 5, Last: 40, Agents: []Agent{{Thread: 3, ID: "sub"}}}
	sum := MergeSummary(&ls, &is, view, threads, st)
	if sum.ID != "L" || sum.CWD != "/p" || sum.First != 5 || sum.Last != 40 || sum.Events != 5 || sum.Usage.Input != 5 ||
		sum.Requests != 1 || sum.Threads != 2 || sum.Agents[0].Thread != 2 || strings.Join(sum.Merged.Members, " ") != "L I" {
		t.Errorf("summary %+v", sum)
	}
	// A view of sides that changed since the order was computed is an
	// error, not a wrong timeline.
	if _, _, err := MergeView("L", live[:1], "I", imported, order); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("stale order: %v", err)
	}
}

func TestLiveSeqs(t *testing.T) {
	order := []OrderEntry{{OrderImport, 0, 1}, {OrderRemainder, 1, 0}, {OrderPair, 1, 2}, {OrderPair, 1, 3}, {OrderLive, 2, 0}, {OrderPair, 3, 4}}
	seqs := LiveSeqs(order)
	if seqs[1] != [2]uint64{2, 4} || seqs[2] != [2]uint64{5, 5} || seqs[3] != [2]uint64{6, 6} || len(seqs) != 3 {
		t.Errorf("LiveSeqs = %v", seqs)
	}
	tasks := []Task{{ID: "t", FirstSeq: 1, LastSeq: 3}}
	TranslateTasks(tasks, seqs)
	if tasks[0].FirstSeq != 2 || tasks[0].LastSeq != 6 {
		t.Errorf("task seqs %d..%d, want 2..6", tasks[0].FirstSeq, tasks[0].LastSeq)
	}
}

func TestOrderEncoding(t *testing.T) {
	order := []OrderEntry{{OrderLive, 1, 0}, {OrderPair, 300, 70000}, {OrderRemainder, 2, 0}, {OrderImport, 0, 5}}
	b := AppendOrder(nil, order)
	got, err := DecodeOrder(b)
	if err != nil || !slices.Equal(got, order) {
		t.Fatalf("DecodeOrder = %v, %v; want %v", got, err, order)
	}
	if _, err := DecodeOrder(append(b, 'X', 1, 1)); err == nil || !strings.Contains(err.Error(), "byte 15") {
		t.Errorf("an unknown tag: %v", err)
	}
	if _, err := DecodeOrder(b[:len(b)-1]); err == nil {
		t.Errorf("a cut entry decodes")
	}
}

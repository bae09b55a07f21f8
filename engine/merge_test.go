package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine/schema"
	"github.com/bbengine/bbengine/wal"
)

// claudePair scripts one Claude Code session both ways: the exchanges
// the proxy records (session header id) and the JSONL log Claude Code
// writes of the same calls, with the same message ids, request ids and
// tool ids. The first request carries a system reminder in front of
// the prompt, as Claude Code sends it; the log has the prompt alone.
func claudePair(t *testing.T, id string, n int) ([]fx, string) {
	t.Helper()
	cv := &conversation{session: id, system: "You are Claude Code.", model: "claude-sonnet-4-5"}
	prompt := "fix the failing test in " + id
	cv.user([]any{obj{"type": "text", "text": "<system-reminder>\nthe date is today\n</system-reminder>"}, obj{"type": "text", "text": prompt}})
	var (
		live  []fx
		lines []string
	)
	ts := func(i int) string {
		return time.Unix(0, int64(i)*int64(time.Millisecond)).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	line := func(v obj) {
		v["sessionId"] = id
		v["timestamp"] = ts(len(lines) + 1)
		v["uuid"] = fmt.Sprintf("uuid-%s-%d", id, len(lines))
		v["cwd"] = "/work/project"
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	line(obj{"type": "user", "message": obj{"role": "user", "content": prompt}})
	for i := 0; i < n; i++ {
		tool := fmt.Sprintf("toolu_%s_%d", id, i)
		r := anthropicReply{id: fmt.Sprintf("msg_%s_%d", id, i), thinking: fmt.Sprintf("step %d: run the tests", i),
			text:  fmt.Sprintf("Running step %d.", i),
			tools: []obj{{"id": tool, "name": "Bash", "input": obj{"command": fmt.Sprintf("go test ./... -run Test%d", i)}}},
			in:    100 + i, out: 20 + i, cache: 1000}
		if i == n-1 {
			r.tools, r.text = nil, "All tests pass now."
		}
		up := fmt.Sprintf("req_up_%s_%d", id, i)
		live = append(live, fx{session: id, req: cv.request(), resp: r.stream(cv.model),
			respHeaders: exchange.Headers{"Request-Id": {up}}})
		cv.assistant(r)
		stop := "end_turn"
		if len(r.tools) > 0 {
			stop = "tool_use"
		}
		line(obj{"type": "assistant", "requestId": up, "message": obj{"id": r.id, "type": "message", "role": "assistant",
			"model": cv.model, "content": r.content(), "stop_reason": stop,
			"usage": obj{"input_tokens": r.in, "cache_read_input_tokens": r.cache, "output_tokens": r.out}}})
		if len(r.tools) > 0 {
			out := fmt.Sprintf("ok  \tpkg\t0.%03ds", i)
			cv.user([]any{obj{"type": "tool_result", "tool_use_id": tool, "content": out}})
			line(obj{"type": "user", "message": obj{"role": "user", "content": []any{obj{"type": "tool_result", "tool_use_id": tool, "content": out}}},
				"toolUseResult": obj{"stdout": out}})
		}
	}
	path := filepath.Join(t.TempDir(), id+".jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return live, path
}

// frameEnds returns the offset after every frame of the WAL.
func frameEnds(t *testing.T, log *wal.Log) []uint64 {
	t.Helper()
	r := log.NewReader()
	defer r.Close()
	var out []uint64
	for r.Next() {
		out = append(out, r.Offset())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	end, err := log.End()
	if err != nil {
		t.Fatal(err)
	}
	return append(out[1:], end)
}

// TestMergeRebuildIdentical derives a proxied session and its imported
// log in every order (the import after, before, in the middle of the
// exchanges), stopping at every frame boundary, and checks that the
// merged session reads the same each time and that a rebuild gives the
// same bytes.
func TestMergeRebuildIdentical(t *testing.T) {
	const id = "c94ff1b8-1024-4d5a-9e67-ae823d71589d"
	var views []string
	for _, order := range []string{"import-after", "import-before", "interleaved"} {
		t.Run(order, func(t *testing.T) {
			dir, log := newData(t)
			e := open(t, dir, log, &Options{BatchBytes: 2048})
			live, path := claudePair(t, id, 3)
			fi, err := ReadImport("claude", path, nil)
			if err != nil {
				t.Fatal(err)
			}
			var c clock
			xid := uint64(0)
			appendImport := func(recs []exchange.Import) {
				if err := AppendImport(e.WAL(), recs); err != nil {
					t.Fatal(err)
				}
			}
			switch order {
			case "import-after":
				xid = writeWAL(t, log, &c, xid, live)
				appendImport(fi.Records)
			case "import-before":
				appendImport(fi.Records)
				xid = writeWAL(t, log, &c, xid, live)
			case "interleaved":
				xid = writeWAL(t, log, &c, xid, live[:1])
				appendImport(fi.Records[:3])
				xid = writeWAL(t, log, &c, xid, live[1:2])
				appendImport(fi.Records[3:])
				writeWAL(t, log, &c, xid, live[2:])
			}
			for _, end := range frameEnds(t, log) {
				if _, err := e.CatchUpTo(context.Background(), end); err != nil {
					t.Fatal(err)
				}
			}
			catchUp(t, e)
			views = append(views, checkMerged(t, e, id))
			before := dump(t, e)
			// Memory derived again alone (rebuild --derived) is the
			// same too.
			if _, err := e.RebuildMemory(context.Background()); err != nil {
				t.Fatal(err)
			}
			if after := dump(t, e); after != before {
				t.Fatalf("RebuildMemory differs:\n%s", diffLines(before, after))
			}
			sameAfterRebuild(t, e, before, "rebuild differs from the incremental merge")
			if got := checkMerged(t, e, id); got != views[len(views)-1] {
				t.Fatalf("the view changed with the rebuild:\n%s", diffLines(views[len(views)-1], got))
			}
		})
	}
	for i := 1; i < len(views); i++ {
		if views[i] != views[0] {
			t.Errorf("view %d differs from the first:\n%s", i, diffLines(views[0], views[i]))
		}
	}
}

// checkMerged checks the merged session of claudePair(id, 3) and
// returns its view as text.
func checkMerged(t *testing.T, e *Engine, id string) string {
	t.Helper()
	ss, err := e.Sessions(SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].ID != id || ss[0].Merged == nil {
		t.Fatalf("sessions: %+v, want %s once, merged", ss, id)
	}
	s := ss[0]
	if got, want := strings.Join(s.Merged.Members, " "), id+" claude:"+id; got != want {
		t.Errorf("members %q, want %q", got, want)
	}
	if s.CWD != "/work/project" || s.Requests != 3 || s.Usage.Input != 3303 || s.Usage.Output != 63 || s.Usage.CacheRead != 3000 {
		t.Errorf("summary: cwd %q, %d requests, usage %+v", s.CWD, s.Requests, s.Usage)
	}
	if raw, err := e.Sessions(SessionFilter{Unmerged: true}); err != nil || len(raw) != 2 {
		t.Errorf("unmerged sessions: %d, %v; want 2", len(raw), err)
	}
	for _, name := range []string{"claude:" + id, id[:8]} {
		if r, err := e.Session(name); err != nil || r.ID != id {
			t.Errorf("Session(%q) = %s, %v; want %s", name, r.ID, err, id)
		}
	}
	evs, err := e.Events("claude:"+id, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// 18 live events, 17 imported: 17 pairs, the system prompt, and
	// the reminder cut off in front of the prompt.
	var b strings.Builder
	also, tools := 0, map[string]int{}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d", i+1, ev.Seq)
		}
		if len(ev.Also) > 0 {
			also++
		}
		if ev.Kind == KindToolCall || ev.Kind == KindToolResult {
			tools[string(ev.Kind)+" "+ev.Tool.ID]++
		}
		other := ""
		if len(ev.Also) > 0 {
			other = fmt.Sprintf(" also=%s#%d", ev.Also[0].Session, ev.Also[0].Seq)
		}
		fmt.Fprintf(&b, "%d %s %s %s %q%s\n", ev.Seq, ev.Kind, ev.Role, ev.Meta, ev.Text, other)
	}
	// An exchange's seqs read as the view's.
	for _, ev := range evs {
		if ev.Prov.Side != "response" {
			continue
		}
		x, err := e.Exchange(ev.Prov.Exchange)
		if err != nil || ev.Seq < x.FirstSeq || ev.Seq > x.LastSeq {
			t.Errorf("event %d (%s) of exchange %d outside its seqs %d..%d (%v)", ev.Seq, ev.Kind, ev.Prov.Exchange, x.FirstSeq, x.LastSeq, err)
		}
	}
	if len(evs) != 19 || also != 17 {
		t.Errorf("%d events, %d with Also; want 19, 17:\n%s", len(evs), also, b.String())
	}
	for k, n := range tools {
		if n != 1 {
			t.Errorf("%s appears %d times", k, n)
		}
	}
	if len(tools) != 4 {
		t.Errorf("tool events %v, want 2 calls and 2 results", tools)
	}
	if !strings.Contains(b.String(), "user meta \"<system-reminder>") || strings.Count(b.String(), "fix the failing test") != 1 {
		t.Errorf("the prompt is not once with its reminder apart:\n%s", b.String())
	}
	if raw, err := e.Events("claude:"+id, EventFilter{Raw: true}); err != nil || len(raw) != 17 {
		t.Errorf("raw import events: %d, %v; want 17", len(raw), err)
	}
	if after, err := e.Events(id, EventFilter{After: 17}); err != nil || len(after) != 2 || after[0].Seq != 18 {
		t.Errorf("events after 17: %d, %v", len(after), err)
	}
	// Memory: derived once, from the view, under the merged id.
	if arts, err := e.Artifacts(id); err != nil || len(arts) == 0 {
		t.Errorf("artifacts of the merged session: %d, %v", len(arts), err)
	}
	if arts, err := e.Artifacts("claude:" + id); err != nil || len(arts) != 0 {
		t.Errorf("artifacts of the absorbed import: %d, %v; want none", len(arts), err)
	}
	states, err := e.MemoryStates()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range states {
		if st.Session != id && len(st.Artifacts) > 0 {
			t.Errorf("session %s has %d artifacts", st.Session, len(st.Artifacts))
		}
		if st.Session == id && (st.Events != 19 || st.Project == "") {
			t.Errorf("memory of the merged session: %d events, project %q; want 19 and the log's", st.Events, st.Project)
		}
	}
	// Retention pins of either id keep both sides' frames.
	for _, name := range []string{id, "claude:" + id} {
		ranges, err := e.pinRanges(name)
		if err != nil || len(ranges) != 2 {
			t.Errorf("pin ranges of %s: %v, %v; want both sides", name, ranges, err)
		}
	}
	var calls int
	err = e.CallUsages(context.Background(), SessionFilter{}, func(s *Session, cs []CallUsage) error {
		calls += len(cs)
		for _, c := range cs {
			if c.Model != "claude-sonnet-4-5" {
				t.Errorf("call %+v: model %q", c, c.Model)
			}
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("usage counted %d calls (%v), want 3", calls, err)
	}
	return b.String()
}

// A live session that sent two session ids of one family stays apart
// from both logs: which one it is cannot be told.
func TestMergeAmbiguousLive(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	live, path := claudePair(t, "s1", 2)
	_, path2 := claudePair(t, "s2", 2)
	var c clock
	// The second exchange names s2 in its header too.
	live[1].reqHeaders = exchange.Headers{"X-Claude-Code-Session-Id": {"s2"}}
	writeWAL(t, log, &c, 0, live)
	for _, p := range []string{path, path2} {
		importPath(t, e, "claude", p)
	}
	ss, err := e.Sessions(SessionFilter{})
	if err != nil || len(ss) != 3 {
		t.Fatalf("sessions %d, %v; want 3 apart", len(ss), err)
	}
	for _, s := range ss {
		if s.Merged != nil {
			t.Errorf("session %s merged with %v", s.ID, s.Merged.Members)
		}
	}
	if n := countPrefix(t, e, []byte{schema.PrefixMerge}); n != 0 {
		t.Errorf("%d merge keys left", n)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs with an ambiguous join")
}

func countPrefix(t *testing.T, e *Engine, p []byte) int {
	t.Helper()
	n := 0
	if err := e.scan(p, func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// mergeFixture derives claudePair(id, 3): the exchanges, then the log.
func mergeFixture(t *testing.T, opts *Options, id string, edit func(live []fx, path string)) (*Engine, string, *wal.Log) {
	t.Helper()
	dir, log := newData(t)
	e := open(t, dir, log, opts)
	live, path := claudePair(t, id, 3)
	if edit != nil {
		edit(live, path)
	}
	var c clock
	writeWAL(t, log, &c, 0, live)
	catchUp(t, e)
	fi, err := ReadImport("claude", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendImport(e.WAL(), fi.Records); err != nil {
		t.Fatal(err)
	}
	return e, dir, log
}

// A pass that cannot write its merges (the disk full: Options.Hold)
// leaves the sides committed with their durable mark and no merge
// record; readers see the sides apart, and the next pass merges them
// as a rebuild does.
func TestMergeHeldWrite(t *testing.T) {
	const id = "held-merge-1"
	// Held once the import session is committed: after the sides'
	// commit, before the merges'.
	var (
		armed atomic.Bool
		eng   atomic.Pointer[Engine]
	)
	hold := func() bool {
		e := eng.Load()
		if !armed.Load() || e == nil {
			return false
		}
		_, closer, err := e.db.Get(schema.SessionKey(nil, "claude:"+id))
		if err == nil {
			closer.Close()
		}
		return err == nil
	}
	e, _, _ := mergeFixture(t, &Options{Hold: hold}, id, nil)
	eng.Store(e)
	armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := e.CatchUp(ctx)
	cancel()
	if err == nil {
		t.Fatal("the pass wrote its merges while held")
	}
	armed.Store(false)
	if n := countPrefix(t, e, schema.MergePendingKey("")); n != 1 {
		t.Fatalf("%d merge marks after the held pass, want 1 (durable with the sides)", n)
	}
	if n := countPrefix(t, e, []byte{schema.PrefixMerge, schema.MergeHeadKey}); n != 0 {
		t.Fatalf("%d merge records written by the held pass", n)
	}
	if ss, err := e.Sessions(SessionFilter{}); err != nil || len(ss) != 2 {
		t.Fatalf("sessions before the merge: %d, %v; want the 2 sides", len(ss), err)
	}
	catchUp(t, e)
	checkMerged(t, e, id)
	if n := countPrefix(t, e, schema.MergePendingKey("")); n != 0 {
		t.Fatalf("%d merge marks left", n)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs after a held merge")
}

// A merge record that does not decode is an error naming its key, and
// rebuild derives it again.
func TestMergeCorruptRecord(t *testing.T) {
	const id = "corrupt-merge-1"
	var logged atomic.Value
	logged.Store("")
	logf := func(f string, a ...any) { logged.Store(logged.Load().(string) + fmt.Sprintf(f, a...) + "\n") }
	e, _, _ := mergeFixture(t, &Options{Logf: logf}, id, nil)
	catchUp(t, e)
	before := dump(t, e)
	s, err := e.rawSession(id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  []byte
		read func() error
		want string
	}{
		{schema.MergeOrderKey(s.Ordinal), func() error { _, err := e.Events(id, EventFilter{}); return err }, "does not decode"},
		{schema.MergeHeadKeyOf(s.Ordinal), func() error { _, err := e.Sessions(SessionFilter{}); return err }, "does not decode"},
	} {
		if err := e.db.Set(tc.key, []byte("\xffgarbage"), nil); err != nil {
			t.Fatal(err)
		}
		err := tc.read()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprintf("%x", tc.key)) ||
			!strings.Contains(err.Error(), "rebuild") {
			t.Errorf("corrupt %x: %v", tc.key, err)
		}
		sameAfterRebuild(t, e, before, "rebuild does not repair a corrupt merge record")
	}
	// Derivation over a corrupt record derives it again.
	if err := e.db.Set(schema.MergeHeadKeyOf(s.Ordinal), []byte("\xffgarbage"), nil); err != nil {
		t.Fatal(err)
	}
	live, _ := claudePair(t, id, 3)
	var c clock
	c.tick(1e12)
	writeWAL(t, e.log, &c, 100, live[2:]) // the last call again
	catchUp(t, e)
	if ss, err := e.Sessions(SessionFilter{}); err != nil || len(ss) != 1 || ss[0].Merged == nil {
		t.Fatalf("after a pass over a corrupt record: %d sessions, %v", len(ss), err)
	}
	if l := logged.Load().(string); !strings.Contains(l, "does not decode") || !strings.Contains(l, fmt.Sprintf("%x", schema.MergeHeadKeyOf(s.Ordinal))) {
		t.Errorf("the pass did not say it met a corrupt record: %q", l)
	}
	sameAfterRebuild(t, e, dump(t, e), "a pass over a corrupt record differs from a rebuild")
}

// A secret in a request header and in the log is in no merge or join
// key or value.
func TestMergeSecretsAtRest(t *testing.T) {
	const id = "secret-merge-1"
	key := "sk-ant-api03-" + strings.Repeat("b", 40)
	e, _, _ := mergeFixture(t, nil, id, func(live []fx, path string) {
		for i := range live {
			live[i].reqHeaders = exchange.Headers{"X-Debug-Token": {key}}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.ReplaceAll(string(b), "/work/project", "/work/"+key))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	catchUp(t, e)
	if s, err := e.Session(id); err != nil || s.Merged == nil {
		t.Fatalf("not merged: %+v, %v", s, err)
	}
	n := 0
	for _, p := range []byte{schema.PrefixMerge, schema.PrefixJoin} {
		err := e.scan([]byte{p}, func(k, v []byte) error {
			n++
			if strings.Contains(string(k), key) || strings.Contains(string(v), key) {
				t.Errorf("the secret is in %q", k)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		t.Fatal("no merge or join keys")
	}
}

// Only part of a session proxied (the proxy started mid-session): the
// calls the log alone has count once each, as the paired ones do.
func TestMergePartial(t *testing.T) {
	const id = "partial-merge-1"
	for _, proxied := range []string{"first", "last"} {
		t.Run(proxied, func(t *testing.T) {
			dir, log := newData(t)
			e := open(t, dir, log, &Options{BatchBytes: 2048})
			live, path := claudePair(t, id, 3)
			if proxied == "first" {
				live = live[:1]
			} else {
				live = live[2:]
			}
			var c clock
			writeWAL(t, log, &c, 0, live)
			importPath(t, e, "claude", path)
			s, err := e.Session(id)
			if err != nil || s.Merged == nil {
				t.Fatalf("not merged: %+v, %v", s, err)
			}
			if s.Requests != 3 || s.Usage.Output != 63 {
				t.Errorf("%d requests, output %d; want 3 calls once (63)", s.Requests, s.Usage.Output)
			}
			calls := 0
			err = e.CallUsages(context.Background(), SessionFilter{}, func(_ *Session, cs []CallUsage) error {
				calls += len(cs)
				return nil
			})
			if err != nil || calls != 3 {
				t.Errorf("usage counted %d calls, want 3", calls)
			}
			evs, err := e.Events(id, EventFilter{})
			if err != nil {
				t.Fatal(err)
			}
			// Each fact once: the calls, and the history the first
			// proxied request re-sent.
			ids := map[string]int{}
			for _, ev := range evs {
				switch ev.Kind {
				case KindModelCall:
					ids[ev.Call.ResponseID]++
				case KindToolCall, KindToolResult:
					ids[string(ev.Kind)+" "+ev.Tool.ID]++
				case KindMessage, KindThinking:
					if ev.Meta == "" {
						ids[string(ev.Kind)+" "+ev.Role+" "+ev.Text]++
					}
				}
			}
			if len(ids) != 3+4+4+3 {
				t.Errorf("facts %v, want 3 calls, 2 tool calls and results, the prompt, 3 texts, 3 thinkings", ids)
			}
			for k, n := range ids {
				if n != 1 {
					t.Errorf("call %s appears %d times", k, n)
				}
			}
			sameAfterRebuild(t, e, dump(t, e), "rebuild differs for a partly proxied session")
		})
	}
}

// A session bbengine run names, carrying Claude Code's header, merges
// with the log of the Claude Code session the header names; a second
// agent id that no imported log has does not keep them apart.
func TestMergeRunSession(t *testing.T) {
	const id = "run-merge-claude-1"
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	live, path := claudePair(t, id, 2)
	for i := range live {
		live[i].session = "bb-run-0001"
		live[i].reqHeaders = exchange.Headers{"X-Claude-Code-Session-Id": {id}}
	}
	var c clock
	writeWAL(t, log, &c, 0, live)
	importPath(t, e, "claude", path)
	s, err := e.Session("claude:" + id)
	if err != nil || s.ID != "bb-run-0001" || s.Merged == nil {
		t.Fatalf("Session(claude:%s) = %s (merged %v), %v; want bb-run-0001", id, s.ID, s.Merged, err)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs for a run session")
}

// The same session id on both sides but not one fact in common: left
// apart.
func TestMergeNothingShared(t *testing.T) {
	const id = "nothing-shared-1"
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	live, _ := claudePair(t, "other-session", 2)
	_, path := claudePair(t, id, 2)
	for i := range live {
		live[i].session = id
	}
	var c clock
	writeWAL(t, log, &c, 0, live)
	importPath(t, e, "claude", path)
	ss, err := e.Sessions(SessionFilter{})
	if err != nil || len(ss) != 2 || ss[0].Merged != nil || ss[1].Merged != nil {
		t.Fatalf("sessions %d (%v): want the two apart", len(ss), err)
	}
	if n := countPrefix(t, e, []byte{schema.PrefixMerge}); n != 0 {
		t.Errorf("%d merge keys", n)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs with nothing shared")
}

// Importing one log into a store of many unrelated sessions, proxied and
// imported, merges again its own group only: nothing grows with the
// sessions that are not its.
func TestMergeCostOneGroup(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	var c clock
	xid := uint64(0)
	const n = 60
	for i := range n {
		live, path := claudePair(t, fmt.Sprintf("unrelated-%03d", i), 1)
		xid = writeWAL(t, log, &c, xid, live)
		if i%2 == 0 {
			// Half of them imported too, under other ids.
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			other := filepath.Join(t.TempDir(), fmt.Sprintf("other-%03d.jsonl", i))
			b = []byte(strings.ReplaceAll(string(b), fmt.Sprintf("unrelated-%03d", i), fmt.Sprintf("other-%03d", i)))
			if err := os.WriteFile(other, b, 0o600); err != nil {
				t.Fatal(err)
			}
			importPath(t, e, "claude", other)
		}
	}
	const id = "cost-merge-1"
	live, path := claudePair(t, id, 2)
	writeWAL(t, log, &c, xid, live)
	catchUp(t, e)
	fi, err := ReadImport("claude", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendImport(e.WAL(), fi.Records); err != nil {
		t.Fatal(err)
	}
	p := catchUp(t, e)
	if p.Merges != 1 {
		t.Errorf("the import derived %d merge groups again, want its own only", p.Merges)
	}
	if s, err := e.Session(id); err != nil || s.Merged == nil {
		t.Fatalf("not merged: %v", err)
	}
	if ss, err := e.Sessions(SessionFilter{}); err != nil || len(ss) != n+n/2+1 {
		t.Errorf("%d sessions (%v), want %d", len(ss), err, n+n/2+1)
	}
}

// Join ids are checked as session ids are: a header id too long or
// holding control characters writes no join key. One holding a NUL
// would read as a key of the id before the NUL (a join key's id ends at
// one), so a proxied session that sent the session's own id would no
// longer be the only one to name its log, and would stay apart from it.
func TestMergeJoinIDsChecked(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	long := strings.Repeat("run-", exchange.MaxNoteID/4+1)
	live, path := claudePair(t, "s9", 2)
	// Two other proxied sessions, whose first requests name a bad id.
	all := live
	for i, bad := range []string{"s9\x00x", long} {
		other, _ := claudePair(t, fmt.Sprintf("other-%d", i), 1)
		other[0].session = fmt.Sprintf("bb-run-%04d", i)
		other[0].reqHeaders = exchange.Headers{"X-Claude-Code-Session-Id": {bad}}
		all = append(all, other...)
	}
	var c clock
	writeWAL(t, log, &c, 0, all)
	catchUp(t, e)
	for _, id := range []string{"claude:" + long, "claude:s9\x00x"} {
		if n := countPrefix(t, e, schema.JoinPrefix(id)); n != 0 {
			t.Errorf("%d join keys for %.20q…", n, id)
		}
	}
	if n := countPrefix(t, e, schema.JoinPrefix("claude:s9")); n != 1 {
		t.Errorf("%d join keys for claude:s9, want 1", n)
	}
	importPath(t, e, "claude", path)
	s, err := e.Session("claude:s9")
	if err != nil || s.Merged == nil {
		t.Fatalf("Session(claude:s9) = %s (merged %v), %v; want merged with its proxied session", s.ID, s.Merged, err)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs with ids that cannot join")
}

package engine

import (
	"fmt"
	"strings"
	"testing"
)

// kinds summarizes events as "kind[:detail]@thread" for the checks below.
func summary(evs []Event) []string {
	var out []string
	for _, ev := range evs {
		s := string(ev.Kind)
		switch ev.Kind {
		case KindMessage:
			s += ":" + ev.Role
		case KindRewrite:
			s += ":" + ev.Rewrite.Kind
		case KindToolCall, KindToolResult:
			s += ":" + ev.Tool.Name
		case KindError:
			s += fmt.Sprintf(":%d", ev.Error.Status)
		}
		out = append(out, fmt.Sprintf("%s@%d", s, ev.Thread))
	}
	return out
}

func countText(evs []Event, kind Kind, sub string) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == kind && strings.Contains(ev.Text, sub) {
			n++
		}
	}
	return n
}

func only(t *testing.T, ss []Session, evs map[string][]Event) (Session, []Event) {
	t.Helper()
	if len(ss) != 1 {
		t.Fatalf("%d sessions, want 1", len(ss))
	}
	return ss[0], evs[ss[0].ID]
}

func TestDiffToolLoop(t *testing.T) {
	_, ss, all, _ := timeline(t, "anthropic-tool-loop")
	s, evs := only(t, ss, all)
	if s.Threads != 2 || s.Requests != 4 || len(s.Models) != 2 {
		t.Errorf("session: threads %d requests %d models %v", s.Threads, s.Requests, s.Models)
	}
	calls := map[string]int{}
	results := map[string]*Event{}
	for i, ev := range evs {
		switch ev.Kind {
		case KindToolCall:
			calls[ev.Tool.ID]++
		case KindToolResult:
			results[ev.Tool.ID] = &evs[i]
		}
	}
	if len(calls) != 3 || len(results) != 3 {
		t.Fatalf("calls %v, results %d", calls, len(results))
	}
	for id, n := range calls {
		if n != 1 || results[id] == nil {
			t.Errorf("call %s seen %d times, result %v", id, n, results[id] != nil)
		}
	}
	if r := results["toolu_0161RST3BmLyzdrMsQpfdLVg"]; r == nil || !r.Tool.IsError || r.Tool.Name != "Grep" {
		t.Errorf("Grep result %+v", r)
	}
	// The two parallel calls come from one response.
	var ex []uint64
	for _, ev := range evs {
		if ev.Kind == KindToolCall && (ev.Tool.Name == "Read" || ev.Tool.Name == "Grep") {
			ex = append(ex, ev.Prov.Exchange)
		}
	}
	if len(ex) != 2 || ex[0] != ex[1] {
		t.Errorf("parallel calls from exchanges %v", ex)
	}
	if n := countText(evs, KindMessage, "TestCartTotal started failing"); n != 2 { // thread 1, and the side request's copy in thread 2
		t.Errorf("the prompt appears in %d messages, want 2 (main and side thread)", n)
	}
	for _, ev := range evs {
		if ev.Thread == 2 && ev.Prov.Exchange != evs[len(evs)-1].Prov.Exchange-2 {
			t.Errorf("thread 2 event %d from exchange %d, want only the side request", ev.Seq, ev.Prov.Exchange)
		}
	}
	if evs[0].Kind != KindSystem || s.Usage.Output != 80+14+95+140 {
		t.Errorf("first event %s, output tokens %d", evs[0].Kind, s.Usage.Output)
	}
}

func TestDiffRewrites(t *testing.T) {
	_, ss, all, _ := timeline(t, "anthropic-compaction")
	_, evs := only(t, ss, all)
	var rw []string
	for _, ev := range evs {
		if ev.Kind == KindRewrite {
			rw = append(rw, fmt.Sprintf("%s from=%d thread=%d kept=%d dropped=%d", ev.Rewrite.Kind, ev.Rewrite.From, ev.Thread, ev.Rewrite.Kept, ev.Rewrite.Dropped))
		}
	}
	want := []string{"compaction from=1 thread=1 kept=0 dropped=6", "fork from=1 thread=2 kept=3 dropped=2"}
	if strings.Join(rw, "; ") != strings.Join(want, "; ") {
		t.Errorf("rewrites:\n got %q\nwant %q", rw, want)
	}
	// The retried request (529, then the same body) adds nothing twice.
	if n := countText(evs, KindMessage, "Add a test for it as well."); n != 1 {
		t.Errorf("the retried message appears %d times", n)
	}
	if n := countText(evs, KindMessage, "What does the retry middleware"); n != 1 {
		t.Errorf("the first prompt appears %d times after compaction", n)
	}
	got := strings.Join(summary(evs), " ")
	if !strings.Contains(got, "error:529@1") {
		t.Errorf("no 529 error event: %s", got)
	}
}

func TestDiffErrors(t *testing.T) {
	_, ss, all, _ := timeline(t, "anthropic-errors")
	s, evs := only(t, ss, all)
	got := strings.Join(summary(evs), " ")
	for _, w := range []string{"error:200@1", "rewrite:retry@1", "interruption@1", "rewrite:drop@1", "error:400@1"} {
		if !strings.Contains(got, w) {
			t.Errorf("no %s in %s", w, got)
		}
	}
	var partial, interrupted int
	for _, ev := range evs {
		if ev.Kind == KindMessage && ev.Role == "assistant" && ev.Partial {
			partial++
		}
		if ev.Kind == KindInterruption && strings.Contains(ev.Text, "client went away") {
			interrupted++
		}
	}
	if partial != 2 || interrupted != 1 {
		t.Errorf("%d partial outputs (want 2: the error-cut stream and the abandoned one), %d client interruptions", partial, interrupted)
	}
	// Compressed responses (br JSON, gzip SSE, zstd SSE) are decoded.
	for _, w := range []string{`"isNewTopic": false`, "each in its own transaction", "no `down` command"} {
		if countText(evs, KindMessage, w) != 1 {
			t.Errorf("no assistant message with %q", w)
		}
	}
	if s.Errors != 2 {
		t.Errorf("session errors %d, want 2", s.Errors)
	}
}

func TestDiffInterleaved(t *testing.T) {
	_, ss, all, _ := timeline(t, "interleaved")
	if len(ss) != 2 {
		t.Fatalf("%d sessions", len(ss))
	}
	for _, s := range ss {
		got := strings.Join(summary(all[s.ID]), " ")
		want := "system@1 message:user@1 model_call@1 message:assistant@1 tool_call:%s@1 usage@1 tool_result:%s@1 model_call@1 message:assistant@1 usage@1"
		tool := "Bash"
		if strings.Contains(got, "Read") {
			tool = "Read"
		}
		if got != fmt.Sprintf(want, tool, tool) {
			t.Errorf("session %s:\n got %s\nwant %s", s.ID, got, fmt.Sprintf(want, tool, tool))
		}
	}
}

func TestDiffGemini(t *testing.T) {
	_, ss, all, _ := timeline(t, "gemini")
	s, evs := only(t, ss, all)
	var call, result *Event
	for i := range evs {
		switch evs[i].Kind {
		case KindToolCall:
			call = &evs[i]
		case KindToolResult:
			result = &evs[i]
		}
	}
	if call == nil || result == nil || result.Tool.ID != call.Tool.ID || !call.Tool.SyntheticID || call.Tool.Name != "read_file" {
		t.Fatalf("call %+v result %+v", call, result)
	}
	if s.Usage.Reasoning != 68 || s.Models[0].Model != "gemini-2.5-pro" || s.Tasks[0].ID != "task-7" {
		t.Errorf("usage %+v models %+v tasks %+v", s.Usage, s.Models, s.Tasks)
	}
}

func TestDiffOpenAI(t *testing.T) {
	_, ss, all, _ := timeline(t, "openai-chat")
	s, evs := only(t, ss, all)
	want := "system@1 message:user@1 model_call@1 tool_call:read_file@1 tool_call:search_code@1 usage@1 " +
		"tool_result:read_file@1 tool_result:search_code@1 model_call@1 message:assistant@1 usage@1 " +
		"message:user@1 model_call@1 message:assistant@1 usage@1"
	if got := strings.Join(summary(evs), " "); got != want {
		t.Errorf("chat:\n got %s\nwant %s", got, want)
	}
	if s.Agent != "openai-sdk" || s.Usage.Reasoning != 128 || s.Usage.CacheRead != 1024+1280+1408 || s.Threads != 1 {
		t.Errorf("chat session %+v", s)
	}

	_, ss, all, _ = timeline(t, "openai-responses")
	s, evs = only(t, ss, all)
	want = "system@1 message:user@1 model_call@1 thinking@1 tool_call:shell@1 usage@1 " +
		"tool_result:shell@1 model_call@1 message:assistant@1 usage@1"
	if got := strings.Join(summary(evs), " "); got != want {
		t.Errorf("responses:\n got %s\nwant %s", got, want)
	}
	if s.Agent != "codex" || s.Threads != 1 || s.Requests != 2 {
		t.Errorf("responses session %+v", s)
	}
}

package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
)

// TestMergedSurfaces records a Claude Code call through a running proxy,
// imports the log of the same session while the proxy holds the
// directory, and checks that the service through the proxy (api.Remote)
// and in process (api.Local, the proxy stopped) answer alike about the
// merged session: listed once, either id resolving to it, one timeline,
// the sides apart on request.
func TestMergedSurfaces(t *testing.T) {
	const sid = "5e3c2f10-0000-4000-8000-merged000001"
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_merged_1")
		io.WriteString(w, `{"id":"msg_merged_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",`+
			`"content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3}}`)
	}))
	defer fake.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var stdout, stderr syncBuffer
	go func() {
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": fake.URL}}, Shutdown: 5 * time.Second}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("proxy stopped: %v\n%s", err, stderr.String())
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
	}
	defer stop()

	req, err := http.NewRequest("POST", "http://"+addr+"/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"say hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "claude-cli/2.1.330 (external, cli)")
	req.Header.Set("X-Claude-Code-Session-Id", sid)
	req.Header.Set("X-Api-Key", "sk-ant-api03-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("proxy answered %s", resp.Status)
	}

	logDir := t.TempDir()
	lines := []string{
		`{"type":"user","uuid":"u1","sessionId":"` + sid + `","timestamp":"2026-11-27T10:00:00.000Z","cwd":"/work/p","message":{"role":"user","content":"say hello"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"` + sid + `","timestamp":"2026-11-27T10:00:01.000Z","cwd":"/work/p","requestId":"req_merged_1",` +
			`"message":{"id":"msg_merged_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3}}}`,
	}
	if err := os.WriteFile(filepath.Join(logDir, sid+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := run(t, "--dir", dir, "import", "claude", logDir); code != 0 || !strings.Contains(errs, "merged 1 sessions") {
		t.Fatalf("import through the proxy: exit %d\n%s%s", code, out, errs)
	}

	remote := api.Dial(dir)
	if remote == nil {
		t.Fatal("no running proxy in the lock file")
	}
	want := mergedAnswers(t, remote, sid)
	stop()
	local, closeLocal, err := api.OpenLocal(context.Background(), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLocal()
	if got := mergedAnswers(t, local, sid); !reflect.DeepEqual(got, want) {
		t.Errorf("api.Local answers\n%s\napi.Remote\n%s", got, want)
	}
	closeLocal()

	// show --raw prints the side its id names, as derived.
	for name, side := range map[string]string{sid: "request", "claude:" + sid: "import", "claude:" + sid[:8]: "import"} {
		out, errs, code := run(t, "--dir", dir, "show", name, "--raw", "--format", "json")
		var v struct {
			Session engine.Session `json:"session"`
			Events  []engine.Event `json:"events"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Events) != 4 || v.Events[0].Prov.Side != side || v.Session.Merged != nil {
			t.Errorf("show %s --raw: exit %d, %d events, session %+v\n%s", name, code, len(v.Events), v.Session, errs)
		}
	}
}

// mergedAnswers asks s about the merged session sid, checks the answers
// and returns them as JSON.
func mergedAnswers(t *testing.T, s api.Service, sid string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ask := func(name string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(v)
		out[name] = string(b)
	}
	list, err := s.Sessions(api.SessionsRequest{})
	ask("sessions", list, err)
	if len(list) != 1 || list[0].ID != sid || list[0].Merged == nil || list[0].CWD != "/work/p" {
		t.Fatalf("sessions: %s", out["sessions"])
	}
	sides, err := s.Sessions(api.SessionsRequest{Unmerged: true})
	ask("unmerged", sides, err)
	if len(sides) != 2 {
		t.Errorf("unmerged: %s", out["unmerged"])
	}
	imp, err := s.Session("claude:" + sid)
	ask("session", imp, err)
	if imp.ID != sid {
		t.Errorf("Session(claude:%s) = %s", sid, imp.ID)
	}
	evs, err := s.Events("claude:"+sid, engine.EventFilter{})
	ask("events", evs, err)
	for _, ev := range evs {
		if len(ev.Also) != 1 {
			t.Errorf("event %d (%s) has no counterpart: %s", ev.Seq, ev.Kind, out["events"])
		}
	}
	if len(evs) != 4 {
		t.Errorf("%d merged events, want 4 (prompt, call, reply, usage): %s", len(evs), out["events"])
	}
	raw, err := s.Events("claude:"+sid, engine.EventFilter{Raw: true})
	ask("raw", raw, err)
	if len(raw) != 4 || raw[0].Prov.Side != "import" || len(raw[0].Also) != 0 {
		t.Errorf("raw import side: %s", out["raw"])
	}
	return out
}

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/httpapi"
	"github.com/bbengine/bbengine/api/tools"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// surfaceAnswers are the answers of one surface to the same three
// questions: a search, a get of its first card, and a context pack.
type surfaceAnswers struct {
	cards    []engine.Card
	artifact engine.Artifact
	markdown string
	pack     json.RawMessage
	// related is what surrounds the first card: the ids of what it
	// replaced, what replaced it and its neighbours, and the sequence
	// numbers of its events (nil for the harness API, which has no such
	// route).
	related []string
}

const (
	surfaceQuery = "which cache did we choose for the session store"
	surfaceTask  = "tune the cache eviction in store/cache.go"
	surfaceK     = 3
)

// TestSurfacesAgree asks the same questions through every surface — the
// service in process and through the running proxy, the CLI's JSON, the
// MCP server, a tool call and the harness HTTP API — over a real engine
// and index, and checks they give the same answers. The surfaces are
// adapters over api.Service: a field or a rule added once shows on each.
func TestSurfacesAgree(t *testing.T) {
	dir := memoryDir(t)
	session := "claude:" + memSession
	ctx := context.Background()

	// The service in process, with no proxy running.
	local, closeLocal, err := api.OpenLocal(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	want := serviceAnswers(t, local, session)
	if err := closeLocal(); err != nil {
		t.Fatal(err)
	}
	if len(want.cards) == 0 || want.artifact.ID != want.cards[0].ID || !strings.Contains(want.markdown, "ARC") || len(want.related) < 3 {
		t.Fatalf("the service answers %+v", want)
	}

	check := func(surface string, got surfaceAnswers) {
		t.Helper()
		if !reflect.DeepEqual(cardIDs(got.cards), cardIDs(want.cards)) {
			t.Errorf("%s: search found %v, want %v", surface, cardIDs(got.cards), cardIDs(want.cards))
		} else if !reflect.DeepEqual(asJSONValue(t, got.cards), asJSONValue(t, want.cards)) {
			t.Errorf("%s: search cards differ:\n%+v\nwant\n%+v", surface, got.cards, want.cards)
		}
		if !reflect.DeepEqual(asJSONValue(t, got.artifact), asJSONValue(t, want.artifact)) {
			t.Errorf("%s: get answers\n%+v\nwant\n%+v", surface, got.artifact, want.artifact)
		}
		if got.markdown != want.markdown {
			t.Errorf("%s: the pack's Markdown is\n%s\nwant\n%s", surface, got.markdown, want.markdown)
		}
		if got.pack != nil && !reflect.DeepEqual(asJSONValue(t, got.pack), asJSONValue(t, want.pack)) {
			t.Errorf("%s: the pack is\n%s\nwant\n%s", surface, got.pack, want.pack)
		}
		if got.related != nil && !reflect.DeepEqual(got.related, want.related) {
			t.Errorf("%s: related is %v, want %v", surface, got.related, want.related)
		}
	}
	surfaces := func(when string) {
		check("CLI JSON "+when, cliAnswers(t, dir, session))
		check("tools call "+when, toolAnswers(t, dir, session))
		check("MCP "+when, mcpAnswers(t, dir, session))
	}
	surfaces("in process")

	// The proxy owns the directory: the same through its query endpoint
	// (api.Remote) and its harness API.
	apiAddr, stop := startSurfaceProxy(t, dir)
	defer stop()
	remote := api.Dial(dir)
	if remote == nil {
		t.Fatal("no running proxy in the lock file")
	}
	check("api.Remote", serviceAnswers(t, remote, session))
	surfaces("through the proxy")
	check("harness HTTP API", harnessAnswers(t, dir, apiAddr, session, want.artifact.ID))
}

// serviceAnswers asks s directly.
func serviceAnswers(t *testing.T, s api.Service, session string) surfaceAnswers {
	t.Helper()
	var out surfaceAnswers
	var err error
	if out.cards, err = s.Search(api.SearchRequest{Text: surfaceQuery, K: surfaceK}); err != nil || len(out.cards) == 0 {
		t.Fatalf("Search: %v, %v", out.cards, err)
	}
	if out.artifact, err = s.Get(out.cards[0].ID); err != nil {
		t.Fatalf("Get: %v", err)
	}
	p, err := s.Context(api.ContextRequest{Session: session, Task: surfaceTask})
	if err != nil {
		t.Fatalf("Context: %v", err)
	}
	out.markdown = p.Markdown()
	out.pack = mustJSON(t, p)
	r, err := s.Related(api.RelatedRequest{ID: out.cards[0].ID, K: surfaceK})
	if err != nil {
		t.Fatalf("Related: %v", err)
	}
	out.related = relatedKeys(r.Supersedes, r.SupersededBy, r.Adjacent, eventSeqs(r.Events))
	return out
}

// relatedKeys lists the ids of what surrounds an artifact, by section,
// and its events' sequence numbers.
func relatedKeys(sup, by, adj []engine.Card, seqs []uint64) []string {
	out := []string{}
	for name, cs := range map[string][]engine.Card{"supersedes": sup, "superseded_by": by, "adjacent": adj} {
		for _, c := range cs {
			out = append(out, name+" "+c.ID)
		}
	}
	for _, s := range seqs {
		out = append(out, "event "+strconv.FormatUint(s, 10))
	}
	slices.Sort(out)
	return out
}

func eventSeqs(evs []engine.Event) []uint64 {
	var out []uint64
	for _, ev := range evs {
		out = append(out, ev.Seq)
	}
	return out
}

func refSeqs(evs []tools.EventRef) []uint64 {
	var out []uint64
	for _, ev := range evs {
		out = append(out, ev.Seq)
	}
	return out
}

// cliAnswers asks through `bbengine mem ... --json`.
func cliAnswers(t *testing.T, dir, session string) surfaceAnswers {
	t.Helper()
	var out surfaceAnswers
	rs := memJSON[[]api.Result](t, "--dir", dir, "mem", "search", "-k", strconv.Itoa(surfaceK), surfaceQuery)
	for _, r := range rs {
		out.cards = append(out.cards, r.Card)
	}
	if len(out.cards) == 0 {
		t.Fatal("CLI: mem search found nothing")
	}
	out.artifact = memJSON[engine.Artifact](t, "--dir", dir, "mem", "get", out.cards[0].ID)
	raw := memJSON[json.RawMessage](t, "--dir", dir, "mem", "context", "--session", session, "--task", surfaceTask)
	out.pack = raw
	out.markdown = packMarkdown(t, raw)
	r := memJSON[api.Related](t, "--dir", dir, "mem", "related", "-k", strconv.Itoa(surfaceK), out.cards[0].ID)
	out.related = relatedKeys(r.Supersedes, r.SupersededBy, r.Adjacent, eventSeqs(r.Events))
	return out
}

// toolAnswers asks through `bbengine tools call`.
func toolAnswers(t *testing.T, dir, session string) surfaceAnswers {
	t.Helper()
	call := func(name string, args any, v any) {
		t.Helper()
		out, errs, code := run(t, "--dir", dir, "tools", "call", name, string(mustJSON(t, args)))
		if code != 0 {
			t.Fatalf("tools call %s: exit %d\n%s", name, code, errs)
		}
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("tools call %s: %v\n%s", name, err, out)
		}
	}
	var out surfaceAnswers
	var found tools.SearchOut
	call("memory_search", tools.SearchIn{Query: surfaceQuery, K: surfaceK}, &found)
	out.cards = found.Cards
	var got tools.GetOut
	call("memory_get", tools.GetIn{ID: found.Cards[0].ID}, &got)
	out.artifact = got.Artifact
	var p tools.ContextOut
	call("memory_context_for_task", tools.ContextIn{Session: session, Task: surfaceTask}, &p)
	out.markdown, out.pack = p.Markdown, mustJSON(t, p.Pack)
	var rel tools.RelatedOut
	call("memory_related", tools.RelatedIn{ID: found.Cards[0].ID, K: surfaceK}, &rel)
	out.related = relatedKeys(rel.Supersedes, rel.SupersededBy, rel.Adjacent, refSeqs(rel.Events))
	return out
}

// mcpAnswers asks an MCP server over the data directory, through the
// SDK's client.
func mcpAnswers(t *testing.T, dir, session string) surfaceAnswers {
	t.Helper()
	s, closeMem := NewMCPServer(dir, t.Logf)
	defer closeMem()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs := connectMCP(t, ct)
	defer cs.Close()
	var out surfaceAnswers
	var found tools.SearchOut
	callTool(t, cs, "memory_search", tools.SearchIn{Query: surfaceQuery, K: surfaceK}, &found)
	if len(found.Cards) == 0 {
		t.Fatal("MCP: memory_search found nothing")
	}
	out.cards = found.Cards
	var got tools.GetOut
	callTool(t, cs, "memory_get", tools.GetIn{ID: found.Cards[0].ID}, &got)
	out.artifact = got.Artifact
	var p tools.ContextOut
	res := callTool(t, cs, "memory_context_for_task", tools.ContextIn{Session: session, Task: surfaceTask}, &p)
	if resultText(res) != p.Markdown {
		t.Errorf("MCP: the pack's text content is not its Markdown")
	}
	out.markdown, out.pack = p.Markdown, mustJSON(t, p.Pack)
	var rel tools.RelatedOut
	callTool(t, cs, "memory_related", tools.RelatedIn{ID: found.Cards[0].ID, K: surfaceK}, &rel)
	out.related = relatedKeys(rel.Supersedes, rel.SupersededBy, rel.Adjacent, refSeqs(rel.Events))
	return out
}

// harnessAnswers asks the harness HTTP API.
func harnessAnswers(t *testing.T, dir, addr, session, id string) surfaceAnswers {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "api.token"))
	if err != nil {
		t.Fatal(err)
	}
	rg := &harnessRig{dir: dir, api: addr, token: strings.TrimSpace(string(b))}
	var out surfaceAnswers
	rg.must(t, "GET", "/v1/search?k="+strconv.Itoa(surfaceK)+"&q="+strings.ReplaceAll(surfaceQuery, " ", "+"), "", &out.cards)
	rg.must(t, "GET", "/v1/artifacts/"+id, "", &out.artifact)
	var p httpapi.PackReply
	rg.must(t, "POST", "/v1/pack", string(mustJSON(t, api.ContextRequest{Session: session, Task: surfaceTask})), &p)
	out.markdown, out.pack = p.Markdown, mustJSON(t, p.Pack)
	return out
}

// startSurfaceProxy runs a proxy with the harness API over dir and
// returns the API's address and a function that stops the proxy.
func startSurfaceProxy(t *testing.T, dir string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	ready, apiReady := make(chan string, 1), make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": "http://127.0.0.1:1"}}, Shutdown: 5 * time.Second,
			API: "127.0.0.1:0", APIReady: apiReady}, ready)
	}()
	var addr, apiAddr string
	for addr == "" || apiAddr == "" {
		select {
		case addr = <-ready:
		case apiAddr = <-apiReady:
		case err := <-done:
			cancel()
			t.Fatalf("proxy stopped: %v\n%s", err, stderr.String())
		}
	}
	return apiAddr, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
	}
}

func cardIDs(cs []engine.Card) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// packMarkdown renders the pack JSON the CLI printed.
func packMarkdown(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var p tools.ContextOut
	if err := json.Unmarshal(raw, &p.Pack); err != nil {
		t.Fatal(err)
	}
	return p.Pack.Markdown()
}

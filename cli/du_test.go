package cli

import (
	"context"
	"encoding/json"
	"net/http"
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
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/claudelog"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// duJSON runs bbengine du --json on dir.
func duJSON(t *testing.T, dir string) *api.DU {
	t.Helper()
	out, errs, code := run(t, "--dir", dir, "du", "--json")
	if code != 0 {
		t.Fatalf("du: %d\n%s%s", code, out, errs)
	}
	var du api.DU
	if err := json.Unmarshal([]byte(out), &du); err != nil {
		t.Fatalf("du --json: %v\n%s", err, out)
	}
	return &du
}

// checkDU checks that every part of du is there and not empty, and that
// the WAL bytes per agent and per project add up to the WAL's frames.
func checkDU(t *testing.T, du *api.DU, parts ...string) {
	t.Helper()
	have := map[string]api.DUPart{}
	for _, p := range du.Parts {
		have[p.Name] = p
	}
	for _, name := range parts {
		if have[name].Bytes <= 0 || have[name].Files <= 0 {
			t.Errorf("du: part %s is empty or missing: %+v", name, have[name])
		}
	}
	for _, g := range du.Store {
		if g.Bytes <= 0 || g.Keys <= 0 {
			t.Errorf("du: store part %q is empty: %+v", g.Name, g)
		}
	}
	if len(du.Store) != 5 || du.WAL <= 0 || du.WALFrames <= 0 || du.WALFrames > du.WAL || du.Derived <= 0 {
		t.Errorf("du: %+v", du)
	}
	for _, ss := range [][]api.DUShare{du.Agents, du.Projects} {
		sum := du.Unattributed
		for _, s := range ss {
			sum += s.Bytes
			if s.Bytes <= 0 {
				t.Errorf("du: %q has no WAL bytes: its frames were not attributed to its sessions", s.Name)
			}
		}
		if sum != du.WALFrames {
			t.Errorf("du: %+v and %d unattributed add up to %d bytes, the WAL's frames are %d", ss, du.Unattributed, sum, du.WALFrames)
		}
	}
}

// TestDUAndGC imports a Claude Code log and records a session with a
// text long enough to be a blob through the proxy, then: du through the
// running proxy and in this process shows every part, the WAL bytes per
// agent and project add up to the WAL's frames (read apart), and both
// answer alike; blob gc through the proxy keeps the blob an event names,
// removes an unnamed one (a dry run removes nothing) and reports a file
// whose name is not a blob's by its path.
func TestDUAndGC(t *testing.T) {
	up := sseUpstream(t)
	dir := filepath.Join(t.TempDir(), "data")
	logs := t.TempDir()
	l := claudelog.CacheSession()
	if err := os.WriteFile(filepath.Join(logs, l.Session+".jsonl"), l.Data(), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := run(t, "--dir", dir, "import", "claude", logs); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}
	addr, _, stop := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, false)
	big := strings.Repeat("output line\n", 100<<10) // 1.2 MB: a blob
	body := `{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"ping"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + strconv.Quote(big) + `}]}]}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader(body))
	req.Header.Set("X-Bb-Session-Id", "du-1")
	req.Header.Set("User-Agent", "claude-cli/2.1.330 (external, cli)")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// An entry bbengine does not know counts as other, by its name;
	// retention's snapshot is derived state.
	for _, name := range []string{"notes", "snapshot"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "x"), []byte("snap"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	remote := duJSON(t, dir)
	checkDU(t, remote, "wal", "db", "index", "blobs", "snapshot", "notes")
	var derived int64
	for _, p := range remote.Parts {
		if p.Other != (p.Name == "notes") {
			t.Errorf("du: part %s: other %v", p.Name, p.Other)
		}
		switch p.Name {
		case "db", "index", "blobs", "snapshot":
			derived += p.Bytes
		}
	}
	if remote.Derived != derived {
		t.Errorf("du: derived %d, want db, index, blobs and snapshot: %d", remote.Derived, derived)
	}
	agents := map[string]api.DUShare{}
	for _, s := range remote.Agents {
		agents[s.Name] = s
	}
	if agents["claude-code"].Sessions != 2 || len(remote.Projects) != 2 {
		t.Errorf("du: agents %+v, projects %+v: want 2 claude-code sessions, an imported one in /repo and one of no project", remote.Agents, remote.Projects)
	}
	out, errs, code := run(t, "--dir", dir, "du")
	for _, want := range []string{"wal", "events (live)", "project index (live)", "other: notes", "claude-code", "(no session)", " × the WAL"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("du: %d, no %q in\n%s%s", code, want, out, errs)
		}
	}

	// Blob gc through the proxy.
	blobs := engine.NewBlobs(dir)
	named := blobFiles(t, dir)
	if len(named) == 0 {
		t.Fatal("no blob was written")
	}
	orphan, err := blobs.Put([]byte("nobody names this"))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(blobs.Path(orphan), old, old)
	bad := filepath.Join(dir, "blobs", "sha256", orphan[:2], "not-hex.txt")
	if err := os.WriteFile(bad, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code = run(t, "--dir", dir, "gc", "--blobs", "--dry-run")
	if code != 0 || !strings.Contains(out, "would remove "+blobs.Path(orphan)) || !strings.Contains(errs, bad+": the name is not a SHA-256") {
		t.Fatalf("gc --dry-run: %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(blobs.Path(orphan)); err != nil {
		t.Fatalf("the dry run removed the unnamed blob: %v", err)
	}
	out, errs, code = run(t, "--dir", dir, "gc", "--blobs", "--json")
	var res api.GCResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Blobs == nil || len(res.Blobs.Removed) != 1 ||
		res.Blobs.Removed[0].Path != blobs.Path(orphan) || res.Bytes != int64(len("nobody names this")) {
		t.Fatalf("gc: %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(blobs.Path(orphan)); err == nil {
		t.Error("gc kept the unnamed blob")
	}
	want := append(named, bad)
	slices.Sort(want)
	if got := blobFiles(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("gc: blobs %v, want the named ones and the file not a blob %v", got, want)
	}
	if _, errs, code := run(t, "--dir", dir, "gc"); code != 2 || !strings.Contains(errs, "--blobs") {
		t.Errorf("gc without --blobs: %d %s", code, errs)
	}
	stop()

	// In this process, and over the loopback endpoint the proxy serves,
	// with nothing written in between: the same answer.
	local := duJSON(t, dir)
	checkDU(t, local, "wal", "db", "index", "blobs", "snapshot")
	var frames int64
	lg, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	r := lg.NewReader()
	for r.Next() {
		h := r.Header()
		frames += int64(h.Size())
	}
	r.Close()
	lg.Close()
	if frames != local.WALFrames {
		t.Errorf("du: %d bytes of WAL frames; reading the WAL gives %d", local.WALFrames, frames)
	}
	e, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := api.NewLocal(e, nil)
	srv, err := httpapi.Start(e, m, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	direct, err := m.DU(api.DURequest{})
	if err != nil {
		t.Fatal(err)
	}
	viaLoopback := duJSON(t, dir)
	// Pebble may flush or compact in the background between the two:
	// the db's files are not compared, its keys are.
	for _, du := range []*api.DU{direct, viaLoopback} {
		for i := range du.Parts {
			if du.Parts[i].Name == "db" {
				du.Total -= du.Parts[i].Bytes
				du.Derived -= du.Parts[i].Bytes
				du.Parts[i].Bytes, du.Parts[i].Files, du.Ratio = 0, 0, 0
			}
		}
	}
	if !reflect.DeepEqual(direct, viaLoopback) {
		a, _ := json.Marshal(direct)
		b, _ := json.Marshal(viaLoopback)
		t.Errorf("du in process and over loopback differ:\n%s\n%s", a, b)
	}
	if !reflect.DeepEqual(direct.Agents, local.Agents) || !reflect.DeepEqual(direct.Store, local.Store) {
		t.Errorf("du with the engine open here and by the command differ: %+v %+v", direct.Agents, local.Agents)
	}
}

// blobFiles lists the files of dir's blob store.
func blobFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(filepath.Join(dir, "blobs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
		return err
	})
	slices.Sort(out)
	return out
}

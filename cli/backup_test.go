package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/proxy"
)

// searchTook matches the time mem search prints.
var searchTook = regexp.MustCompile(`cards? in [0-9.]+[µnm]?s;`)

// backupQueries are what the backup tests ask `mem search`.
var backupQueries = []string{"pong", "flyway migration", "retry budget"}

// backupPrompts are the prompts of the recorded sessions: words memory
// and search can find.
var backupPrompts = []string{
	"ping: we decided to run the flyway migration before the deploy",
	"the retry budget is three attempts; keep it",
	"ping again, check the flyway migration logs",
}

// sendBackupRequest proxies one request of session through addr; a big
// tool result when big is set, for the blob store.
func sendBackupRequest(t *testing.T, addr, session, prompt string, big bool) error {
	msgs := []any{map[string]any{"role": "user", "content": prompt}}
	if big {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "ls"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": strings.Repeat("output line of "+session+"\n", 300)}}})
	}
	body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4", "stream": true, "max_tokens": 100, "messages": msgs})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("X-Bb-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "message_stop") {
		return fmt.Errorf("proxied request: %d %s", resp.StatusCode, b)
	}
	return nil
}

// mustRun runs a command line and fails the test unless it succeeds.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := run(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
	}
	return out
}

// views returns what a user reads of the data directory dir: sessions
// (text and JSON), show of every session, and mem search of each
// query.
func views(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{
		"sessions":        mustRun(t, "--dir", dir, "sessions"),
		"sessions --json": mustRun(t, "--dir", dir, "sessions", "--json"),
	}
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(out["sessions --json"]), &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		out["show "+s.ID] = mustRun(t, "--dir", dir, "show", s.ID, "--blob-threshold", "-1")
		out["show --json "+s.ID] = mustRun(t, "--dir", dir, "show", s.ID, "--format", "json")
	}
	for _, q := range backupQueries {
		// The time a search took is the one thing allowed to differ.
		out["mem search "+q] = searchTook.ReplaceAllString(mustRun(t, "--dir", dir, "mem", "search", q, "-k", "20"), "cards in T;")
		out["mem search --json "+q] = mustRun(t, "--dir", dir, "mem", "search", q, "-k", "20", "--json")
	}
	return out
}

// sameViews fails unless got and want hold the same outputs.
func sameViews(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s: %s differs:\n%s", what, k, diffLines(want[k], got[k]))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d outputs, want %d", what, len(got), len(want))
	}
}

// diffLines shows the first line where a and b differ.
func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, x, y)
		}
	}
	return "(same lines)"
}

// manifestOf reads the manifest of the backup in dir.
func manifestOf(t *testing.T, dir string) api.Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, api.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m api.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// walPrefix returns a new data directory holding the WAL of src cut at
// the offset end, derived from scratch (bbengine rebuild): the source
// as it was when a backup's copy ended there.
func walPrefix(t *testing.T, src string, end uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ref")
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(src, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".wal") {
			continue
		}
		base, err := strconv.ParseUint(strings.TrimSuffix(name, ".wal"), 16, 64)
		if err != nil || base >= end {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, "wal", name))
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(b)) > end-base {
			b = b[:end-base]
		}
		if err := os.WriteFile(filepath.Join(dir, "wal", name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, "--dir", dir, "rebuild")
	return dir
}

// TestBackupWhileRecording backs up a data directory through the running
// proxy while requests flow, with and without the derived state, and
// restores each: sessions, show and mem search print what the source
// prints at the backed-up point (its WAL cut where the backup's copy
// ends, derived from scratch). A backup taken once the requests stopped
// restores to exactly the source's output.
func TestBackupWhileRecording(t *testing.T) {
	up := sseUpstream(t)
	dir := filepath.Join(t.TempDir(), "data")
	addr, _, stop := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, false)
	for i := range 9 {
		if err := sendBackupRequest(t, addr, fmt.Sprintf("base-%d", i%3), backupPrompts[i%3], i == 4); err != nil {
			t.Fatal(err)
		}
	}
	// A blob in the store (show writes long outputs there).
	if out := mustRun(t, "--dir", dir, "show", "base-1", "--blob-threshold", "100"); !strings.Contains(out, "@blob") {
		t.Fatalf("show wrote no blob:\n%s", out)
	}

	var stopLoad atomic.Bool
	var wg sync.WaitGroup
	var sent atomic.Int64
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stopLoad.Load(); i++ {
				if err := sendBackupRequest(t, addr, fmt.Sprintf("live-%d-%d", w, i%4), backupPrompts[i%3]+" "+strconv.Itoa(i), i%5 == 0); err != nil {
					t.Error(err)
					return
				}
				sent.Add(1)
			}
		}()
	}
	for sent.Load() < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	base := t.TempDir()
	full, raw := filepath.Join(base, "full"), filepath.Join(base, "raw")
	if out := mustRun(t, "--dir", dir, "backup", full); !strings.Contains(out, "backed up to "+full) {
		t.Fatalf("backup: %s", out)
	}
	// Requests answered after a backup returns are past its copy.
	waitSent := func(n int64) {
		for sent.Load() < n {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitSent(sent.Load() + 2)
	mustRun(t, "--dir", dir, "backup", raw, "--raw")
	waitSent(sent.Load() + 2)
	stopLoad.Store(true)
	wg.Wait()
	// The requests went on while the backups ran, and the backups are
	// cuts of the WAL taken at different points.
	fm, rm := manifestOf(t, full), manifestOf(t, raw)
	if fm.Raw || fm.Derived == nil || !rm.Raw || rm.Derived != nil || fm.Blobs.N == 0 {
		t.Fatalf("manifests: full %+v raw %+v", fm, rm)
	}
	if _, err := os.Stat(filepath.Join(raw, "db")); err == nil {
		t.Fatal("a raw backup holds the derived state")
	}
	if _, err := os.Stat(filepath.Join(full, "index")); err == nil {
		t.Fatal("a backup holds the search index")
	}
	quiet := filepath.Join(base, "quiet")
	mustRun(t, "--dir", dir, "backup", quiet)
	stop()
	if end := manifestOf(t, quiet).WAL.End; !(fm.WAL.End < rm.WAL.End && rm.WAL.End < end) {
		t.Fatalf("WAL ends: full %d, raw %d, after the requests %d: want them growing", fm.WAL.End, rm.WAL.End, end)
	}

	for _, c := range []struct {
		name, backup string
		end          uint64
	}{{"full", full, fm.WAL.End}, {"raw", raw, rm.WAL.End}} {
		restored := filepath.Join(t.TempDir(), "restored")
		out := mustRun(t, "--dir", restored, "restore", c.backup)
		if !strings.Contains(out, "restored "+c.backup) {
			t.Fatalf("restore %s: %s", c.name, out)
		}
		if c.name == "raw" && !strings.Contains(out, "derived everything from the WAL") {
			t.Fatalf("restore of a raw backup: %s", out)
		}
		if _, err := os.Stat(filepath.Join(restored, "index")); err != nil {
			t.Fatalf("restore %s built no index: %v", c.name, err)
		}
		sameViews(t, c.name+" backup restored", views(t, restored), views(t, walPrefix(t, dir, c.end)))
	}
	// The backup taken after the requests: the source itself.
	restored := filepath.Join(t.TempDir(), "restored")
	mustRun(t, "--dir", restored, "restore", quiet)
	want := views(t, dir)
	if !strings.Contains(want["sessions"], "live-1-3") || !strings.Contains(want["mem search pong"], "base-") {
		t.Fatalf("the source holds too little:\n%s\n%s", want["sessions"], want["mem search pong"])
	}
	// The search index is not copied but built again, and the scores
	// BM25 gives depend on the index's history (Bluge counts the
	// documents an update replaced until it merges their segments): the
	// source's searches are compared once its index is built again too,
	// as `bbengine rebuild --index` does.
	got := views(t, restored)
	for k := range want {
		if strings.HasPrefix(k, "mem search") {
			delete(want, k)
			delete(got, k)
		}
	}
	sameViews(t, "quiet backup restored", got, want)
	mustRun(t, "--dir", dir, "rebuild", "--index")
	sameViews(t, "quiet backup restored, searched", views(t, restored), views(t, dir))
	// The blobs came back, and restore checked them.
	if n := countFiles(t, filepath.Join(restored, "blobs")); n != manifestOf(t, quiet).Blobs.N || n == 0 {
		t.Fatalf("%d blobs restored, the manifest says %d", n, manifestOf(t, quiet).Blobs.N)
	}
}

// countFiles counts the regular files under dir.
func countFiles(t *testing.T, dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// copyTree copies the directory src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// recordedDir returns a data directory with a few sessions recorded
// through a proxy, stopped.
func recordedDir(t *testing.T, n int) string {
	t.Helper()
	up := sseUpstream(t)
	dir := filepath.Join(t.TempDir(), "data")
	addr, _, stop := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, false)
	for i := range n {
		if err := sendBackupRequest(t, addr, fmt.Sprintf("s-%d", i%3), backupPrompts[i%3], i%4 == 1); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	// Blobs in the store (show writes long outputs there).
	mustRun(t, "--dir", dir, "show", "s-1", "--blob-threshold", "100")
	return dir
}

// TestRestoreDamaged restores backups damaged in each way a copy can be
// (a segment cut short, a flipped byte in a segment or a checkpoint
// table, the manifest missing) and a backup into a directory that is not
// empty: each is refused with an error naming the file (and the offset
// where there is one), and nothing is left behind: no data directory, no
// temporary one.
func TestRestoreDamaged(t *testing.T) {
	dir := recordedDir(t, 6)
	good := filepath.Join(t.TempDir(), "good")
	// No proxy runs: the backup is made in this process.
	mustRun(t, "--dir", dir, "backup", good)
	m := manifestOf(t, good)
	seg := filepath.Join("wal", m.WAL.Segments[len(m.WAL.Segments)-1].Name)
	var table string
	for _, f := range m.Derived.Files {
		if strings.HasSuffix(f.Path, ".sst") && f.Size > 200 {
			table = filepath.FromSlash(f.Path)
		}
	}
	if table == "" {
		t.Fatalf("no table in the checkpoint: %+v", m.Derived.Files)
	}
	flip := func(name string, at int64) func(string) {
		return func(b string) {
			p := filepath.Join(b, name)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			data[at] ^= 0x5a
			os.WriteFile(p, data, 0o600)
		}
	}
	for _, c := range []struct {
		name   string
		damage func(backup string)
		want   []string
	}{
		{"truncated segment", func(b string) {
			p := filepath.Join(b, seg)
			fi, _ := os.Stat(p)
			os.Truncate(p, fi.Size()-10)
		}, []string{filepath.Join("good", seg), "at offset", "truncated"}},
		{"flipped segment byte", flip(seg, 100), []string{filepath.Join("good", seg), "at offset 48", "WAL offset"}},
		{"flipped table byte", flip(table, 150), []string{filepath.Join("good", table), "at offset 0", "checksum mismatch in bytes [0,"}},
		{"missing manifest", func(b string) { os.Remove(filepath.Join(b, api.ManifestName)) }, []string{api.ManifestName, "incomplete"}},
		{"missing table", func(b string) { os.Remove(filepath.Join(b, table)) }, []string{filepath.Join("good", table), "missing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := filepath.Join(t.TempDir(), "good")
			copyTree(t, good, b)
			c.damage(b)
			parent := t.TempDir()
			target := filepath.Join(parent, "restored")
			out, errs, code := run(t, "--dir", target, "restore", b)
			t.Logf("%s", errs)
			if code == 0 {
				t.Fatalf("restored a damaged backup: %s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("error %q does not say %q", errs, w)
				}
			}
			if !strings.Contains(errs, "nothing was restored") {
				t.Errorf("error %q does not say nothing was restored", errs)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
	// A target that is not empty is refused, and left as it was.
	target := t.TempDir()
	writeFile(t, target, "keep", "mine")
	_, errs, code := run(t, "--dir", target, "restore", good)
	if code == 0 || !strings.Contains(errs, "not empty") || !strings.Contains(errs, target) {
		t.Fatalf("restore into a directory that is not empty: %d %s", code, errs)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 1 {
		t.Fatalf("the target changed: %v", ents)
	}
	// So is a destination of backup that is not empty.
	_, errs, code = run(t, "--dir", dir, "backup", good)
	if code == 0 || !strings.Contains(errs, "not empty") {
		t.Fatalf("backup into a directory that is not empty: %d %s", code, errs)
	}
	// The good backup restores into an empty directory that exists. (The
	// source's index is built again first: see TestBackupWhileRecording.)
	empty := t.TempDir()
	mustRun(t, "--dir", empty, "restore", good)
	mustRun(t, "--dir", dir, "rebuild", "--index")
	sameViews(t, "restored", views(t, empty), views(t, dir))
}

// TestBackupKilled kills a backup process with SIGKILL as soon as its
// destination holds something, or its WAL copy or blob copy has begun,
// round after round: the source stays intact (it
// verifies and shows what it showed), and a destination cut short has
// no manifest, so restore refuses it and restores nothing; one the
// backup finished restores.
func TestBackupKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the backup as a process, repeatedly")
	}
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	dir := recordedDir(t, 30)
	before := views(t, dir)
	midway := 0
	for round := 0; round < 12 && midway < 3; round++ {
		dest := filepath.Join(t.TempDir(), "backup")
		cmd := exec.Command(self, "--dir", dir, "backup", dest)
		cmd.Env = append(os.Environ(), asMainEnv+"=1")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		killed := false
	poll:
		for {
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("backup: %v\n%s", err, errb.String())
				}
				break poll
			default:
			}
			// Kill it at a different step each round: as the checkpoint
			// starts, once the WAL's copy has begun, once the blobs'.
			at := []string{"", "wal", "blobs"}[round%3]
			if ents, _ := os.ReadDir(filepath.Join(dest, at)); len(ents) > 0 {
				cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				killed = true
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		target := filepath.Join(t.TempDir(), "restored")
		_, manErr := os.Stat(filepath.Join(dest, api.ManifestName))
		t.Logf("round %d: killed %v, manifest %v, dest holds %d files", round, killed, manErr == nil, countFiles(t, dest))
		if killed && manErr != nil {
			midway++
			_, errs, code := run(t, "--dir", target, "restore", dest)
			if code == 0 || !strings.Contains(errs, "incomplete") {
				t.Fatalf("round %d: restore of a backup cut short: %d %s", round, code, errs)
			}
			if _, err := os.Stat(target); err == nil {
				t.Fatalf("round %d: a refused restore created %s", round, target)
			}
		} else {
			mustRun(t, "--dir", target, "restore", dest)
		}
		if out, errs, code := run(t, "--dir", dir, "wal", "verify"); code != 0 {
			t.Fatalf("round %d: the source's WAL after a killed backup: %d %s%s", round, code, out, errs)
		}
	}
	if midway < 3 {
		t.Fatalf("only %d rounds killed a backup midway", midway)
	}
	sameViews(t, "source after killed backups", views(t, dir), before)
}

// TestBackupSecretsAtRest records requests and responses holding every
// kind of secret the proxy redacts, backs the directory up while the
// proxy runs (with and without the derived state) and restores both:
// no file of the backups or of the restored directories, no WAL frame,
// no Pebble key or value and no indexed document holds a secret.
func TestBackupSecretsAtRest(t *testing.T) {
	up := secretUpstream(t)
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "data")
	addr, _, stop := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, false)
	for _, where := range []string{inRequest, inResponse} {
		for i, sc := range secretCases {
			content := "hello"
			if where == inRequest {
				content = "Please keep this safe:\n" + sc.text
			}
			body := []byte(`{"model":"claude-sonnet-4","stream":true,"max_tokens":1024,"messages":[{"role":"user","content":` + jsonString(content) + `}]}`)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", bytes.NewReader(body))
			req.Header.Set("X-Bb-Session-Id", "sec-"+where)
			req.Header.Set("X-Test-Case", fmt.Sprintf("%d %s", i, where))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept-Encoding", "identity")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s: status %d", where, sc.name, resp.StatusCode)
			}
		}
	}
	base := t.TempDir()
	full, raw := filepath.Join(base, "full"), filepath.Join(base, "raw")
	mustRun(t, "--dir", dir, "backup", full)
	mustRun(t, "--dir", dir, "backup", raw, "--raw")
	stop()
	restoredFull, restoredRaw := filepath.Join(base, "restored-full"), filepath.Join(base, "restored-raw")
	mustRun(t, "--dir", restoredFull, "restore", full)
	mustRun(t, "--dir", restoredRaw, "restore", raw)
	if out := mustRun(t, "--dir", restoredFull, "show", "sec-response"); !strings.Contains(out, "Here it is") {
		t.Fatalf("the restored directory shows no derived text:\n%s", out)
	}

	stored := map[string][]byte{}
	for _, d := range []string{full, raw, restoredFull, restoredRaw} {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			stored[p] = b
			return nil
		})
		for name, b := range walContents(t, filepath.Join(d, "wal")) {
			stored[d+" "+name] = b
		}
	}
	for _, d := range []string{full, restoredFull, restoredRaw} {
		for name, b := range pebbleContents(t, filepath.Join(d, "db")) {
			stored[d+" "+name] = b
		}
	}
	for _, d := range []string{restoredFull, restoredRaw} {
		for name, b := range blugeContents(t, filepath.Join(api.IndexDir(d), "bluge")) {
			stored[d+" "+name] = b
		}
	}
	if len(stored) < 20 {
		t.Fatalf("only %d stored items", len(stored))
	}
	for _, sc := range secretCases {
		for _, core := range sc.core {
			for name, b := range stored {
				if i := bytes.Index(b, []byte(core)); i >= 0 {
					t.Errorf("%s: %s holds the secret %q: …%s…", sc.name, name, core, b[max(0, i-80):min(len(b), i+len(core)+40)])
				}
			}
		}
	}
}

// TestBackupOwnerOnly backs up and restores under umask 022: every
// directory of the backup and of the restored data directory is 0700 and
// every file 0600, as in the data directory itself.
func TestBackupOwnerOnly(t *testing.T) {
	withUmask(t, 0o022)
	dir := recordedDir(t, 6)
	base := t.TempDir()
	for _, args := range [][]string{{"backup", filepath.Join(base, "full")}, {"backup", filepath.Join(base, "raw"), "--raw"}} {
		mustRun(t, append([]string{"--dir", dir}, args...)...)
		mustRun(t, "--dir", args[1]+"-restored", "restore", args[1])
	}
	for _, d := range []string{"full", "raw", "full-restored", "raw-restored"} {
		p := filepath.Join(base, d)
		loose, n := looseFiles(t, p)
		if len(loose) > 0 || n < 4 {
			t.Errorf("%s: %d of %d paths readable by others:\n%s", d, len(loose), n, strings.Join(loose, "\n"))
		}
	}
}

// TestBackupCorruptWAL backs up a directory whose WAL has a bad frame
// its derived state is already past: the backup refuses, naming the
// segment and the offset, and takes back what it wrote (a destination
// it created is gone, an empty one it was given stays empty).
func TestBackupCorruptWAL(t *testing.T) {
	dir := recordedDir(t, 6)
	seg := filepath.Join(dir, "wal", "0000000000000000.wal")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[200] ^= 0x5a
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	given := t.TempDir()
	for _, dest := range []string{filepath.Join(t.TempDir(), "new"), given} {
		_, errs, code := run(t, "--dir", dir, "backup", dest)
		if code == 0 || !strings.Contains(errs, seg) || !strings.Contains(errs, "offset") {
			t.Fatalf("backup of a corrupt WAL: %d %s", code, errs)
		}
		ents, err := os.ReadDir(dest)
		if dest == given && (err != nil || len(ents) != 0) || dest != given && err == nil {
			t.Fatalf("backup left %v (%v) in %s", ents, err, dest)
		}
	}
}

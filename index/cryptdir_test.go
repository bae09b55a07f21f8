package index

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/crypt"
)

// searchAll runs benchQueries and returns each one's ranking.
func searchAll(t *testing.T, x *Index) [][]rank {
	t.Helper()
	var out [][]rank
	for _, q := range benchQueries {
		cs, err := x.Search(q)
		if err != nil {
			t.Fatalf("search %q: %v", q.Text, err)
		}
		out = append(out, cardRanks(cs))
	}
	return out
}

// sameResults compares the rankings of benchQueries of two indexes.
func sameResults(t *testing.T, got, want [][]rank, what string) {
	t.Helper()
	hits := 0
	for i, q := range benchQueries {
		k := q.K
		if k == 0 {
			k = 10
		}
		if err := sameRanking(got[i], want[i], k); err != nil {
			t.Errorf("%s: search %q: %v", what, q.Text, err)
		}
		hits += len(want[i])
	}
	if hits == 0 {
		t.Fatalf("%s: no query found anything: the comparison is empty", what)
	}
}

// itemFiles returns the paths of Bluge's segments and snapshots in the
// index in dir.
func itemFiles(t *testing.T, dir, kind string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, blugeName, "*"+kind))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// TestCryptSameResults: an encrypted index and a clear one of the same
// documents rank every query alike, with the same scores, open and
// after a reopen; the encrypted one's files all start with crypt's magic.
func TestCryptSameResults(t *testing.T) {
	keys := crypt.Ephemeral()
	src := &genSource{n: 1000, seed: 5}
	clearDir, encDir := t.TempDir(), t.TempDir()
	clear := openTest(t, clearDir, &Options{MaxBatch: 250})
	enc, err := Open(encDir, &Options{MaxBatch: 250, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Index{clear, enc} {
		if _, err := x.Sync(src); err != nil {
			t.Fatal(err)
		}
	}
	want := searchAll(t, clear)
	sameResults(t, searchAll(t, enc), want, "encrypted")
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	files := append(itemFiles(t, encDir, ".seg"), itemFiles(t, encDir, ".snp")...)
	files = append(files, filepath.Join(encDir, stateName))
	if len(files) < 3 {
		t.Fatalf("encrypted index holds %v, want segments, a snapshot and the state", files)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !crypt.IsEncrypted(b) {
			t.Errorf("%s is not encrypted", p)
		}
	}
	re := openTest(t, encDir, &Options{Keys: keys})
	sameResults(t, searchAll(t, re), want, "encrypted, reopened")
	st, err := re.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != 10 || st.Docs != 1000 {
		t.Fatalf("reopened: %+v, want 10 sessions and 1000 documents", st)
	}
}

// TestCryptMismatch: an encrypted index opened without keys or with
// another directory's, and a clear one opened with keys, fail with an
// error naming a file and change nothing; Rebuild opens either anew.
func TestCryptMismatch(t *testing.T) {
	keys := crypt.Ephemeral()
	arts := []engine.Artifact{art("s1", "a", engine.ArtifactDecision, "use pebble for the store")}
	encDir, clearDir := t.TempDir(), t.TempDir()
	for dir, k := range map[string]*crypt.Keys{encDir: keys, clearDir: nil} {
		x, err := Open(dir, &Options{Keys: k})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Apply(state("s1", "d1", arts), arts); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshotFiles(t, encDir)
	_, err := Open(encDir, nil)
	if !errors.Is(err, ErrEncryption) || !strings.Contains(err.Error(), encDir) || !strings.Contains(err.Error(), "keys") {
		t.Fatalf("encrypted index without keys: %v, want ErrEncryption naming a file and asking for keys", err)
	}
	_, err = Open(encDir, &Options{Keys: crypt.Ephemeral()})
	if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Join(encDir, stateName)) {
		t.Fatalf("encrypted index with another directory's keys: %v, want a corrupt state file named", err)
	}
	if after := snapshotFiles(t, encDir); !maps(before, after) {
		t.Fatal("a failed open changed the index's files")
	}
	_, err = Open(clearDir, &Options{Keys: keys})
	if !errors.Is(err, ErrEncryption) || !strings.Contains(err.Error(), clearDir) || !strings.Contains(err.Error(), "rebuild") {
		t.Fatalf("clear index with keys: %v, want ErrEncryption naming a file and saying to rebuild", err)
	}
	x := openTest(t, clearDir, &Options{Keys: keys, Rebuild: true})
	if st, err := x.Stats(); err != nil || st.Docs != 0 {
		t.Fatalf("rebuilt: %+v, %v; want empty", st, err)
	}
}

// snapshotFiles returns the content of every file under dir but Bluge's
// lock file, by path.
func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == pidName {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCryptTampered: a flipped byte in a segment, in a snapshot or in
// the state file of an encrypted index makes Open fail with an error
// naming the file, and removes nothing (Bluge would fall back to an
// older snapshot and delete what the damaged one names).
func TestCryptTampered(t *testing.T) {
	keys := crypt.Ephemeral()
	dir := t.TempDir()
	x, err := Open(dir, &Options{Keys: keys, MaxBatch: 50})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Sync(&genSource{n: 300, seed: 9}); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	segs, snps := itemFiles(t, dir, ".seg"), itemFiles(t, dir, ".snp")
	if len(segs) == 0 || len(snps) == 0 {
		t.Fatalf("segments %v, snapshots %v", segs, snps)
	}
	for _, c := range []struct {
		name string
		path string
		off  int64 // from the end when negative
	}{
		{"segment chunk", segs[len(segs)-1], crypt.HeaderSize + 40},
		{"segment last byte", segs[0], -1},
		{"segment header", segs[0], 50},
		{"snapshot", snps[0], crypt.HeaderSize + 3},
		{"state file", filepath.Join(dir, stateName), crypt.HeaderSize + 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			orig, err := os.ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(c.path, orig, 0o600)
			off := c.off
			if off < 0 {
				off += int64(len(orig))
			}
			bad := bytes.Clone(orig)
			bad[off] ^= 0x10
			if err := os.WriteFile(c.path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			// Open may mark the state file not clean; Bluge's items
			// must stay as they are.
			before := snapshotFiles(t, filepath.Join(dir, blugeName))
			x, err := Open(dir, &Options{Keys: keys})
			if err == nil {
				x.Close()
				t.Fatalf("opened an index with a flipped byte in %s", c.path)
			}
			if !strings.Contains(err.Error(), c.path) {
				t.Fatalf("error %q does not name %s", err, c.path)
			}
			if after := snapshotFiles(t, filepath.Join(dir, blugeName)); !maps(before, after) {
				t.Fatal("the failed open changed Bluge's files")
			}
		})
	}
	// Restored, the index opens and searches.
	y := openTest(t, dir, &Options{Keys: keys})
	if st, err := y.Stats(); err != nil || st.Docs != 300 {
		t.Fatalf("restored: %+v, %v", st, err)
	}
	if cs, err := y.Search(Query{Text: "parseFrameHeader"}); err != nil {
		t.Fatal(err)
	} else if len(cs) == 0 {
		t.Log("no result for parseFrameHeader")
	}
}

// copyTree copies the files under src to dst, as they are on disk at
// that moment: the image a process killed then leaves.
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
		in, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCryptCrash: an index written to and never closed (its process
// killed: the image of its files while it is open, with a persist cut
// short) opens again and catches up as a clear index does, with the
// same statistics and search results.
func TestCryptCrash(t *testing.T) {
	keys := crypt.Ephemeral()
	type result struct {
		first, second SyncStats
		ranks         [][]rank
	}
	run := func(k *crypt.Keys) result {
		dir := t.TempDir()
		x := openTest(t, dir, &Options{Keys: k, MaxBatch: 100})
		src := &memSource{arts: map[string][]engine.Artifact{}}
		g := newGen(3)
		for i := range 3 {
			s := fmt.Sprintf("c%d", i)
			arts := make([]engine.Artifact, 60)
			for j := range arts {
				arts[j] = g.artifact(s, j)
			}
			src.set(s, "v1", arts...)
		}
		if _, err := x.Sync(src); err != nil {
			t.Fatal(err)
		}
		// Session c1 changes; the state file is not written again
		// before the crash (StateEvery), so Bluge holds more than it
		// says.
		arts := slices.Clone(src.arts["c1"][:50])
		arts[0].Title = "rotateOffset crashed mid-write"
		src.set("c1", "v2", arts...)
		if _, err := x.Sync(src); err != nil {
			t.Fatal(err)
		}
		crashed := t.TempDir()
		copyTree(t, dir, crashed)
		if k != nil {
			// A segment being persisted when the process died.
			if err := os.WriteFile(filepath.Join(crashed, blugeName, "0000000000ff.seg"+tmpSuffix), []byte("torn"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		y := openTest(t, crashed, &Options{Keys: k, MaxBatch: 100})
		var r result
		var err error
		arts[1].Title = "flushWriter after the crash"
		src.set("c1", "v3", arts...)
		if r.first, err = y.Sync(src); err != nil {
			t.Fatal(err)
		}
		if r.second, err = y.Sync(src); err != nil {
			t.Fatal(err)
		}
		if k != nil {
			if torn := filepath.Join(crashed, blugeName, "0000000000ff.seg"+tmpSuffix); exists(torn) {
				t.Errorf("the torn persist %s is still there after open", torn)
			}
		}
		if got := held(t, y, "c1"); len(got) != 50 {
			t.Errorf("after the crash: c1 holds %d documents, want 50", len(got))
		}
		r.ranks = searchAll(t, y)
		for _, q := range []string{"rotateOffset crashed", "flushWriter after the crash"} {
			if cs, err := y.Search(Query{Text: q}); err != nil || len(cs) == 0 {
				t.Errorf("search %q after the crash: %v, %v", q, ids(cs), err)
			}
		}
		return r
	}
	clear, enc := run(nil), run(keys)
	// How many stale documents the first sync deletes depends on whether
	// Bluge had persisted the second sync's batch when the directory was
	// copied (it persists in the background): not on the encryption.
	clear.first.Deleted, enc.first.Deleted = 0, 0
	if clear.first != enc.first || clear.second != enc.second {
		t.Errorf("syncs after the crash: encrypted %+v then %+v, clear %+v then %+v", enc.first, enc.second, clear.first, clear.second)
	}
	sameResults(t, enc.ranks, clear.ranks, "after the crash")
}

// TestCryptSecretsAtRest: a marker string in indexed artifacts and in a
// blob is in no byte of an encrypted data directory's index or blob
// store, while the index is open and after Close; in a clear one it is
// (so the test can fail).
func TestCryptSecretsAtRest(t *testing.T) {
	const marker = "MARKERsecretAtRest9f2c"
	for _, k := range []*crypt.Keys{nil, crypt.Ephemeral()} {
		dir := t.TempDir()
		x, err := Open(filepath.Join(dir, "index"), &Options{Keys: k})
		if err != nil {
			t.Fatal(err)
		}
		var arts []engine.Artifact
		for i := range 50 {
			a := art("s1", fmt.Sprintf("a%02d", i), engine.ArtifactDecision, "use "+marker+" for the store")
			a.Symbols = []string{marker}
			a.Files = []string{"src/" + marker + ".go"}
			arts = append(arts, a)
		}
		if err := x.Apply(state("s1", "d1", arts), arts); err != nil {
			t.Fatal(err)
		}
		if _, err := engine.NewBlobsKeyed(dir, k).PutString(strings.Repeat("output ", 20000) + marker); err != nil {
			t.Fatal(err)
		}
		open := filesWith(t, dir, marker)
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		closed := filesWith(t, dir, marker)
		if k != nil && len(open)+len(closed) > 0 {
			t.Errorf("encrypted: the marker is in %v while open, %v after Close", open, closed)
		}
		if k == nil && (len(closed) < 2 || len(open) < 2) {
			t.Errorf("clear: the marker is in %v while open, %v after Close; want the index and the blob: the test cannot fail", open, closed)
		}
		if k != nil {
			cs, err := openTest(t, filepath.Join(dir, "index"), &Options{Keys: k}).Search(Query{Text: marker})
			if err != nil || len(cs) != 10 {
				t.Fatalf("search the marker after reopen: %d results, %v", len(cs), err)
			}
		}
	}
}

// filesWith returns the files under dir that hold s.
func filesWith(t *testing.T, dir, s string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCryptOwnerOnly: the encrypted index's directories and files are
// owner-only.
func TestCryptOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	x := openTest(t, dir, &Options{Keys: crypt.Ephemeral()})
	arts := []engine.Artifact{art("s1", "a", engine.ArtifactDecision, "x y z")}
	if err := x.Apply(state("s1", "d1", arts), arts); err != nil {
		t.Fatal(err)
	}
	x.wmu.Lock()
	err := x.writeState()
	x.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v", p, fi.Mode().Perm())
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 4 {
		t.Fatalf("only %d entries checked", n)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestCryptTamperedOlderSnapshot: when the newest snapshot names a
// damaged segment and an older snapshot loads, Bluge would silently go
// back to the older one and remove the segments only the newer names;
// the encrypted index refuses to remove anything and reports the
// damaged segment.
func TestCryptTamperedOlderSnapshot(t *testing.T) {
	keys := crypt.Ephemeral()
	dir := t.TempDir()
	x, err := Open(dir, &Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	a := []engine.Artifact{art("s1", "a", engine.ArtifactDecision, "use pebble for the store")}
	if err := x.Apply(state("s1", "d1", a), a); err != nil {
		t.Fatal(err)
	}
	snps := itemFiles(t, dir, ".snp")
	old := snps[len(snps)-1]
	oldData, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	segsBefore := itemFiles(t, dir, ".seg")
	b := []engine.Artifact{art("s2", "b", engine.ArtifactDecision, "never write to stdout")}
	if err := x.Apply(state("s2", "d1", b), b); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, oldData, 0o600); err != nil {
		t.Fatal(err)
	}
	var newSeg string
	for _, p := range itemFiles(t, dir, ".seg") {
		if !slices.Contains(segsBefore, p) {
			newSeg = p
		}
	}
	if newSeg == "" {
		t.Fatalf("no segment was added by the second batch: %v", segsBefore)
	}
	data, err := os.ReadFile(newSeg)
	if err != nil {
		t.Fatal(err)
	}
	data[crypt.HeaderSize+1] ^= 1
	if err := os.WriteFile(newSeg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshotFiles(t, filepath.Join(dir, blugeName))
	if y, err := Open(dir, &Options{Keys: keys}); err == nil {
		y.Close()
		t.Fatal("opened an index whose newest snapshot names a damaged segment")
	} else if !strings.Contains(err.Error(), newSeg) {
		t.Fatalf("error %q does not name %s", err, newSeg)
	}
	if after := snapshotFiles(t, filepath.Join(dir, blugeName)); !maps(before, after) {
		var gone []string
		for p := range before {
			if _, ok := after[p]; !ok {
				gone = append(gone, p)
			}
		}
		t.Fatalf("the failed open changed Bluge's files (removed %v)", gone)
	}
}

// BenchmarkSearchCrypt runs BenchmarkSearch's query set against an
// index of 10,000 generated artifacts, in the clear and encrypted, each
// built, closed and opened again (an encrypted index's items are then
// decrypted into memory, a clear one's mapped). The open sub-benchmarks
// time Open and Close of the same indexes: the cost of decrypting every
// item.
func BenchmarkSearchCrypt(b *testing.B) {
	const n = 10000
	keys := crypt.Ephemeral()
	dirs := map[string]string{}
	for _, enc := range []string{"none", "aes256gcm"} {
		var k *crypt.Keys
		if enc != "none" {
			k = keys
		}
		dir := b.TempDir()
		x, err := Open(dir, &Options{Keys: k})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.Sync(&genSource{n: n, seed: 1}); err != nil {
			b.Fatal(err)
		}
		if err := x.Close(); err != nil {
			b.Fatal(err)
		}
		dirs[enc] = dir
	}
	opts := func(enc string) *Options {
		if enc == "none" {
			return nil
		}
		return &Options{Keys: keys}
	}
	for _, enc := range []string{"none", "aes256gcm"} {
		b.Run(fmt.Sprintf("n=%d/enc=%s", n, enc), func(b *testing.B) {
			x, err := Open(dirs[enc], opts(enc))
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
			benchSearch(b, x, false)
		})
	}
	for _, enc := range []string{"none", "aes256gcm"} {
		b.Run(fmt.Sprintf("op=open/n=%d/enc=%s", n, enc), func(b *testing.B) {
			st := dirSize(b, dirs[enc])
			b.SetBytes(st)
			b.ReportAllocs()
			for b.Loop() {
				x, err := Open(dirs[enc], opts(enc))
				if err != nil {
					b.Fatal(err)
				}
				if err := x.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// dirSize returns the bytes of the files under dir.
func dirSize(b *testing.B, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

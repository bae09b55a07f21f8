package crypt

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func writeEncrypted(t *testing.T, k *Keys, path string, aad, plain []byte) {
	t.Helper()
	if err := os.WriteFile(path, encryptAll(t, k, 10, aad, plain), 0o600); err != nil {
		t.Fatal(err)
	}
}

func genOf(t *testing.T, path string) uint32 {
	t.Helper()
	b, err := readHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h.Gen
}

func checkPlain(t *testing.T, k *Keys, path string, aad, want []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(b, k, aad, path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestRewrapFiles re-wraps files of generation 1 by generation 2: their
// data is not rewritten and reads back; a crash after the journal is
// written and before any header is replayed forward; a torn journal
// touches nothing.
func TestRewrapFiles(t *testing.T) {
	dir := t.TempDir()
	k := Ephemeral()
	plain := bytes.Repeat([]byte("data "), 700)
	var targets []RewrapTarget
	for _, n := range []string{"a", "b", "c"} {
		p := filepath.Join(dir, n)
		writeEncrypted(t, k, p, []byte(n), plain)
		targets = append(targets, RewrapTarget{Path: p, AAD: []byte(n)})
	}
	targets = append(targets, RewrapTarget{Path: filepath.Join(dir, "gone")})
	if err := k.addGeneration(); err != nil {
		t.Fatal(err)
	}
	body := func(p string) []byte {
		b, _ := os.ReadFile(p)
		return b[HeaderSize:]
	}
	before := body(targets[0].Path)
	journal := filepath.Join(dir, "rewrap.journal")

	// Crash after the journal: nothing is touched yet, and replaying
	// finishes the job.
	n, err := prepareRewrap(journal, k, 1, targets)
	if err != nil || n != 3 {
		t.Fatalf("prepare: %d, %v", n, err)
	}
	if genOf(t, targets[0].Path) != 1 {
		t.Fatal("prepare touched a file")
	}
	if err := ReplayJournal(journal); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("journal left: %v", err)
	}
	for _, tg := range targets[:3] {
		if g := genOf(t, tg.Path); g != 2 {
			t.Fatalf("%s: generation %d after rewrap", tg.Path, g)
		}
		checkPlain(t, k, tg.Path, tg.AAD, plain)
	}
	if !bytes.Equal(before, body(targets[0].Path)) {
		t.Fatal("the data was rewritten")
	}
	// Nothing is left of generation 1.
	if n, err := RewrapFiles(journal, k, 1, targets); err != nil || n != 0 {
		t.Fatalf("second rewrap: %d, %v", n, err)
	}

	// A torn journal: no file was touched, it is dropped.
	if err := os.WriteFile(journal, []byte(`{"path":"a","hea`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ReplayJournal(journal); err != nil {
		t.Fatal(err)
	}
	checkPlain(t, k, targets[0].Path, targets[0].AAD, plain)
}

// TestRewrapLinkedFile re-wraps a file that has a second name (a
// backup's hard link): the file is re-wrapped, the other name keeps its
// old header and content.
func TestRewrapLinkedFile(t *testing.T) {
	dir := t.TempDir()
	k := Ephemeral()
	plain := []byte("shared with a backup")
	p := filepath.Join(dir, "live")
	writeEncrypted(t, k, p, []byte("f"), plain)
	bak := filepath.Join(dir, "backup")
	if err := os.Link(p, bak); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if err := k.addGeneration(); err != nil {
		t.Fatal(err)
	}
	if n, err := RewrapFiles(filepath.Join(dir, "j"), k, 1, []RewrapTarget{{Path: p, AAD: []byte("f")}}); err != nil || n != 1 {
		t.Fatalf("rewrap: %d, %v", n, err)
	}
	if genOf(t, p) != 2 || genOf(t, bak) != 1 {
		t.Fatalf("generations: live %d, backup %d; want 2 and 1", genOf(t, p), genOf(t, bak))
	}
	checkPlain(t, k, p, []byte("f"), plain)
	checkPlain(t, k, bak, []byte("f"), plain)
	fi, err := os.Stat(p)
	if err != nil || links(fi) != 1 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("live file after rewrap: links %d, mode %v, %v", links(fi), fi.Mode(), err)
	}
}

// TestReplaySkipsReplacedFile: a journal is replayed only over the files
// it was made for; a file that took one's name since (a blob stored
// again after gc) keeps its header.
func TestReplaySkipsReplacedFile(t *testing.T) {
	dir := t.TempDir()
	k := Ephemeral()
	p := filepath.Join(dir, "blob")
	writeEncrypted(t, k, p, []byte("b"), []byte("first"))
	if err := k.addGeneration(); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "j")
	if n, err := prepareRewrap(journal, k, 1, []RewrapTarget{{Path: p, AAD: []byte("b")}}); err != nil || n != 1 {
		t.Fatalf("prepare: %d, %v", n, err)
	}
	// Replaced meanwhile: a new file, a new salt, generation 2.
	writeEncrypted(t, k, p, []byte("b"), []byte("second"))
	before, _ := os.ReadFile(p)
	if err := ReplayJournal(journal); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(p)
	if !bytes.Equal(before, after) {
		t.Fatal("replay wrote over a file the journal was not made for")
	}
	checkPlain(t, k, p, []byte("b"), []byte("second"))
}

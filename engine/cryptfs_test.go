package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/wal"
)

// modes is the table of the encryption tests: the same test with the
// store in the clear and encrypted.
var modes = []struct {
	name string
	keys func() *crypt.Keys
}{
	{"clear", func() *crypt.Keys { return nil }},
	{"encrypted", crypt.Ephemeral},
}

func TestEncryptedRebuildIdentical(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			keys := m.keys()
			dir, log := newData(t)
			var c clock
			e := open(t, dir, log, &Options{BatchBytes: 2048, Keys: keys})
			id := uint64(0)
			for i := 0; i < 3; i++ {
				id = interleaveWAL(t, log, &c, id, toolLoop(fmt.Sprintf("a%d", i), 4), toolLoop(fmt.Sprintf("b%d", i), 3))
				catchUp(t, e)
			}
			before := dump(t, e)
			sameAfterRebuild(t, e, before, "rebuild differs from the incremental state")
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = open(t, dir, log, &Options{Keys: keys})
			if got := dump(t, e); got != before {
				t.Fatalf("reopened state differs:\n%s", diffLines(before, got))
			}
		})
	}
}

// skipSuiteEncrypt skips a test that opens stores in the clear on
// purpose when the suite runs encrypted.
func skipSuiteEncrypt(t *testing.T) {
	if suiteEncrypt {
		t.Skip("BBENGINE_TEST_ENCRYPT=1: the test is explicit about encryption")
	}
}

// storeFiles returns the regular files under dir/db (and the snapshot
// retention keeps, when there is one).
func storeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, sub := range []string{"db", snapshotDir} {
		filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
	}
	return files
}

// TestEncryptedSecretsAtRest derives exchanges holding a marker in the
// prompt, the reply, a tool call and the session id, with a checkpoint
// taken and Pebble's log left unflushed, then reads every file of the
// store: encrypted, none holds the marker, and every file but the LOCK
// starts with crypt's header; in the clear the marker is there, so the
// test can fail.
func TestEncryptedSecretsAtRest(t *testing.T) {
	skipSuiteEncrypt(t)
	const marker = "zebra-marker-7f3a9c"
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			keys := m.keys()
			dir, log := newData(t)
			var c clock
			xs := toolLoop("s-"+marker, 3)
			xs = append(xs, fx{session: "s-" + marker, req: []byte(`{"messages":[{"role":"user","content":"remember ` + marker + `"}]}`),
				resp: anthropicReply{text: "I will remember " + marker + "."}.stream("claude-sonnet-4-5")})
			writeWAL(t, log, &c, 0, xs)
			e := open(t, dir, log, &Options{Keys: keys})
			catchUp(t, e)
			if err := e.db.Flush(); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Checkpoint(filepath.Join(dir, "cp")); err != nil {
				t.Fatal(err)
			}
			// More, left in Pebble's log and memtable.
			writeWAL(t, log, &c, uint64(len(xs)), toolLoop("t-"+marker, 2))
			catchUp(t, e)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			files := storeFiles(t, dir)
			filepath.WalkDir(filepath.Join(dir, "cp"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					files = append(files, p)
				}
				return nil
			})
			var with []string
			kinds := map[string]bool{}
			for _, p := range files {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte(marker)) {
					with = append(with, p)
				}
				base := filepath.Base(p)
				kinds[strings.TrimLeft(filepath.Ext(base), ".")] = true
				if keys != nil && base != "LOCK" && !crypt.IsEncrypted(b) {
					t.Errorf("%s (%d bytes) does not start with crypt's header", p, len(b))
				}
			}
			t.Logf("%d files (%v); %d hold the marker", len(files), kinds, len(with))
			if !kinds["sst"] || !kinds["log"] {
				t.Fatalf("the store has no table or no log: %v", kinds)
			}
			if keys != nil && len(with) > 0 {
				t.Fatalf("the marker is in the clear in %v", with)
			}
			if keys == nil && len(with) == 0 {
				t.Fatal("the marker is in no file of a store in the clear: the test cannot fail")
			}
		})
	}
}

// TestEncryptedNoMix: a directory with a key file, or with an encrypted
// store, refuses to open without keys; a store in the clear refuses to
// open with keys. Nothing is written either way.
func TestEncryptedNoMix(t *testing.T) {
	skipSuiteEncrypt(t)
	keys := crypt.Ephemeral()
	dir, log := newData(t)
	var c clock
	writeWAL(t, log, &c, 0, toolLoop("s", 2))
	e := open(t, dir, log, &Options{Keys: keys})
	catchUp(t, e)
	want := dump(t, e)
	e.Close()
	_, err := Open(dir, &Options{WAL: log})
	if err == nil || !strings.Contains(err.Error(), dir+" is encrypted: unlock it with BBENGINE_PASSPHRASE") {
		t.Fatalf("an encrypted store opened without keys: %v", err)
	}
	_, err = Open(dir, &Options{WAL: log, Keys: crypt.Ephemeral()})
	if !IsDamaged(err) || !strings.Contains(err.Error(), "MANIFEST") {
		t.Fatalf("an encrypted store opened with another directory's keys: %v, want a damaged store naming the file", err)
	}
	e = open(t, dir, log, &Options{Keys: keys})
	if got := dump(t, e); got != want {
		t.Fatal("the refused opens changed the store")
	}
	e.Close()

	// The key file alone says the directory is encrypted.
	dir2, log2 := newData(t)
	if err := os.WriteFile(filepath.Join(dir2, crypt.KeysFile), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir2, &Options{WAL: log2}); err == nil || !strings.Contains(err.Error(), "is encrypted") {
		t.Fatalf("a directory with %s opened without keys: %v", crypt.KeysFile, err)
	}

	// A store in the clear.
	dir3, log3 := newData(t)
	writeWAL(t, log3, &c, 0, toolLoop("s", 2))
	e = open(t, dir3, log3, nil)
	catchUp(t, e)
	want = dump(t, e)
	e.Close()
	_, err = Open(dir3, &Options{WAL: log3, Keys: keys})
	if err == nil || !strings.Contains(err.Error(), "written in the clear") {
		t.Fatalf("a store in the clear opened with keys: %v", err)
	}
	e = open(t, dir3, log3, nil)
	if got := dump(t, e); got != want {
		t.Fatal("the refused open changed the store")
	}
}

// TestEncryptedFlippedByte flips a byte inside every table of a closed
// store: reading it is a *DamagedError that names a table.
func TestEncryptedFlippedByte(t *testing.T) {
	skipSuiteEncrypt(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			keys := m.keys()
			dir, log := newData(t)
			var c clock
			writeWAL(t, log, &c, 0, toolLoop("s", 8))
			e := open(t, dir, log, &Options{Keys: keys})
			catchUp(t, e)
			if err := e.db.Flush(); err != nil {
				t.Fatal(err)
			}
			e.Close()
			var tables []string
			for _, p := range storeFiles(t, dir) {
				if strings.HasSuffix(p, ".sst") {
					tables = append(tables, filepath.Base(p))
					b, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					b[crypt.HeaderSize+100] ^= 0x10
					if err := os.WriteFile(p, b, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(tables) == 0 {
				t.Fatal("no table")
			}
			e, err := Open(dir, &Options{WAL: log, Keys: keys})
			if err == nil {
				defer e.Close()
				err = e.Dump(func(k, v []byte) error { return nil })
			}
			var de *DamagedError
			if !errors.As(err, &de) {
				t.Fatalf("reading a flipped table: %v, want a *DamagedError", err)
			}
			named := false
			for _, tb := range tables {
				named = named || strings.Contains(err.Error(), strings.TrimSuffix(tb, ".sst"))
			}
			if !named {
				t.Fatalf("%v names none of the tables %v", err, tables)
			}
			t.Log(err)
		})
	}
}

// TestEncryptedReadEIO: a read error of the disk below the encryption
// reaches the caller as itself, not as damage.
func TestEncryptedReadEIO(t *testing.T) {
	skipSuiteEncrypt(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			keys := m.keys()
			var failing atomic.Bool
			efs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if failing.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsRead && strings.HasSuffix(op.Path, ".sst") {
					return syscall.EIO
				}
				return nil
			}))
			dir, log := newData(t)
			var c clock
			writeWAL(t, log, &c, 0, toolLoop("s", 8))
			e := open(t, dir, log, &Options{Keys: keys, FS: efs, CacheSize: 1})
			catchUp(t, e)
			if err := e.db.Flush(); err != nil {
				t.Fatal(err)
			}
			e.Close()
			e = open(t, dir, log, &Options{Keys: keys, FS: efs, CacheSize: 1})
			failing.Store(true)
			err := e.Dump(func(k, v []byte) error { return nil })
			failing.Store(false)
			if !errors.Is(err, syscall.EIO) || IsDamaged(err) {
				t.Fatalf("reading tables on a failing disk: %v, want EIO and not damage", err)
			}
			if got := dump(t, e); got == "" {
				t.Fatal("nothing read once the disk recovered")
			}
		})
	}
}

// sharedKeys returns the same key set in every process that calls it:
// the crash test's children and the parent that reopens their store.
// Only the key set is made from the seeded source; crypto/rand is
// restored when the subtest ends.
func sharedKeys(t *testing.T) *crypt.Keys {
	var k *crypt.Keys
	t.Run("keys", func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 21)
		k = crypt.Ephemeral()
	})
	return k
}

// TestEncryptedCrashResume kills processes deriving an encrypted store
// (kill -9 mid-derivation, so Pebble's log and tables are cut wherever
// the kill lands), reopens it and finds the state a clean rebuild gives.
func TestEncryptedCrashResume(t *testing.T) {
	if dir := os.Getenv("BBENGINE_CRYPT_CRASH_DIR"); dir != "" {
		e, err := Open(dir, &Options{BatchBytes: 4096, Keys: sharedKeys(t)})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println("ready")
		e.CatchUp(context.Background())
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("short")
	}
	keys := sharedKeys(t)
	dir, log := newData(t)
	var c clock
	id := uint64(0)
	for i := 0; i < 40; i++ {
		id = interleaveWAL(t, log, &c, id, toolLoop(fmt.Sprintf("a%d", i), 5), toolLoop(fmt.Sprintf("b%d", i), 4))
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	killRounds(t, "TestEncryptedCrashResume", "BBENGINE_CRYPT_CRASH_DIR", dir, []time.Duration{30 * time.Millisecond, 50 * time.Millisecond, 70 * time.Millisecond, 90 * time.Millisecond, 110 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond})
	resumeAfterKillsKeys(t, dir, 80, keys)
	for _, p := range storeFiles(t, dir) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// A kill between creating a file and writing its header (Pebble's
		// markers are empty files named by their value) leaves an empty
		// file: it holds nothing to protect.
		if filepath.Base(p) != "LOCK" && len(b) > 0 && !crypt.IsEncrypted(b) {
			t.Errorf("%s is not encrypted (%d bytes)", p, len(b))
		}
	}
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEncryptedTornLog cuts Pebble's newest log of a closed encrypted
// store (its last commits are only there: Close does not flush) inside
// its last records, as a crash can, and zero-fills the cut as a file
// system can: the store opens, and after catching up its state is the
// one a rebuild gives. A byte flipped in a record that a valid one
// follows is damage.
func TestEncryptedTornLog(t *testing.T) {
	skipSuiteEncrypt(t)
	keys := crypt.Ephemeral()
	src, log := newData(t)
	var c clock
	id := writeWAL(t, log, &c, 0, toolLoop("s", 4))
	e := open(t, src, log, &Options{Keys: keys})
	catchUp(t, e)
	if err := e.db.Flush(); err != nil {
		t.Fatal(err)
	}
	// A pass per exchange, each synced: the log holds several records
	// (Pebble's log writer writes unsynced commits together).
	for _, x := range toolLoop("t", 3) {
		id = writeWAL(t, log, &c, id, []fx{x})
		catchUp(t, e)
		if err := e.db.LogData([]byte("sync"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	want := dump(t, e)
	e.Close()
	var logs []string
	for _, p := range storeFiles(t, src) {
		if strings.HasSuffix(p, ".log") {
			logs = append(logs, p)
		}
	}
	if len(logs) == 0 {
		t.Fatal("no log")
	}
	newest := logs[len(logs)-1]
	rel, _ := filepath.Rel(src, newest)
	full, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(full) - 1, len(full) - crypt.TagSize, len(full) - 40, len(full) - 200} {
		for _, zero := range []bool{false, true} {
			t.Run(fmt.Sprintf("cut=%d/zero=%v", len(full)-cut, zero), func(t *testing.T) {
				dir := t.TempDir()
				copyTree(t, src, dir)
				b := append([]byte(nil), full[:cut]...)
				if zero {
					b = append(b, make([]byte, len(full)-cut)...)
				}
				if err := os.WriteFile(filepath.Join(dir, rel), b, 0o600); err != nil {
					t.Fatal(err)
				}
				ro, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				defer ro.Close()
				e := open(t, dir, ro, &Options{Keys: keys})
				catchUp(t, e)
				got := dump(t, e)
				if got != want {
					t.Fatalf("state after a torn log differs:\n%s", diffLines(want, got))
				}
				sameAfterRebuild(t, e, got, "state after a torn log differs from a rebuild")
			})
		}
	}
	t.Run("flipped", func(t *testing.T) {
		dir := t.TempDir()
		copyTree(t, src, dir)
		b := append([]byte(nil), full...)
		b[crypt.HeaderSize+10] ^= 1
		if err := os.WriteFile(filepath.Join(dir, rel), b, 0o600); err != nil {
			t.Fatal(err)
		}
		ro, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		e, err := Open(dir, &Options{WAL: ro, Keys: keys})
		if err == nil {
			e.Close()
			t.Fatal("a log with a flipped byte before its last record opened")
		}
		if !IsDamaged(err) || !strings.Contains(err.Error(), filepath.Base(newest)) {
			t.Fatalf("a flipped byte in the log: %v, want a *DamagedError naming %s", err, filepath.Base(newest))
		}
		t.Log(err)
	})
}

// TestCryptFSFiles checks both shapes through cryptFS against a model:
// a table written in random pieces with Syncs at random points reads,
// from another handle, as everything written as soon as a Sync returns
// (the partial chunk a Sync made durable included; between Syncs a
// table is not readable, and Pebble relies on none before its last
// Sync); a records file reads as
// everything written, synced or not, as soon as Write returns; both
// report plaintext sizes and serve random ReadAt; ReuseForWrite starts
// a new file; and no file holds its plaintext.
func TestCryptFSFiles(t *testing.T) {
	dir := t.TempDir()
	cfs := newCryptFS(newOwnerFS(vfs.Default), crypt.Ephemeral())
	rng := rand.New(rand.NewPCG(21, 3))
	for _, name := range []string{"000007.sst", "000008.log", ingestName, "MANIFEST-000001"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			table := strings.HasSuffix(name, ".sst") || name == ingestName
			f, err := cfs.Create(path, vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			var model []byte
			check := func(want []byte) {
				t.Helper()
				fi, err := cfs.Stat(path)
				if err != nil || fi.Size() != int64(len(want)) {
					t.Fatalf("Stat: %v, %v; want %d bytes", fi, err, len(want))
				}
				r, err := cfs.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				got, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("read %d bytes, %v; want %d bytes of the model", len(got), err, len(want))
				}
				for range 20 {
					off := rng.IntN(len(want) + 1)
					p := make([]byte, rng.IntN(40000))
					n, _ := r.ReadAt(p, int64(off))
					if !bytes.Equal(p[:n], want[off:off+min(len(p), len(want)-off)]) {
						t.Fatalf("ReadAt(%d, %d) differs from the model", len(p), off)
					}
				}
			}
			for range 60 {
				p := make([]byte, rng.IntN(9000))
				for i := range p {
					p[i] = byte('a' + rng.IntN(26))
				}
				if n, err := f.Write(p); err != nil || n != len(p) {
					t.Fatalf("Write: %d, %v", n, err)
				}
				model = append(model, p...)
				if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(model)) {
					t.Fatalf("Stat of the writer: %v, %v", fi, err)
				}
				switch {
				case rng.IntN(5) == 0:
					if err := f.Sync(); err != nil {
						t.Fatal(err)
					}
					check(model)
				case !table:
					check(model)
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			check(model)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, model[len(model)/2:len(model)/2+24]) {
				t.Fatal("the file holds its plaintext")
			}
		})
	}
	// A recycled log is a new file: the old one's content is gone.
	nf, err := cfs.ReuseForWrite(filepath.Join(dir, "000008.log"), filepath.Join(dir, "000009.log"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	nf.Write([]byte("new"))
	nf.Close()
	if _, err := os.Stat(filepath.Join(dir, "000008.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the recycled log is still there: %v", err)
	}
	r, err := cfs.Open(filepath.Join(dir, "000009.log"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(r); err != nil || string(b) != "new" {
		t.Fatalf("the reused log reads %q, %v", b, err)
	}
	r.Close()
	// An existing encrypted file is not rewritten in place.
	if _, err := cfs.OpenReadWrite(filepath.Join(dir, "000009.log"), vfs.WriteCategoryUnspecified); err == nil {
		t.Fatal("an encrypted file opened for writing in place")
	}
}

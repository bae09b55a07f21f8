package crypt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRetireGeneration retires a generation once the files it wrapped
// are re-wrapped: they stay readable, a data key still wrapped by it
// (a file not re-wrapped) no longer unwraps here nor after a fresh
// unlock, and the active generation cannot be retired.
func TestRetireGeneration(t *testing.T) {
	dir := t.TempDir()
	pass := []byte("retire me")
	k, err := Init(dir, InitOptions{Passphrase: pass})
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "kept")
	plain := []byte("data wrapped by generation 1")
	writeEncrypted(t, k, kept, []byte("kept"), plain)
	stale, err := k.NewDataKey([]byte("stale"))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.RetireGeneration(dir, 1); err == nil {
		t.Fatal("retired the active generation")
	}
	if _, err := k.NewGeneration(dir); err != nil {
		t.Fatal(err)
	}
	if n, err := RewrapFiles(filepath.Join(dir, "rewrap.journal"), k, 1, []RewrapTarget{{Path: kept, AAD: []byte("kept")}}); err != nil || n != 1 {
		t.Fatalf("rewrap: %d, %v", n, err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, KeysFile))
	if err := k.RetireGeneration(dir, 1); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, KeysFile))
	if string(before) == string(after) {
		t.Fatal("keys.json unchanged")
	}
	for _, keys := range []*Keys{k, mustUnlock(t, dir, pass)} {
		checkPlain(t, keys, kept, []byte("kept"), plain)
		if _, err := keys.Unwrap(1, stale.Wrapped[:], []byte("stale")); !errors.Is(err, ErrUnknownGeneration) {
			t.Fatalf("a data key of the retired generation: %v, want ErrUnknownGeneration", err)
		}
	}
	info, err := ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Generations[0].Retired || info.Active != 2 {
		t.Fatalf("info: %+v", info)
	}
	if err := k.RetireGeneration(dir, 1); err != nil {
		t.Fatalf("retiring again: %v", err)
	}
}

func mustUnlock(t *testing.T, dir string, pass []byte) *Keys {
	t.Helper()
	k, err := Unlock(dir, UnlockOptions{Passphrase: pass})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

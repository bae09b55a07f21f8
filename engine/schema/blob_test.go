package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/internal/crypt"
)

// stores returns a clear and an encrypted blob store of one data
// directory each.
func stores(t *testing.T) map[string]*Blobs {
	return map[string]*Blobs{
		"clear": NewBlobs(t.TempDir()),
		"hmac":  NewBlobsKeyed(t.TempDir(), crypt.Ephemeral()),
	}
}

// bigText is longer than several chunks of an encrypted blob and not a
// multiple of the chunk size.
func bigText() string {
	return strings.Repeat("line of a long tool output 0123456789\n", 5000) + "end"
}

func TestBlobRoundTrip(t *testing.T) {
	for name, bs := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for _, text := range []string{"", "small", bigText()} {
				put, err := bs.Put([]byte(text))
				if err != nil {
					t.Fatal(err)
				}
				streamed, err := bs.PutString(text + "!")
				if err != nil {
					t.Fatal(err)
				}
				again, err := bs.PutString(text)
				if err != nil {
					t.Fatal(err)
				}
				if again != put {
					t.Fatalf("Put names %s, PutString %s: one content, two names", put, again)
				}
				for sum, want := range map[string]string{put: text, streamed: text + "!"} {
					if len(sum) != 64 {
						t.Fatalf("name %q is not 64 hex digits", sum)
					}
					got, err := bs.Get(sum)
					if err != nil {
						t.Fatal(err)
					}
					if string(got) != want {
						t.Fatalf("Get(%s) = %d bytes, want %d", sum, len(got), len(want))
					}
					if err := CheckBlob(bs.Path(sum), bs.keys); err != nil {
						t.Fatalf("CheckBlob: %v", err)
					}
				}
			}
			// Commit leaves no temporary file behind, and every file
			// and directory is owner-only.
			err := filepath.WalkDir(bs.dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if strings.HasPrefix(d.Name(), ".tmp-") {
					t.Errorf("temporary file %s left behind", p)
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				if fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("%s has mode %v, want owner-only", p, fi.Mode().Perm())
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBlobNames: a clear store names a blob by its SHA-256, an
// encrypted one by its HMAC under the directory's name key, which
// differs from the SHA-256 and from another directory's HMAC.
func TestBlobNames(t *testing.T) {
	data := []byte("a file anyone could guess")
	sha := sha256.Sum256(data)
	keys := crypt.Ephemeral()
	mac := keys.NameHash()
	mac.Write(data)
	want := map[string]string{"clear": hex.EncodeToString(sha[:]), "hmac": hex.EncodeToString(mac.Sum(nil))}
	dir := t.TempDir()
	for name, bs := range map[string]*Blobs{"clear": NewBlobs(dir), "hmac": NewBlobsKeyed(dir, keys)} {
		got, err := bs.Put(data)
		if err != nil {
			t.Fatal(err)
		}
		if got != want[name] {
			t.Errorf("%s: name %s, want %s", name, got, want[name])
		}
		if _, err := os.Stat(filepath.Join(dir, "blobs", map[string]string{"clear": "sha256", "hmac": "hmac"}[name], got[:2], got)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if want["clear"] == want["hmac"] {
		t.Fatal("the HMAC name is the SHA-256")
	}
	other, err := NewBlobsKeyed(t.TempDir(), crypt.Ephemeral()).Put(data)
	if err != nil {
		t.Fatal(err)
	}
	if other == want["hmac"] {
		t.Fatal("two directories' keys give one name")
	}
}

// TestBlobTampered: a changed byte, a file cut short and two blob files
// swapped are all errors naming the file, in Get and CheckBlob; a clear
// store's check finds the changed content by its SHA-256.
func TestBlobTampered(t *testing.T) {
	keys := crypt.Ephemeral()
	bs := NewBlobsKeyed(t.TempDir(), keys)
	a, err := bs.PutString(bigText())
	if err != nil {
		t.Fatal(err)
	}
	b, err := bs.Put([]byte("the other blob"))
	if err != nil {
		t.Fatal(err)
	}
	orig := map[string][]byte{}
	for _, sum := range []string{a, b} {
		if orig[sum], err = os.ReadFile(bs.Path(sum)); err != nil {
			t.Fatal(err)
		}
	}
	restore := func() {
		for sum, data := range orig {
			if err := os.WriteFile(bs.Path(sum), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name   string
		damage func()
	}{
		{"flipped byte in a chunk", func() {
			d := bytes.Clone(orig[a])
			d[crypt.HeaderSize+70000] ^= 1
			os.WriteFile(bs.Path(a), d, 0o600)
		}},
		{"flipped byte in the header", func() {
			d := bytes.Clone(orig[a])
			d[40] ^= 1
			os.WriteFile(bs.Path(a), d, 0o600)
		}},
		{"cut at a chunk boundary", func() {
			os.WriteFile(bs.Path(a), orig[a][:crypt.HeaderSize+(1<<BlobChunkLog)+crypt.ChunkOverhead], 0o600)
		}},
		{"swapped", func() {
			os.WriteFile(bs.Path(a), orig[b], 0o600)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer restore()
			c.damage()
			_, err := bs.Get(a)
			if err == nil || !strings.Contains(err.Error(), bs.Path(a)) {
				t.Fatalf("Get = %v, want an error naming %s", err, bs.Path(a))
			}
			if err := CheckBlob(bs.Path(a), keys); err == nil || !strings.Contains(err.Error(), bs.Path(a)) {
				t.Fatalf("CheckBlob = %v, want an error naming %s", err, bs.Path(a))
			}
		})
	}
	if _, err := bs.Get(a); err != nil {
		t.Fatalf("after restoring the files: %v", err)
	}
	if err := CheckBlob(bs.Path(a), nil); err == nil || !strings.Contains(err.Error(), "keys") {
		t.Fatalf("CheckBlob of an encrypted blob without keys = %v, want an error asking for keys", err)
	}
	var ce *crypt.CorruptionError
	d := bytes.Clone(orig[a])
	d[crypt.HeaderSize+5] ^= 1
	os.WriteFile(bs.Path(a), d, 0o600)
	if _, err := bs.Get(a); !errors.As(err, &ce) || ce.Offset != 0 {
		t.Fatalf("Get of a changed first chunk = %v, want a *crypt.CorruptionError at offset 0", err)
	}

	clear := NewBlobs(t.TempDir())
	sum, err := clear.Put([]byte("clear text"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(clear.Path(sum), []byte("clear texT"), 0o600)
	if err := CheckBlob(clear.Path(sum), nil); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("CheckBlob of a changed clear blob = %v", err)
	}
}

// TestBlobSecretsAtRest: no byte under an encrypted store's directory
// holds a blob's content, streamed or put; a clear store does (so the
// test can fail).
func TestBlobSecretsAtRest(t *testing.T) {
	const marker = "MARKER-7f3a9c-secret-at-rest"
	text := strings.Repeat("x", 70000) + marker + strings.Repeat("y", 100)
	for name, bs := range stores(t) {
		if _, err := bs.Put([]byte(marker)); err != nil {
			t.Fatal(err)
		}
		if _, err := bs.PutString(text); err != nil {
			t.Fatal(err)
		}
		w, err := bs.Create()
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("aborted " + marker))
		// The temporary file of a blob being streamed holds no
		// plaintext either.
		found := markerIn(t, filepath.Dir(bs.dir), marker)
		w.Abort()
		found += markerIn(t, filepath.Dir(bs.dir), marker)
		if enc := bs.Encrypted(); enc && found > 0 {
			t.Errorf("%s: the marker is in %d files of an encrypted store", name, found)
		} else if !enc && found == 0 {
			t.Errorf("%s: the marker is in no file of a clear store: the test cannot fail", name)
		}
	}
}

// markerIn returns how many files under dir hold marker.
func markerIn(t *testing.T, dir, marker string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(marker)) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

package crypt

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"
	"github.com/zalando/go-keyring"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden is testdata/keys-check.json: what a build must get out of
// testdata/keys.json, made by an earlier build with -update.
type golden struct {
	Passphrase    string `json:"passphrase"`
	KeyringSecret string `json:"keyring_secret"`
	AAD           string `json:"aad"`
	Gen           uint32 `json:"gen"`
	Wrapped       []byte `json:"wrapped"`
	Key           []byte `json:"key"`
	NameHash      []byte `json:"name_hash"`
}

// TestGolden unlocks a keys.json written by an earlier build, through
// each of its slots, and checks that a data key wrapped then unwraps:
// the format, the AADs and the KDF stay readable. The identity and
// secrets in testdata are test values only.
func TestGolden(t *testing.T) {
	keysPath := filepath.Join("testdata", "keys.json")
	checkPath := filepath.Join("testdata", "keys-check.json")
	idPath := filepath.Join("testdata", "age-identity.txt")
	if *update {
		writeGolden(t, keysPath, checkPath, idPath)
	}
	var g golden
	b, err := os.ReadFile(checkPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	idText, err := os.ReadFile(idPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file, err := os.ReadFile(keysPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeysFile), file, 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	keyring.MockInit()
	if err := keyring.Set("bbengine", info.DirID, g.KeyringSecret); err != nil {
		t.Fatal(err)
	}
	for _, o := range []UnlockOptions{
		{Passphrase: []byte(g.Passphrase)},
		{AgeIdentities: []string{string(idText)}},
		{Keyring: true},
	} {
		u, err := Unlock(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		key, err := u.Unwrap(g.Gen, g.Wrapped, []byte(g.AAD))
		if err != nil || !bytes.Equal(key[:], g.Key) {
			t.Fatalf("the golden data key does not unwrap: %v", err)
		}
		h := u.NameHash()
		h.Write([]byte("blob"))
		if !bytes.Equal(h.Sum(nil), g.NameHash) {
			t.Fatal("the golden name key differs")
		}
		if u.Active() != 2 {
			t.Fatalf("Active = %d, want 2", u.Active())
		}
		// Read and written again, the file is the same bytes.
		kf, err := readKeyFile(filepath.Join(dir, KeysFile))
		if err != nil {
			t.Fatal(err)
		}
		again, err := kf.marshal(u.root)
		if err != nil || !bytes.Equal(again, file) {
			t.Fatalf("keys.json re-encoded differs (%v):\n%s", err, again)
		}
	}
}

func writeGolden(t *testing.T, keysPath, checkPath, idPath string) {
	keyring.MockInit()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	g := golden{Passphrase: "golden passphrase", AAD: "golden file"}
	dir := t.TempDir()
	k, err := Init(dir, InitOptions{Passphrase: []byte(g.Passphrase), AgeRecipients: []string{id.Recipient().String()}, Keyring: true})
	if err != nil {
		t.Fatal(err)
	}
	if g.KeyringSecret, err = keyring.Get("bbengine", k.DirIDString()); err != nil {
		t.Fatal(err)
	}
	d, err := k.NewDataKey([]byte(g.AAD))
	if err != nil {
		t.Fatal(err)
	}
	g.Gen, g.Wrapped, g.Key = d.Gen, d.Wrapped[:], d.Key[:]
	if _, err := k.NewGeneration(dir); err != nil {
		t.Fatal(err)
	}
	h := k.NameHash()
	h.Write([]byte("blob"))
	g.NameHash = h.Sum(nil)
	file, err := os.ReadFile(filepath.Join(dir, KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	check, _ := json.MarshalIndent(g, "", "  ")
	idText := "# A test identity for TestGolden only.\n" + id.String() + "\n"
	os.MkdirAll("testdata", 0o755)
	for p, b := range map[string][]byte{keysPath: file, checkPath: append(check, '\n'), idPath: []byte(idText)} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

package crypt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/zalando/go-keyring"
)

// productionKDF is what new passphrase slots get outside tests.
var productionKDF = passphraseKDF

// testKDF keeps the suite fast under -race: argon2id with 64 KiB.
var testKDF = kdfParams{Time: 1, MemoryKiB: 64, Threads: 1}

func init() { passphraseKDF = testKDF }

var dbusErr = errors.New(`exec: "dbus-launch": executable file not found in $PATH`)

func newIdentity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// identityFile is an age identity file as age-keygen writes it.
func identityFile(id *age.X25519Identity) string {
	return fmt.Sprintf("# created: 2026-11-27T05:00:00Z\n# public key: %s\n%s\n", id.Recipient(), id)
}

// checkSameKeys checks that a data key made by a unwraps under b, and
// that both name blobs alike.
func checkSameKeys(t *testing.T, a, b *Keys) {
	t.Helper()
	aad := []byte("wal segment 42")
	d, err := a.NewDataKey(aad)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Unwrap(d.Gen, d.Wrapped[:], aad)
	if err != nil || got != d.Key {
		t.Fatalf("data key of one key set does not unwrap under the other: %v", err)
	}
	if a.DirID() != b.DirID() {
		t.Fatalf("dir ids differ: %s, %s", a.DirIDString(), b.DirIDString())
	}
	ha, hb := a.NameHash(), b.NameHash()
	ha.Write([]byte("blob"))
	hb.Write([]byte("blob"))
	if !bytes.Equal(ha.Sum(nil), hb.Sum(nil)) {
		t.Fatal("name keys differ")
	}
}

func checkMode(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("keys.json mode %v, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", di.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != KeysFile {
			t.Errorf("stray file %s beside keys.json", e.Name())
		}
	}
}

// TestRoundTrip makes a directory's keys with each slot type alone and
// unlocks them again.
func TestRoundTrip(t *testing.T) {
	id := newIdentity(t)
	for _, tc := range []struct {
		name   string
		init   InitOptions
		unlock UnlockOptions
	}{
		{"passphrase", InitOptions{Passphrase: []byte("correct horse")}, UnlockOptions{Passphrase: []byte("correct horse")}},
		{"age", InitOptions{AgeRecipients: []string{id.Recipient().String()}}, UnlockOptions{AgeIdentities: []string{identityFile(id)}}},
		{"keyring", InitOptions{Keyring: true}, UnlockOptions{Keyring: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keyring.MockInit()
			// A loose parent and a missing directory: Init makes it 0700.
			dir := filepath.Join(t.TempDir(), "data")
			if Exists(dir) {
				t.Fatal("Exists before Init")
			}
			k, err := Init(dir, tc.init)
			if err != nil {
				t.Fatal(err)
			}
			if !Exists(dir) {
				t.Fatal("Exists after Init is false")
			}
			checkMode(t, dir)
			u, err := Unlock(dir, tc.unlock)
			if err != nil {
				t.Fatal(err)
			}
			checkSameKeys(t, k, u)
			checkSameKeys(t, u, k)
			if u.Active() != 1 {
				t.Errorf("Active = %d, want 1", u.Active())
			}
			info, err := ReadInfo(dir)
			if err != nil {
				t.Fatal(err)
			}
			if info.DirID != k.DirIDString() || len(info.Slots) != 1 || info.Slots[0].Type != tc.name ||
				info.Active != 1 || len(info.Generations) != 1 || info.Generations[0].ID != 1 {
				t.Errorf("ReadInfo = %+v", info)
			}
			if tc.name == "age" && info.Slots[0].Recipient != id.Recipient().String() {
				t.Errorf("recipient %q, want %q", info.Slots[0].Recipient, id.Recipient())
			}
			if _, err := Init(dir, tc.init); !errors.Is(err, fs.ErrExist) {
				t.Errorf("a second Init: %v, want fs.ErrExist", err)
			}
		})
	}
}

// TestKeysFileShape checks the JSON of docs/format/crypt.md: field names,
// sizes of the binary fields and that no key appears in the clear.
func TestKeysFileShape(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	now := time.Date(2026, 11, 27, 4, 30, 0, 0, time.UTC)
	id := newIdentity(t)
	const pass = "Tr0ub4dor&3-marker-passphrase"
	k, err := Init(dir, InitOptions{Passphrase: []byte(pass), AgeRecipients: []string{id.Recipient().String()}, Keyring: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	var j fileJSON
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if j.Format != "bbengine-keys/1" || j.Cipher != "aes-256-gcm" || j.DirID != k.DirIDString() || !j.Created.Equal(now) || j.Active != 1 {
		t.Errorf("header fields: %+v", j)
	}
	size := func(s string) int {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return len(b) - 4
	}
	if len(j.Slots) != 3 {
		t.Fatalf("%d slots, want 3", len(j.Slots))
	}
	p, a, r := j.Slots[0], j.Slots[1], j.Slots[2]
	if p.Type != "passphrase" || p.KDF != "argon2id" || p.Time != testKDF.Time || p.MemoryKiB != testKDF.MemoryKiB || p.Threads != testKDF.Threads || size(p.Salt) != 16 || size(p.Root) != 60 {
		t.Errorf("passphrase slot %+v", p)
	}
	if a.Type != "age" || a.Recipient != id.Recipient().String() || size(a.Age) < 100 || size(a.Root) != 60 {
		t.Errorf("age slot %+v", a)
	}
	if r.Type != "keyring" || r.Service != "bbengine" || r.Account != k.DirIDString() || size(r.Root) != 60 {
		t.Errorf("keyring slot %+v", r)
	}
	if len(j.Generations) != 1 || j.Generations[0].ID != 1 || size(j.Generations[0].Key) != 60 || j.Generations[0].Retired || size(j.Names) != 60 {
		t.Errorf("generations %+v, names %q", j.Generations, j.Names)
	}
	// Secrets at rest: no key, passphrase or identity in the clear.
	kf, err := readKeyFile(filepath.Join(dir, KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	gens, _, err := kf.unwrapAll(k.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, kek := range k.keks {
		if bytes.Contains(b, kek[:]) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString(kek[:]))) {
			t.Fatal("a slot key is in keys.json in the clear")
		}
	}
	for _, s := range []string{pass, id.String(), strings.ToLower(id.String())} {
		if bytes.Contains(b, []byte(s)) {
			t.Fatalf("keys.json holds the secret %q", s)
		}
	}
	for _, key := range [][]byte{k.root[:], k.names[:], sliceOf(gens[1])} {
		for _, enc := range []string{string(key), base64.StdEncoding.EncodeToString(key), fmt.Sprintf("%x", key)} {
			if bytes.Contains(b, []byte(enc)) {
				t.Fatal("a key is in keys.json in the clear")
			}
		}
	}
	if s, _ := keyring.Get("bbengine", k.DirIDString()); s == "" || bytes.Contains(b, []byte(s)) {
		t.Fatalf("keyring secret %q missing, or in keys.json", s)
	}
}

// TestProductionKDF unlocks a passphrase slot at the real argon2id cost.
func TestProductionKDF(t *testing.T) {
	passphraseKDF = productionKDF
	defer func() { passphraseKDF = testKDF }()
	if productionKDF != (kdfParams{Time: 3, MemoryKiB: 64 << 10, Threads: 4}) {
		t.Fatalf("production parameters %+v, want t=3 m=64MiB p=4", productionKDF)
	}
	dir := t.TempDir()
	k, err := Init(dir, InitOptions{Passphrase: []byte("a strong passphrase")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, KeysFile))
	if !bytes.Contains(b, []byte(`"time": 3`)) || !bytes.Contains(b, []byte(`"memory_kib": 65536`)) || !bytes.Contains(b, []byte(`"threads": 4`)) {
		t.Errorf("keys.json does not hold the production parameters:\n%s", b)
	}
	u, err := Unlock(dir, UnlockOptions{Passphrase: []byte("a strong passphrase")})
	if err != nil {
		t.Fatal(err)
	}
	checkSameKeys(t, k, u)
}

// TestKeyringUnavailable is headless Linux: no D-Bus session bus (the
// two errors measured in docs/design/encryption.md section 6.2).
func TestKeyringUnavailable(t *testing.T) {
	dialErr := &net.OpError{Op: "dial", Net: "unix", Addr: &net.UnixAddr{Name: "/nonexistent", Net: "unix"}, Err: os.NewSyscallError("connect", syscall.ENOENT)}
	for _, cause := range []error{dbusErr, dialErr} {
		keyring.MockInitWithError(cause)
		dir := t.TempDir()
		_, err := Init(dir, InitOptions{Passphrase: []byte("pw"), Keyring: true})
		if err == nil {
			t.Fatal("Init with an unavailable keyring succeeded")
		}
		for _, want := range []string{"OS keyring unavailable: " + cause.Error(), "use a passphrase or an age recipient"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if !errors.Is(err, ErrKeyring) || !errors.Is(err, cause) {
			t.Errorf("error %v is not ErrKeyring wrapping the cause", err)
		}
		if Exists(dir) {
			t.Error("a failed Init left keys.json")
		}
	}
	dir := t.TempDir()

	// A directory made where the keyring worked, opened where it does
	// not: the keyring slot says why, the passphrase slot opens.
	keyring.MockInit()
	k, err := Init(dir, InitOptions{Passphrase: []byte("pw"), Keyring: true})
	if err != nil {
		t.Fatal(err)
	}
	keyring.MockInitWithError(dbusErr)
	_, err = Unlock(dir, UnlockOptions{Keyring: true})
	if err == nil || !strings.Contains(err.Error(), `slot 1 (keyring): OS keyring unavailable: exec: "dbus-launch"`) || !errors.Is(err, ErrKeyring) {
		t.Errorf("Unlock by keyring: %v", err)
	}
	u, err := Unlock(dir, UnlockOptions{Passphrase: []byte("pw"), Keyring: true})
	if err != nil {
		t.Fatal(err)
	}
	checkSameKeys(t, k, u)
	if err := u.AddSlot(dir, InitOptions{Keyring: true}); err == nil || !strings.Contains(err.Error(), "keyring slot already") {
		t.Errorf("a second keyring slot: %v", err)
	}
}

// TestUnlockMessages checks what the user reads when no slot opens: each
// slot's reason, the variables to set, and never the secret.
func TestUnlockMessages(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	id := newIdentity(t)
	if _, err := Init(dir, InitOptions{Passphrase: []byte("right"), AgeRecipients: []string{id.Recipient().String()}, Keyring: true}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, KeysFile)
	other := newIdentity(t)
	const wrongPass = "hunter2-wrong-passphrase"
	for _, tc := range []struct {
		name     string
		opts     UnlockOptions
		want     []string
		wantIs   []error
		wantNone []string
	}{
		{"nothing", UnlockOptions{},
			[]string{"cannot unlock " + path, "slot 0 (passphrase): no passphrase given (set BBENGINE_PASSPHRASE)",
				"slot 1 (age " + id.Recipient().String() + "): no age identity given (set BBENGINE_AGE_IDENTITY or --age-identity)",
				"slot 2 (keyring): the OS keyring was not asked (use --keyring)"},
			[]error{ErrLocked, ErrNoSecret}, nil},
		{"wrong", UnlockOptions{Passphrase: []byte(wrongPass), AgeIdentities: []string{identityFile(other)}},
			[]string{"slot 0 (passphrase): the passphrase is wrong", "slot 1 (age " + id.Recipient().String() + "): the age identity did not match"},
			[]error{ErrLocked, ErrWrongSecret},
			[]string{wrongPass, other.String(), "AGE-SECRET-KEY"}},
		{"unreadable identity", UnlockOptions{AgeIdentities: []string{"AGE-SECRET-KEY-1QQQQQQQQQQQQBADBADBAD\n"}},
			[]string{"age identity 1 is not an age identity file"},
			[]error{ErrLocked, ErrWrongSecret},
			[]string{"BADBADBAD", "QQQQ"}},
		{"keyring emptied", UnlockOptions{Keyring: true},
			[]string{"slot 2 (keyring): the OS keyring holds no secret for service \"bbengine\""},
			[]error{ErrLocked, ErrNoSecret}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "keyring emptied" {
				keyring.MockInit()
			}
			_, err := Unlock(dir, tc.opts)
			var ue *UnlockError
			if !errors.As(err, &ue) || len(ue.Slots) != 3 {
				t.Fatalf("Unlock: %v, want an *UnlockError with 3 slots", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%s\ndoes not say %q", err, w)
				}
			}
			for _, w := range tc.wantIs {
				if !errors.Is(err, w) {
					t.Errorf("error is not %v", w)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error\n%s\nholds the secret %q", err, w)
				}
			}
		})
	}
	if _, err := Unlock(t.TempDir(), UnlockOptions{Passphrase: []byte("x")}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), KeysFile) {
		t.Errorf("Unlock without keys.json: %v", err)
	}
	if _, err := Init(t.TempDir(), InitOptions{}); err == nil || !strings.Contains(err.Error(), "no unlock slot") {
		t.Errorf("Init without a slot: %v", err)
	}
	if _, err := Init(t.TempDir(), InitOptions{AgeRecipients: []string{"age1notakey"}}); err == nil || !strings.Contains(err.Error(), "age1notakey") {
		t.Errorf("Init with a bad recipient: %v", err)
	}
}

// TestManagement changes slots, the root key and the generations, and
// checks after each that data keys made before still unwrap after a new
// Unlock, and that only the slots in the file open it.
func TestManagement(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	pass := UnlockOptions{Passphrase: []byte("first")}
	k, err := Init(dir, InitOptions{Passphrase: pass.Passphrase})
	if err != nil {
		t.Fatal(err)
	}
	type made struct {
		aad []byte
		d   DataKey
	}
	var keys []made
	mk := func(k *Keys) {
		aad := []byte(fmt.Sprintf("file %d", len(keys)))
		d, err := k.NewDataKey(aad)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, made{aad, d})
	}
	check := func(step string, opts UnlockOptions) *Keys {
		t.Helper()
		u, err := Unlock(dir, opts)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for i, m := range keys {
			got, err := u.Unwrap(m.d.Gen, m.d.Wrapped[:], m.aad)
			if err != nil || got != m.d.Key {
				t.Fatalf("%s: data key %d (generation %d) does not unwrap: %v", step, i, m.d.Gen, err)
			}
		}
		checkMode(t, dir)
		return u
	}
	mk(k)

	id := newIdentity(t)
	ageOpts := UnlockOptions{AgeIdentities: []string{identityFile(id)}}
	if err := k.AddSlot(dir, InitOptions{AgeRecipients: []string{id.Recipient().String()}, Keyring: true}); err != nil {
		t.Fatal(err)
	}
	check("add-slot by passphrase", pass)
	byAge := check("add-slot by age", ageOpts)
	check("add-slot by keyring", UnlockOptions{Keyring: true})
	mk(byAge)

	// Unlocked by age, the Keys does not know the passphrase's key.
	old := byAge.root
	if err := byAge.RotateRoot(dir); err == nil || !strings.Contains(err.Error(), "slot 0 (passphrase)") {
		t.Fatalf("RotateRoot without the passphrase: %v", err)
	}
	if err := byAge.RotateRootWith(dir, UnlockOptions{Passphrase: []byte("wrong")}); !errors.Is(err, ErrWrongSecret) {
		t.Fatalf("RotateRootWith a wrong passphrase: %v", err)
	}
	if err := byAge.RotateRootWith(dir, pass); err != nil {
		t.Fatal(err)
	}
	if byAge.root == old {
		t.Fatal("RotateRoot kept the root key")
	}
	mk(byAge)
	for _, o := range []UnlockOptions{pass, ageOpts, {Keyring: true}} {
		if u := check("rotate", o); u.root != byAge.root {
			t.Fatal("unlocked root differs from the rotated one")
		}
	}
	// The Keys made by Init was not told: it refuses to change the file.
	if _, err := k.NewGeneration(dir); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "unlock it again") {
		t.Fatalf("NewGeneration with a stale root: %v", err)
	}
	// The rotated Keys now knows every slot's key: rotate again.
	if err := byAge.RotateRoot(dir); err != nil {
		t.Fatal(err)
	}
	check("second rotate", pass)

	g, err := byAge.NewGeneration(dir)
	if err != nil || g != 2 || byAge.Active() != 2 {
		t.Fatalf("NewGeneration = %d, %v; Active %d", g, err, byAge.Active())
	}
	mk(byAge)
	if keys[len(keys)-1].d.Gen != 2 {
		t.Fatalf("a data key after NewGeneration has generation %d", keys[len(keys)-1].d.Gen)
	}
	u := check("new generation", ageOpts)
	if u.Active() != 2 {
		t.Fatalf("Active after Unlock = %d, want 2", u.Active())
	}
	ng, w, err := u.Rewrap(keys[0].d.Gen, keys[0].d.Wrapped[:], keys[0].aad)
	if err != nil || ng != 2 {
		t.Fatalf("Rewrap = %d, %v", ng, err)
	}
	if got, err := u.Unwrap(ng, w[:], keys[0].aad); err != nil || got != keys[0].d.Key {
		t.Fatalf("rewrapped key: %v", err)
	}

	info, err := ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Slots) != 3 || info.Slots[1].Type != "age" || info.Slots[2].Type != "keyring" || len(info.Generations) != 2 || info.Active != 2 {
		t.Fatalf("ReadInfo = %+v", info)
	}

	// Remove the passphrase: it no longer opens; the others do.
	if err := u.RemoveSlot(dir, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Unlock(dir, pass); !errors.Is(err, ErrLocked) {
		t.Fatalf("Unlock by a removed passphrase: %v", err)
	}
	check("remove-slot", ageOpts)
	if err := u.RemoveSlot(dir, 5); err == nil || !strings.Contains(err.Error(), "no slot 5") {
		t.Fatalf("RemoveSlot(5): %v", err)
	}
	if err := u.RemoveSlot(dir, 1); err != nil {
		t.Fatal(err)
	}
	if err := u.RemoveSlot(dir, 0); err == nil || !strings.Contains(err.Error(), "last unlock slot") {
		t.Fatalf("removing the last slot: %v", err)
	}
	check("last slot", ageOpts)
	if _, err := Unlock(dir, UnlockOptions{Keyring: true}); !errors.Is(err, ErrLocked) {
		t.Fatalf("Unlock by a removed keyring slot: %v", err)
	}

	// Another directory's keys refuse to change this one.
	if err := Ephemeral().AddSlot(dir, InitOptions{Passphrase: []byte("x")}); err == nil || !strings.Contains(err.Error(), "belongs to data directory") {
		t.Fatalf("AddSlot by other keys: %v", err)
	}
}

// TestWriteFails checks that a failed write of keys.json changes neither
// the file nor the unlocked keys, and undoes a keyring entry it made.
func TestWriteFails(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	k, err := Init(dir, InitOptions{Passphrase: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, KeysFile))
	errDisk := errors.New("no space left on device")
	writeFile = func(string, []byte, fs.FileMode) error { return errDisk }
	defer func() { writeFile = origWriteFile }()

	root := k.root
	if _, err := k.NewGeneration(dir); !errors.Is(err, errDisk) {
		t.Fatalf("NewGeneration: %v", err)
	}
	if err := k.RotateRoot(dir); !errors.Is(err, errDisk) {
		t.Fatalf("RotateRoot: %v", err)
	}
	if err := k.AddSlot(dir, InitOptions{Keyring: true}); !errors.Is(err, errDisk) {
		t.Fatalf("AddSlot: %v", err)
	}
	if s, err := keyring.Get("bbengine", k.DirIDString()); err == nil {
		t.Errorf("a failed AddSlot left its keyring entry %q", s)
	}
	dir2 := t.TempDir()
	if _, err := Init(dir2, InitOptions{Keyring: true}); !errors.Is(err, errDisk) || Exists(dir2) {
		t.Fatalf("Init: %v", err)
	}
	if k.Active() != 1 || k.root != root {
		t.Fatal("a failed change changed the unlocked keys")
	}
	after, _ := os.ReadFile(filepath.Join(dir, KeysFile))
	if !bytes.Equal(before, after) {
		t.Fatal("a failed change changed keys.json")
	}
	writeFile = origWriteFile
	// The keys still change the file once writes work again.
	if g, err := k.NewGeneration(dir); err != nil || g != 2 {
		t.Fatalf("NewGeneration after the fault: %d, %v", g, err)
	}
	if _, err := Unlock(dir, UnlockOptions{Passphrase: []byte("pw")}); err != nil {
		t.Fatal(err)
	}
}

var origWriteFile = writeFile

// TestDamage flips each byte of each binary field of keys.json in turn:
// every flip is reported naming the field. A tampered field whose
// checksum was fixed up fails authentication, named where a key shows
// it.
func TestDamage(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	id := newIdentity(t)
	k, err := Init(dir, InitOptions{Passphrase: []byte("pw"), AgeRecipients: []string{id.Recipient().String()}, Keyring: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.NewGeneration(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, KeysFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fields := []struct {
		name string
		get  func(j *fileJSON) *string
	}{
		{"slots[0].salt", func(j *fileJSON) *string { return &j.Slots[0].Salt }},
		{"slots[0].root", func(j *fileJSON) *string { return &j.Slots[0].Root }},
		{"slots[1].age", func(j *fileJSON) *string { return &j.Slots[1].Age }},
		{"slots[1].root", func(j *fileJSON) *string { return &j.Slots[1].Root }},
		{"slots[2].root", func(j *fileJSON) *string { return &j.Slots[2].Root }},
		{"generations[0].key", func(j *fileJSON) *string { return &j.Generations[0].Key }},
		{"generations[1].key", func(j *fileJSON) *string { return &j.Generations[1].Key }},
		{"names", func(j *fileJSON) *string { return &j.Names }},
	}
	// rewrite writes keys.json with one field's stored bytes changed.
	rewrite := func(t *testing.T, field int, change func(b []byte) []byte) {
		t.Helper()
		var j fileJSON
		if err := json.Unmarshal(good, &j); err != nil {
			t.Fatal(err)
		}
		p := fields[field].get(&j)
		b, err := base64.StdEncoding.DecodeString(*p)
		if err != nil {
			t.Fatal(err)
		}
		*p = base64.StdEncoding.EncodeToString(change(b))
		out, err := json.MarshalIndent(j, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all := UnlockOptions{Passphrase: []byte("pw"), AgeIdentities: []string{identityFile(id)}, Keyring: true}
	for fi, f := range fields {
		t.Run(f.name, func(t *testing.T) {
			var n int
			rewrite(t, fi, func(b []byte) []byte { n = len(b); return b })
			for i := range n {
				rewrite(t, fi, func(b []byte) []byte { b[i] ^= 0x20; return b })
				ops := []func() error{func() error { _, err := ReadInfo(dir); return err }}
				if i == 0 || i == n-1 {
					// Unlock reads the file the same way.
					ops = append(ops, func() error { _, err := Unlock(dir, all); return err })
				}
				for _, op := range ops {
					err := op()
					var ke *KeysFileError
					if !errors.As(err, &ke) || ke.Field != f.name || ke.Path != path || !errors.Is(err, ErrDamagedKeys) {
						t.Fatalf("byte %d flipped: %v, want a *KeysFileError naming %s", i, err, f.name)
					}
				}
			}
			// Truncated by one byte: named too.
			rewrite(t, fi, func(b []byte) []byte { return b[:len(b)-1] })
			if _, err := ReadInfo(dir); err == nil || !strings.Contains(err.Error(), f.name) {
				t.Fatalf("truncated field: %v", err)
			}
		})
	}

	// Tampering with the checksum fixed up: the AEADs catch it.
	fix := func(i int) func(b []byte) []byte {
		return func(b []byte) []byte {
			b = b[:len(b)-4]
			b[i] ^= 1
			return []byte(base64Decode(encodeField(b)))
		}
	}
	for fi, f := range fields {
		rewrite(t, fi, fix(len(good)%7))
		// A tampered slot makes Unlock go on to the next slot; the
		// file's keys are checked whichever slot opened.
		if strings.HasPrefix(f.name, "generations") || f.name == "names" {
			_, err := Unlock(dir, all)
			var ke *KeysFileError
			if !errors.As(err, &ke) || ke.Field != f.name || !errors.Is(err, ErrAuth) {
				t.Errorf("%s tampered: %v, want it named as failing authentication", f.name, err)
			}
		}
		one := map[string]UnlockOptions{
			"slots[0].salt": {Passphrase: all.Passphrase},
			"slots[0].root": {Passphrase: all.Passphrase},
			"slots[1].root": {AgeIdentities: all.AgeIdentities},
			"slots[1].age":  {AgeIdentities: all.AgeIdentities},
			"slots[2].root": {Keyring: true},
		}
		if o, ok := one[f.name]; ok {
			if _, err := Unlock(dir, o); err == nil {
				t.Errorf("%s tampered, opened by that slot alone", f.name)
			} else if f.name == "slots[1].root" && !strings.Contains(err.Error(), "slots[1].root") {
				t.Errorf("%s tampered: %v, want it named", f.name, err)
			}
			// The other slots open, and then the file's MAC fails.
			var ke *KeysFileError
			if _, err := Unlock(dir, all); !errors.As(err, &ke) || ke.Field != "mac" || !errors.Is(err, ErrAuth) {
				t.Errorf("%s tampered, unlocked by another slot: %v, want the mac named", f.name, err)
			}
		}
	}

	for _, tc := range []struct{ name, from, to, want string }{
		{"syntax", `"format"`, `"format`, "not JSON at byte offset"},
		{"type", `"active": 2`, `"active": "2"`, "field active"},
		{"format", `"bbengine-keys/1"`, `"bbengine-keys/9"`, "field format"},
		{"cipher", `"aes-256-gcm"`, `"rot13"`, "field cipher"},
		{"dir id", `"dir_id": "`, `"dir_id": "zz`, "field dir_id"},
		{"kdf", `"kdf": "argon2id"`, `"kdf": "md5"`, "field slots[0].kdf"},
		{"kdf memory", `"memory_kib": 64`, `"memory_kib": 4000000000`, "argon2id memory_kib 4000000000 out of range"},
		{"slot type", `"type": "keyring"`, `"type": "tpm"`, "field slots[2].type"},
		{"active", `"active": 2`, `"active": 7`, "field active"},
		{"generation id", `"id": 2`, `"id": 1`, "field generations[1].id"},
		{"trailing", "", "{}", "data after the JSON object"},
	} {
		b := bytes.Replace(good, []byte(tc.from), []byte(tc.to), 1)
		if tc.from == "" {
			b = append(bytes.Clone(good), tc.to...)
		}
		if bytes.Equal(b, good) {
			t.Fatalf("%s: %q not in keys.json", tc.name, tc.from)
		}
		os.WriteFile(path, b, 0o600)
		_, err := ReadInfo(dir)
		if !errors.Is(err, ErrDamagedKeys) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
	}

	// Edits that parse, outside the key wraps: the MAC catches them once
	// a slot opened.
	for _, tc := range []struct{ name, from, to string }{
		{"active", `"active": 2`, `"active": 1`},
		{"retired", `"retired": false`, `"retired": true`},
		{"created", `"created": "20`, `"created": "19`},
		{"kdf time", `"time": 1,`, `"time": 2,`},
		{"recipient", id.Recipient().String(), newIdentity(t).Recipient().String()},
	} {
		os.WriteFile(path, bytes.Replace(good, []byte(tc.from), []byte(tc.to), 1), 0o600)
		if _, err := ReadInfo(dir); err != nil {
			t.Fatalf("%s: ReadInfo: %v", tc.name, err)
		}
		var ke *KeysFileError
		if _, err := Unlock(dir, all); !errors.As(err, &ke) || ke.Field != "mac" {
			t.Errorf("%s edited: Unlock: %v, want the mac named", tc.name, err)
		}
	}

	// Wraps swapped between roles fail their AAD, named.
	for _, tc := range []struct{ a, b, field string }{
		{"generations[0].key", "generations[1].key", "generations[0].key"},
		{"generations[0].key", "names", "generations[0].key"},
	} {
		var j fileJSON
		json.Unmarshal(good, &j)
		ptr := map[string]*string{"generations[0].key": &j.Generations[0].Key, "generations[1].key": &j.Generations[1].Key, "names": &j.Names}
		*ptr[tc.a], *ptr[tc.b] = *ptr[tc.b], *ptr[tc.a]
		b, _ := json.Marshal(j)
		os.WriteFile(path, b, 0o600)
		var ke *KeysFileError
		if _, err := Unlock(dir, all); !errors.As(err, &ke) || ke.Field != tc.field || !errors.Is(err, ErrAuth) {
			t.Errorf("%s and %s swapped: %v, want %s named", tc.a, tc.b, err, tc.field)
		}
	}

	// A changed directory id is in every wrap's AAD: nothing opens.
	var j fileJSON
	json.Unmarshal(good, &j)
	j.DirID = strings.Repeat("0", 32)
	b, _ := json.Marshal(j)
	os.WriteFile(path, b, 0o600)
	if _, err := Unlock(dir, all); !errors.Is(err, ErrLocked) {
		t.Errorf("changed dir_id: %v", err)
	}
	os.WriteFile(path, good, 0o600)
	if _, err := Unlock(dir, all); err != nil {
		t.Fatalf("the good file back: %v", err)
	}
}

// TestFlipEveryByte flips each byte of a keys.json in turn: no flip
// goes unnoticed, none panics.
func TestFlipEveryByte(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	id := newIdentity(t)
	k, err := Init(dir, InitOptions{Passphrase: []byte("pw"), AgeRecipients: []string{id.Recipient().String()}, Keyring: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.NewGeneration(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, KeysFile)
	good, _ := os.ReadFile(path)
	all := UnlockOptions{Passphrase: []byte("pw"), AgeIdentities: []string{identityFile(id)}, Keyring: true}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x01
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadInfo(dir); err != nil {
			continue // noticed without a key
		}
		if _, err := Unlock(dir, all); err == nil {
			t.Fatalf("byte %d (%q in %q) flipped: Unlock succeeded", i, good[i], good[max(0, i-20):min(len(good), i+20)])
		}
	}
}

func base64Decode(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// TestConcurrentUse makes and unwraps data keys while the key file is
// changed: under -race, no data race; every data key unwraps.
func TestConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	k, err := Init(dir, InitOptions{Passphrase: []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			var err error
			defer func() { errs <- err }()
			aad := []byte{byte(w)}
			for {
				select {
				case <-done:
					return
				default:
				}
				var d DataKey
				if d, err = k.NewDataKey(aad); err != nil {
					return
				}
				var got [KeySize]byte
				if got, err = k.Unwrap(d.Gen, d.Wrapped[:], aad); err == nil && got != d.Key {
					err = errors.New("unwrapped a different key")
				}
				if err != nil {
					return
				}
				k.NameHash().Write(aad)
			}
		}()
	}
	for i := range 10 {
		if i%2 == 0 {
			_, err = k.NewGeneration(dir)
		} else {
			err = k.RotateRoot(dir)
		}
		if err != nil {
			break
		}
	}
	close(done)
	for range 4 {
		if werr := <-errs; werr != nil {
			t.Error(werr)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if k.Active() != 6 {
		t.Errorf("Active = %d, want 6", k.Active())
	}
}

func sliceOf(k [KeySize]byte) []byte { return k[:] }

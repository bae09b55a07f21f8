package crypt

import (
	"bytes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/bbengine/bbengine/internal/private"
	"github.com/bbengine/bbengine/internal/safefile"
)

// KeysFile is the name of the key file in an encrypted data directory.
// Its presence makes the directory encrypted.
const KeysFile = "keys.json"

// Format strings of keys.json.
const (
	keysFormat = "bbengine-keys/1"
	keysCipher = "aes-256-gcm"
)

// maxKeysFile bounds what is read of keys.json: a real one is a few KiB.
const maxKeysFile = 1 << 20

// Slot types.
const (
	SlotPassphrase = "passphrase"
	SlotAge        = "age"
	SlotKeyring    = "keyring"
)

// keyringService is the service name of every keyring slot's secret.
const keyringService = "bbengine"

// ErrDamagedKeys is what every *KeysFileError unwraps to.
var ErrDamagedKeys = errors.New("crypt: keys file damaged")

// KeysFileError reports a keys.json that does not parse or whose field
// fails its checksum or authentication.
type KeysFileError struct {
	// Path names the file.
	Path string
	// Field names the field, as slots[1].root; empty when the file as a
	// whole does not parse.
	Field string
	// Err says what is wrong.
	Err error
}

func (e *KeysFileError) Error() string {
	f := ""
	if e.Field != "" {
		f = " field " + e.Field + ":"
	}
	return fmt.Sprintf("crypt: %s:%s %v (the keys file is damaged; restore it from a backup)", e.Path, f, e.Err)
}

// Unwrap makes errors.Is(err, ErrDamagedKeys) hold, and errors.Is(err,
// ErrAuth) when a wrap failed authentication.
func (e *KeysFileError) Unwrap() []error { return []error{ErrDamagedKeys, e.Err} }

// fileJSON is keys.json as it is stored (docs/format/crypt.md). Every
// binary field is base64 (standard, padded) of the bytes followed by
// their CRC-32C (Castagnoli, little-endian), so a damaged field is named
// without any key; the wraps' GCM tags authenticate them.
type fileJSON struct {
	Format      string     `json:"format"`
	DirID       string     `json:"dir_id"`
	Created     time.Time  `json:"created"`
	Cipher      string     `json:"cipher"`
	Slots       []slotJSON `json:"slots"`
	Generations []genJSON  `json:"generations"`
	Active      uint32     `json:"active"`
	Names       string     `json:"names"`
	MAC         string     `json:"mac"`
}

type slotJSON struct {
	Type    string    `json:"type"`
	Created time.Time `json:"created"`

	// Passphrase slots.
	KDF       string `json:"kdf,omitempty"`
	Time      uint32 `json:"time,omitempty"`
	MemoryKiB uint32 `json:"memory_kib,omitempty"`
	Threads   uint8  `json:"threads,omitempty"`
	Salt      string `json:"salt,omitempty"`

	// Age slots.
	Recipient string `json:"recipient,omitempty"`
	Age       string `json:"age,omitempty"`

	// Keyring slots.
	Service string `json:"service,omitempty"`
	Account string `json:"account,omitempty"`

	Root string `json:"root"`
}

type genJSON struct {
	ID      uint32    `json:"id"`
	Created time.Time `json:"created"`
	Key     string    `json:"key"`
	Retired bool      `json:"retired"`
}

// keyFile is keys.json decoded and checked, without any key.
type keyFile struct {
	path string
	// canon is the file's canonical encoding (compact, mac empty) and
	// mac its HMAC under the root key, as read.
	canon []byte
	mac   []byte

	dirID   [DirIDSize]byte
	created time.Time
	slots   []slot
	gens    []gen
	active  uint32
	names   [WrappedSize]byte
}

// slot is one unlock slot: a way to get a key-encryption key (kek) that
// opens root, the root key wrapped.
type slot struct {
	typ     string
	created time.Time

	kdf  kdfParams
	salt [SaltSize]byte

	recipient string
	age       []byte

	service, account string

	root [WrappedSize]byte
}

type gen struct {
	id      uint32
	created time.Time
	key     [WrappedSize]byte
	retired bool
}

// kdfParams are a passphrase slot's argon2id parameters.
type kdfParams struct {
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

// Bounds on the argon2id parameters read from a file, so a damaged or
// hostile keys.json cannot make Unlock allocate without limit.
const (
	maxKDFTime   = 64
	maxKDFMemory = 4 << 20 // KiB: 4 GiB
)

// passphraseKDF is the argon2id parameters new passphrase slots get:
// RFC 9106's second recommended option, 62 ms per call here. Tests
// lower it so the suite stays fast.
var passphraseKDF = kdfParams{Time: 3, MemoryKiB: 64 << 10, Threads: 4}

func (p kdfParams) check() error {
	switch {
	case p.Time < 1 || p.Time > maxKDFTime:
		return fmt.Errorf("argon2id time %d out of range [1, %d]", p.Time, maxKDFTime)
	case p.Threads < 1:
		return fmt.Errorf("argon2id threads %d out of range [1, 255]", p.Threads)
	case p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > maxKDFMemory:
		return fmt.Errorf("argon2id memory_kib %d out of range [%d, %d]", p.MemoryKiB, 8*uint32(p.Threads), maxKDFMemory)
	}
	return nil
}

// id names the slot for the in-memory cache of key-encryption keys: it
// is unique within a file and survives RotateRoot.
func (s *slot) id() string {
	switch s.typ {
	case SlotPassphrase:
		return "passphrase " + string(s.salt[:])
	case SlotKeyring:
		return "keyring " + s.service + " " + s.account
	}
	return "age " + string(s.age)
}

// describe names the slot in messages: its index, type and recipient.
func (s *slot) describe(i int) string {
	if s.typ == SlotAge {
		return fmt.Sprintf("slot %d (age %s)", i, s.recipient)
	}
	return fmt.Sprintf("slot %d (%s)", i, s.typ)
}

// Associated data of the wraps in keys.json, each naming its role and
// the directory's id.
func rootAAD(dirID [DirIDSize]byte, typ string) []byte {
	return append(append([]byte(keysFormat+" root"), dirID[:]...), typ...)
}

func genAAD(dirID [DirIDSize]byte, id uint32) []byte {
	return binary.LittleEndian.AppendUint32(append([]byte(keysFormat+" gen"), dirID[:]...), id)
}

func namesAAD(dirID [DirIDSize]byte) []byte {
	return append([]byte(keysFormat+" names"), dirID[:]...)
}

// wrap seals a 32-byte key under kek with a random nonce.
func wrap(kek, key [KeySize]byte, ad []byte) ([WrappedSize]byte, error) {
	var w [WrappedSize]byte
	if _, err := rand.Read(w[:NonceSize]); err != nil {
		return w, fmt.Errorf("crypt: random nonce: %w", err)
	}
	NewAEAD(kek).Seal(w[:NonceSize], w[:NonceSize], key[:], ad)
	return w, nil
}

// unwrap opens what wrap sealed; it returns ErrAuth when kek or ad differ
// or w was changed.
func unwrap(kek [KeySize]byte, w [WrappedSize]byte, ad []byte) ([KeySize]byte, error) {
	var key [KeySize]byte
	out, err := NewAEAD(kek).Open(key[:0], w[:NonceSize], w[NonceSize:], ad)
	if err != nil || len(out) != KeySize {
		return key, ErrAuth
	}
	return key, nil
}

// strictB64 decodes the file's base64: strict, so that no two texts
// decode to the same bytes and every changed character is caught.
var strictB64 = base64.StdEncoding.Strict()

// encodeField is a binary field's stored form: base64 of b and its
// CRC-32C.
func encodeField(b []byte) string {
	out := binary.LittleEndian.AppendUint32(append([]byte(nil), b...), crc32.Checksum(b, castagnoli))
	return base64.StdEncoding.EncodeToString(out)
}

// decodeField reverses encodeField. want is the field's size, or -1 for
// any.
func decodeField(s string, want int) ([]byte, error) {
	b, err := strictB64.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %v", err)
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("%d bytes, too short to hold its checksum", len(b))
	}
	b, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(b, castagnoli); got != sum {
		return nil, fmt.Errorf("checksum mismatch (%08x, want %08x): the field was changed or damaged", got, sum)
	}
	if want >= 0 && len(b) != want {
		return nil, fmt.Errorf("%d bytes, want %d", len(b), want)
	}
	return b, nil
}

// readKeyFile reads and checks path. A missing file is an error that
// unwraps to fs.ErrNotExist; anything else wrong is a *KeysFileError
// naming the field.
func readKeyFile(path string) (*keyFile, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("crypt: %s is missing: the directory is not encrypted, or its keys file was lost (restore it from a backup): %w", path, err)
		}
		return nil, fmt.Errorf("crypt: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeysFile+1))
	if err != nil {
		return nil, fmt.Errorf("crypt: read %s: %w", path, err)
	}
	if len(b) > maxKeysFile {
		return nil, &KeysFileError{Path: path, Err: fmt.Errorf("larger than %d bytes", maxKeysFile)}
	}
	return parseKeyFile(path, b)
}

func parseKeyFile(path string, b []byte) (*keyFile, error) {
	bad := func(field string, format string, args ...any) error {
		return &KeysFileError{Path: path, Field: field, Err: fmt.Errorf(format, args...)}
	}
	var j fileJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, bad("", "not JSON at byte offset %d: %v", se.Offset, err)
		case errors.As(err, &te):
			return nil, bad(te.Field, "at byte offset %d: %v", te.Offset, err)
		}
		return nil, bad("", "%v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, bad("", "data after the JSON object at byte offset %d", d.InputOffset())
	}
	if j.Format != keysFormat {
		return nil, bad("format", "%q, this build reads %q", j.Format, keysFormat)
	}
	if j.Cipher != keysCipher {
		return nil, bad("cipher", "%q, this build knows %q", j.Cipher, keysCipher)
	}
	kf := &keyFile{path: path, created: j.Created, active: j.Active}
	mac, err := strictB64.DecodeString(j.MAC)
	if err != nil || len(mac) != sha256.Size {
		return nil, bad("mac", "not %d bytes in base64", sha256.Size)
	}
	kf.mac = mac
	j.MAC = ""
	if kf.canon, err = json.Marshal(j); err != nil {
		return nil, bad("", "%v", err)
	}
	if id, err := hex.DecodeString(j.DirID); err != nil || len(id) != DirIDSize {
		return nil, bad("dir_id", "%q is not %d bytes in hex", j.DirID, DirIDSize)
	} else {
		copy(kf.dirID[:], id)
	}
	if len(j.Slots) == 0 {
		return nil, bad("slots", "no unlock slot: nothing can open the keys")
	}
	for i, sj := range j.Slots {
		s, err := parseSlot(sj)
		if err != nil {
			var fe *fieldError
			if errors.As(err, &fe) {
				return nil, bad(fmt.Sprintf("slots[%d].%s", i, fe.field), "%v", fe.err)
			}
			return nil, bad(fmt.Sprintf("slots[%d]", i), "%v", err)
		}
		kf.slots = append(kf.slots, s)
	}
	if len(j.Generations) == 0 {
		return nil, bad("generations", "no key generation")
	}
	seen := map[uint32]bool{}
	for i, gj := range j.Generations {
		field := fmt.Sprintf("generations[%d]", i)
		if gj.ID == 0 || seen[gj.ID] {
			return nil, bad(field+".id", "%d is zero or repeated", gj.ID)
		}
		seen[gj.ID] = true
		g := gen{id: gj.ID, created: gj.Created, retired: gj.Retired}
		w, err := decodeField(gj.Key, WrappedSize)
		if err != nil {
			return nil, bad(field+".key", "%v", err)
		}
		copy(g.key[:], w)
		kf.gens = append(kf.gens, g)
	}
	if g := kf.gen(j.Active); g == nil || g.retired {
		return nil, bad("active", "generation %d is not a live generation of the file", j.Active)
	}
	w, err := decodeField(j.Names, WrappedSize)
	if err != nil {
		return nil, bad("names", "%v", err)
	}
	copy(kf.names[:], w)
	return kf, nil
}

// fieldError names the field of a slot that failed.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }

func parseSlot(sj slotJSON) (slot, error) {
	s := slot{typ: sj.Type, created: sj.Created}
	field := func(name, v string, size int) ([]byte, error) {
		b, err := decodeField(v, size)
		if err != nil {
			return nil, &fieldError{name, err}
		}
		return b, nil
	}
	switch sj.Type {
	case SlotPassphrase:
		if sj.KDF != "argon2id" {
			return s, &fieldError{"kdf", fmt.Errorf("%q, this build knows argon2id", sj.KDF)}
		}
		s.kdf = kdfParams{Time: sj.Time, MemoryKiB: sj.MemoryKiB, Threads: sj.Threads}
		if err := s.kdf.check(); err != nil {
			return s, err
		}
		b, err := field("salt", sj.Salt, SaltSize)
		if err != nil {
			return s, err
		}
		copy(s.salt[:], b)
	case SlotAge:
		if sj.Recipient == "" {
			return s, &fieldError{"recipient", errors.New("missing")}
		}
		s.recipient = sj.Recipient
		b, err := field("age", sj.Age, -1)
		if err != nil {
			return s, err
		}
		s.age = b
	case SlotKeyring:
		if sj.Service == "" || sj.Account == "" {
			return s, &fieldError{"account", errors.New("service or account missing")}
		}
		s.service, s.account = sj.Service, sj.Account
	default:
		return s, &fieldError{"type", fmt.Errorf("unknown slot type %q", sj.Type)}
	}
	b, err := field("root", sj.Root, WrappedSize)
	if err != nil {
		return s, err
	}
	copy(s.root[:], b)
	return s, nil
}

func (kf *keyFile) gen(id uint32) *gen {
	for i := range kf.gens {
		if kf.gens[i].id == id {
			return &kf.gens[i]
		}
	}
	return nil
}

// macKey is the key of keys.json's MAC, derived from the root key.
func macKey(root [KeySize]byte, dirID [DirIDSize]byte) []byte {
	h := hmac.New(sha256.New, root[:])
	h.Write([]byte(keysFormat + " mac"))
	h.Write(dirID[:])
	return h.Sum(nil)
}

func fileMAC(root [KeySize]byte, dirID [DirIDSize]byte, canon []byte) []byte {
	h := hmac.New(sha256.New, macKey(root, dirID))
	h.Write(canon)
	return h.Sum(nil)
}

// verify checks the file's MAC under root: it covers every field, so a
// change outside the key wraps (kdf parameters, recipients, times,
// generation ids, retired flags, active) is caught once a slot opened.
func (kf *keyFile) verify(root [KeySize]byte) error {
	if !hmac.Equal(fileMAC(root, kf.dirID, kf.canon), kf.mac) {
		return &KeysFileError{Path: kf.path, Field: "mac", Err: fmt.Errorf("the file does not authenticate under its root key: a field was edited after it was written: %w", ErrAuth)}
	}
	return nil
}

// marshal encodes kf as keys.json, with its MAC under root.
func (kf *keyFile) marshal(root [KeySize]byte) ([]byte, error) {
	j := fileJSON{
		Format:  keysFormat,
		DirID:   hex.EncodeToString(kf.dirID[:]),
		Created: kf.created.UTC(),
		Cipher:  keysCipher,
		Active:  kf.active,
		Names:   encodeField(kf.names[:]),
	}
	for _, s := range kf.slots {
		sj := slotJSON{Type: s.typ, Created: s.created.UTC(), Root: encodeField(s.root[:])}
		switch s.typ {
		case SlotPassphrase:
			sj.KDF, sj.Time, sj.MemoryKiB, sj.Threads = "argon2id", s.kdf.Time, s.kdf.MemoryKiB, s.kdf.Threads
			sj.Salt = encodeField(s.salt[:])
		case SlotAge:
			sj.Recipient, sj.Age = s.recipient, encodeField(s.age)
		case SlotKeyring:
			sj.Service, sj.Account = s.service, s.account
		}
		j.Slots = append(j.Slots, sj)
	}
	for _, g := range kf.gens {
		j.Generations = append(j.Generations, genJSON{ID: g.id, Created: g.created.UTC(), Key: encodeField(g.key[:]), Retired: g.retired})
	}
	canon, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	j.MAC = base64.StdEncoding.EncodeToString(fileMAC(root, kf.dirID, canon))
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// write replaces kf.path atomically, 0600, and syncs its directory.
// root is the root key the file's MAC is made with.
func (kf *keyFile) write(root [KeySize]byte) error {
	b, err := kf.marshal(root)
	if err != nil {
		return fmt.Errorf("crypt: encode %s: %w", kf.path, err)
	}
	if err := writeFile(kf.path, b, private.FileMode); err != nil {
		return fmt.Errorf("crypt: %w", err)
	}
	return nil
}

// open unwraps the generation keys and the name key with root into a
// *Keys. A wrap that fails is a *KeysFileError naming it: the root key
// opened, so the file was changed.
func (kf *keyFile) open(root [KeySize]byte) (*Keys, error) {
	gens, names, err := kf.unwrapAll(root)
	if err != nil {
		return nil, err
	}
	if err := kf.verify(root); err != nil {
		return nil, err
	}
	return &Keys{dirID: kf.dirID, root: root, names: names, gens: aeads(kf.live(gens)), active: kf.active}, nil
}

// unwrapAll returns the generation keys and the name key under root.
func (kf *keyFile) unwrapAll(root [KeySize]byte) (map[uint32][KeySize]byte, [KeySize]byte, error) {
	gens := map[uint32][KeySize]byte{}
	for i, g := range kf.gens {
		key, err := unwrap(root, g.key, genAAD(kf.dirID, g.id))
		if err != nil {
			return nil, [KeySize]byte{}, &KeysFileError{Path: kf.path, Field: fmt.Sprintf("generations[%d].key", i), Err: fmt.Errorf("does not authenticate under the root key: %w", err)}
		}
		gens[g.id] = key
	}
	names, err := unwrap(root, kf.names, namesAAD(kf.dirID))
	if err != nil {
		return nil, names, &KeysFileError{Path: kf.path, Field: "names", Err: fmt.Errorf("does not authenticate under the root key: %w", err)}
	}
	return gens, names, nil
}

// live drops the retired generations from gens: a data key still wrapped
// by one fails with ErrUnknownGeneration, not a bare ErrAuth.
func (kf *keyFile) live(gens map[uint32][KeySize]byte) map[uint32][KeySize]byte {
	for _, g := range kf.gens {
		if g.retired {
			delete(gens, g.id)
		}
	}
	return gens
}

func aeads(gens map[uint32][KeySize]byte) map[uint32]cipher.AEAD {
	m := make(map[uint32]cipher.AEAD, len(gens))
	for id, g := range gens {
		m[id] = NewAEAD(g)
	}
	return m
}

// writeFile replaces keys.json; tests make it fail.
var writeFile = safefile.WriteFileSynced

// keysPath is dir's keys file.
func keysPath(dir string) string { return filepath.Join(dir, KeysFile) }

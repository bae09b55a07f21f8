package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// KeySize is the size of every key: AES-256.
const KeySize = 32

// NonceSize and TagSize are AES-GCM's.
const (
	NonceSize = 12
	TagSize   = 16
)

// WrappedSize is the size of a wrapped key: nonce, ciphertext, tag.
const WrappedSize = NonceSize + KeySize + TagSize

// DirIDSize is the size of a data directory's id.
const DirIDSize = 16

// Errors.
var (
	// ErrAuth reports that a wrapped key or an encrypted message failed
	// authentication: it was changed after it was written, or it belongs
	// to another key, file or data directory.
	ErrAuth = errors.New("crypt: authentication failed")
	// ErrUnknownGeneration reports a data key wrapped by a generation key
	// this key set does not hold (retired, or another directory's).
	ErrUnknownGeneration = errors.New("crypt: unknown key generation")
)

// Keys is the unlocked key set of an encrypted data directory: its id,
// its generation keys and its blob name key. Init and Unlock make it from
// the directory's keys.json; AddSlot, RemoveSlot, RotateRoot and
// NewGeneration change that file and the set together. It is safe for
// concurrent use.
type Keys struct {
	dirID [DirIDSize]byte
	root  [KeySize]byte
	names [KeySize]byte

	mu     sync.RWMutex
	gens   map[uint32]cipher.AEAD
	active uint32

	// file serialises the changes to keys.json (AddSlot, RotateRoot, ...).
	file sync.Mutex
	// keks holds, by slot id, the key-encryption keys of the slots this
	// Keys made or was unlocked by, so RotateRoot can wrap a new root
	// key under them. Guarded by file.
	keks map[string][KeySize]byte
}

// DataKey is a fresh data key and its wrapped form, ready to be stored
// in a file's header.
type DataKey struct {
	// Gen is the generation key that wrapped Key.
	Gen uint32
	// Key is the plaintext data key. It never reaches the disk.
	Key [KeySize]byte
	// Wrapped is Key wrapped by generation Gen, bound to the AAD it was
	// made with.
	Wrapped [WrappedSize]byte
}

// Ephemeral returns a new key set that lives only in memory: a random
// directory id, root, name key and one generation. Tests use it; a data
// directory's keys come from its keys.json.
func Ephemeral() *Keys {
	k := &Keys{gens: map[uint32]cipher.AEAD{}}
	mustRand(k.dirID[:])
	mustRand(k.root[:])
	mustRand(k.names[:])
	var g [KeySize]byte
	mustRand(g[:])
	k.gens[1] = NewAEAD(g)
	k.active = 1
	return k
}

// DirID returns the data directory's id, which every wrap is bound to.
func (k *Keys) DirID() [DirIDSize]byte { return k.dirID }

// DirIDString returns the directory id in hex.
func (k *Keys) DirIDString() string { return hex.EncodeToString(k.dirID[:]) }

// Active returns the generation new data keys are wrapped by.
func (k *Keys) Active() uint32 {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.active
}

// NewDataKey makes a random data key and wraps it by the active
// generation. aad binds the wrapped key to its place (a segment base, a
// file header, a blob name): Unwrap must be given the same aad.
func (k *Keys) NewDataKey(aad []byte) (DataKey, error) {
	k.mu.RLock()
	gen, g := k.active, k.gens[k.active]
	k.mu.RUnlock()
	var d DataKey
	if g == nil {
		return d, fmt.Errorf("crypt: no active key generation")
	}
	d.Gen = gen
	if _, err := rand.Read(d.Key[:]); err != nil {
		return d, fmt.Errorf("crypt: random data key: %w", err)
	}
	if _, err := rand.Read(d.Wrapped[:NonceSize]); err != nil {
		return d, fmt.Errorf("crypt: random nonce: %w", err)
	}
	ad := k.dataAAD(gen, aad)
	g.Seal(d.Wrapped[:NonceSize], d.Wrapped[:NonceSize], d.Key[:], ad)
	return d, nil
}

// Unwrap returns the data key that generation gen wrapped with aad. It
// returns ErrUnknownGeneration when gen is not held and ErrAuth when the
// wrapped bytes or aad differ from what NewDataKey made.
func (k *Keys) Unwrap(gen uint32, wrapped []byte, aad []byte) ([KeySize]byte, error) {
	var key [KeySize]byte
	k.mu.RLock()
	g := k.gens[gen]
	k.mu.RUnlock()
	if g == nil {
		return key, fmt.Errorf("%w %d", ErrUnknownGeneration, gen)
	}
	if len(wrapped) != WrappedSize {
		return key, fmt.Errorf("crypt: wrapped key is %d bytes, want %d", len(wrapped), WrappedSize)
	}
	out, err := g.Open(key[:0], wrapped[:NonceSize], wrapped[NonceSize:], k.dataAAD(gen, aad))
	if err != nil || len(out) != KeySize {
		return key, ErrAuth
	}
	return key, nil
}

// Rewrap re-wraps a data key from generation gen to the active one
// without changing the data key itself, so the data it encrypts is not
// rewritten. It returns the new generation and wrapped bytes.
func (k *Keys) Rewrap(gen uint32, wrapped []byte, aad []byte) (uint32, [WrappedSize]byte, error) {
	var out [WrappedSize]byte
	key, err := k.Unwrap(gen, wrapped, aad)
	if err != nil {
		return 0, out, err
	}
	k.mu.RLock()
	ngen, g := k.active, k.gens[k.active]
	k.mu.RUnlock()
	if _, err := rand.Read(out[:NonceSize]); err != nil {
		return 0, out, fmt.Errorf("crypt: random nonce: %w", err)
	}
	g.Seal(out[:NonceSize], out[:NonceSize], key[:], k.dataAAD(ngen, aad))
	return ngen, out, nil
}

// dataAAD is the associated data of a data key's wrap.
func (k *Keys) dataAAD(gen uint32, aad []byte) []byte {
	ad := make([]byte, 0, 16+DirIDSize+4+len(aad))
	ad = append(ad, "bbengine dek/1\x00\x00"...)
	ad = append(ad, k.dirID[:]...)
	ad = binary.LittleEndian.AppendUint32(ad, gen)
	return append(ad, aad...)
}

// NameHash returns a new HMAC-SHA256 under the directory's blob name key.
// Blobs of an encrypted directory are named by it rather than by SHA-256,
// which would let anyone who can list the directory confirm a guessed
// content.
func (k *Keys) NameHash() hash.Hash { return hmac.New(sha256.New, k.names[:]) }

// NewAEAD returns AES-256-GCM under key. It never fails for a 32-byte
// key.
func NewAEAD(key [KeySize]byte) cipher.AEAD {
	b, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err)
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return a
}

func mustRand(b []byte) {
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypt: crypto/rand: %v", err))
	}
}

// addGeneration adds a random generation key and makes it active.
func (k *Keys) addGeneration() error {
	var g [KeySize]byte
	if _, err := rand.Read(g[:]); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	id := k.active + 1
	for k.gens[id] != nil {
		id++
	}
	k.gens[id] = NewAEAD(g)
	k.active = id
	return nil
}

// Derive returns a key set derived from seed alone (SHA-256 of the seed
// and each key's name): generations gens (1 when none are given), of
// which active is the active one. Anyone who knows seed holds these
// keys, so it is for tests: processes of one test that must share keys
// (a crash test's parent and child) and inputs that must be the same
// bytes on every run (fuzz corpora). A data directory's keys come from
// its keys.json (Init, Unlock).
func Derive(seed string, active uint32, gens ...uint32) *Keys {
	sum := func(s string) [KeySize]byte { return sha256.Sum256([]byte(seed + "/" + s)) }
	k := &Keys{gens: map[uint32]cipher.AEAD{}, active: active}
	d := sum("dir")
	copy(k.dirID[:], d[:])
	k.root, k.names = sum("root"), sum("names")
	if len(gens) == 0 {
		gens = []uint32{1}
	}
	for _, g := range gens {
		k.gens[g] = NewAEAD(sum(fmt.Sprint("gen", g)))
	}
	return k
}

// UseGeneration makes gen, which k must hold, the generation new data
// keys are wrapped by, in this key set only. Tests use it to rotate a
// live key set; bbengine rotates through keys.json (NewGeneration).
func (k *Keys) UseGeneration(gen uint32) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gens[gen] == nil {
		return fmt.Errorf("%w %d", ErrUnknownGeneration, gen)
	}
	k.active = gen
	return nil
}

package crypt

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/bbengine/bbengine/internal/private"
)

// InitOptions name the unlock slots Init and AddSlot make: one per secret
// set. At least one is required.
type InitOptions struct {
	// Passphrase makes a passphrase slot: argon2id (t=3, m=64 MiB, p=4)
	// of it, with a random 16-byte salt, wraps the root key. The
	// default, empty, makes none.
	Passphrase []byte
	// AgeRecipients make one age slot each: a random slot key, encrypted
	// to the recipient ("age1..."), wraps the root key. Only the public
	// key is needed. The default is none.
	AgeRecipients []string
	// Keyring makes an OS keyring slot: a random slot key stored in the
	// OS keyring (service "bbengine", account the directory id in hex)
	// wraps the root key. The default is false.
	Keyring bool
	// Now is the slots' (and Init's) creation time. The default, zero,
	// is time.Now.
	Now time.Time
}

// UnlockOptions are the secrets Unlock tries. The default, zero, opens
// nothing.
type UnlockOptions struct {
	// Passphrase opens passphrase slots.
	Passphrase []byte
	// AgeIdentities are the contents of age identity files
	// (AGE-SECRET-KEY-1... lines); they open age slots.
	AgeIdentities []string
	// Keyring asks the OS keyring for the keyring slot's secret.
	Keyring bool
}

// Info describes keys.json without any key: for `bbengine key status`,
// backup manifests and du.
type Info struct {
	// DirID is the data directory's id in hex.
	DirID string
	// Created is when Init made the file.
	Created time.Time
	// Slots are the unlock slots, in the order RemoveSlot numbers them.
	Slots []SlotInfo
	// Generations are the key generations, oldest first.
	Generations []GenInfo
	// Active is the generation new files are written with.
	Active uint32
}

// SlotInfo describes one unlock slot.
type SlotInfo struct {
	// Type is passphrase, age or keyring.
	Type string
	// Recipient is an age slot's recipient, "age1...".
	Recipient string
	// Created is when the slot was added.
	Created time.Time
}

// GenInfo describes one key generation.
type GenInfo struct {
	ID      uint32
	Created time.Time
	Retired bool
}

// Exists reports whether dir, a data directory, has a keys file: it is
// encrypted. Anything at the path counts, so a keys.json that cannot be
// read still makes the directory refuse to open without keys.
func Exists(dir string) bool {
	_, err := os.Lstat(keysPath(dir))
	return err == nil
}

// Init creates dir/keys.json (0600; dir is made, or made owner-only) with
// a random directory id, root key, generation 1 (active) and blob name
// key, and one unlock slot per secret opts sets. It fails when keys.json
// exists. The caller holds the directory's lock. A keyring that cannot
// be reached is an error that names the cause and asks for a passphrase
// or an age recipient; nothing is written then.
func Init(dir string, opts InitOptions) (*Keys, error) {
	if err := private.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("crypt: %w", err)
	}
	path := keysPath(dir)
	if Exists(dir) {
		return nil, fmt.Errorf("crypt: %s exists: the directory is encrypted already: %w", path, fs.ErrExist)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	kf := &keyFile{path: path, created: now.UTC().Truncate(time.Second), active: 1}
	var root, names, g1 [KeySize]byte
	for _, b := range [][]byte{kf.dirID[:], root[:], names[:], g1[:]} {
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("crypt: random key: %w", err)
		}
	}
	gw, err := wrap(root, g1, genAAD(kf.dirID, 1))
	if err != nil {
		return nil, err
	}
	kf.gens = []gen{{id: 1, created: kf.created, key: gw}}
	if kf.names, err = wrap(root, names, namesAAD(kf.dirID)); err != nil {
		return nil, err
	}
	m, err := newSlots(kf.dirID, root, opts, nil)
	if err != nil {
		return nil, err
	}
	kf.slots = m.slots
	if err := kf.write(root); err != nil {
		m.undo()
		return nil, err
	}
	return &Keys{dirID: kf.dirID, root: root, names: names, gens: aeads(map[uint32][KeySize]byte{1: g1}), active: 1, keks: m.keks}, nil
}

// Unlock reads dir/keys.json and opens the first slot that opts open. A
// missing file unwraps to fs.ErrNotExist; a damaged one is a
// *KeysFileError naming the field. When no slot opens it returns an
// *UnlockError that says why for each slot and never holds a secret.
func Unlock(dir string, opts UnlockOptions) (*Keys, error) {
	kf, err := readKeyFile(keysPath(dir))
	if err != nil {
		return nil, err
	}
	sc := newSecrets(opts)
	var fails []SlotError
	for i := range kf.slots {
		s := &kf.slots[i]
		fail := func(err error) {
			fails = append(fails, SlotError{Index: i, Type: s.typ, Recipient: s.recipient, Err: err})
		}
		kek, err := sc.kek(s)
		if err != nil {
			fail(err)
			continue
		}
		root, err := unwrap(kek, s.root, rootAAD(kf.dirID, s.typ))
		if err != nil {
			fail(wrongSecret(kf.path, s, i))
			continue
		}
		k, err := kf.open(root)
		if err != nil {
			return nil, err
		}
		k.keks = map[string][KeySize]byte{s.id(): kek}
		return k, nil
	}
	return nil, &UnlockError{Path: kf.path, Slots: fails}
}

// wrongSecret is why slot i's secret, once had, did not open its root
// wrap.
func wrongSecret(path string, s *slot, i int) error {
	switch s.typ {
	case SlotPassphrase:
		return errBadPassphrase
	case SlotAge:
		// The identity matched: the slot key is what age sealed, so
		// the wrap itself was changed.
		return &KeysFileError{Path: path, Field: fmt.Sprintf("slots[%d].root", i), Err: fmt.Errorf("does not authenticate under the slot key: %w", ErrAuth)}
	}
	return &reason{"the OS keyring's secret does not open it (the entry was replaced)", ErrWrongSecret}
}

// ReadInfo describes dir/keys.json without any key.
func ReadInfo(dir string) (Info, error) {
	kf, err := readKeyFile(keysPath(dir))
	if err != nil {
		return Info{}, err
	}
	info := Info{DirID: hex.EncodeToString(kf.dirID[:]), Created: kf.created, Active: kf.active}
	for _, s := range kf.slots {
		info.Slots = append(info.Slots, SlotInfo{Type: s.typ, Recipient: s.recipient, Created: s.created})
	}
	for _, g := range kf.gens {
		info.Generations = append(info.Generations, GenInfo{ID: g.id, Created: g.created, Retired: g.retired})
	}
	return info, nil
}

// change applies fn to dir's keys.json and writes it back atomically,
// then takes up its new root key, generations and active generation. The
// file is read again, not taken from memory, so a change made by another
// Keys is kept; it must open under k's root key. fn returns the new root
// key and the key-encryption keys of slots it made or re-wrapped.
func (k *Keys) change(dir string, fn func(kf *keyFile, root [KeySize]byte) ([KeySize]byte, map[string][KeySize]byte, error)) error {
	k.file.Lock()
	defer k.file.Unlock()
	kf, err := readKeyFile(keysPath(dir))
	if err != nil {
		return err
	}
	if kf.dirID != k.dirID {
		return fmt.Errorf("crypt: %s belongs to data directory %x, these keys to %x", kf.path, kf.dirID, k.dirID)
	}
	k.mu.RLock()
	root := k.root
	k.mu.RUnlock()
	if _, err := unwrap(root, kf.names, namesAAD(kf.dirID)); err != nil {
		return fmt.Errorf("crypt: %s: %w: its root key was rotated, or the file replaced, since these keys were unlocked; unlock it again", kf.path, ErrStale)
	}
	if _, _, err := kf.unwrapAll(root); err != nil {
		return err
	}
	if err := kf.verify(root); err != nil {
		return err
	}
	nroot, keks, err := fn(kf, root)
	if err != nil {
		return err
	}
	gens, _, err := kf.unwrapAll(nroot)
	if err != nil {
		return err
	}
	if err := kf.write(nroot); err != nil {
		return err
	}
	k.mu.Lock()
	k.root, k.gens, k.active = nroot, aeads(kf.live(gens)), kf.active
	k.mu.Unlock()
	if k.keks == nil {
		k.keks = map[string][KeySize]byte{}
	}
	for id, kek := range keks {
		k.keks[id] = kek
	}
	return nil
}

// AddSlot adds one unlock slot per secret opts sets to dir/keys.json. A
// second keyring slot is refused. Only keys.json is rewritten.
func (k *Keys) AddSlot(dir string, opts InitOptions) error {
	var undo func()
	err := k.change(dir, func(kf *keyFile, root [KeySize]byte) ([KeySize]byte, map[string][KeySize]byte, error) {
		m, err := newSlots(kf.dirID, root, opts, kf.slots)
		if err != nil {
			return root, nil, err
		}
		undo = m.undo
		kf.slots = append(kf.slots, m.slots...)
		return root, m.keks, nil
	})
	if err != nil && undo != nil {
		undo()
	}
	return err
}

// RemoveSlot removes slot index (as ReadInfo lists them) from
// dir/keys.json. It refuses to remove the last slot, which would leave
// the data impossible to unlock. A keyring slot's entry is left in the
// OS keyring: a copy of the directory (same id) may still use it, and
// without its slot it opens nothing here.
func (k *Keys) RemoveSlot(dir string, index int) error {
	return k.change(dir, func(kf *keyFile, root [KeySize]byte) ([KeySize]byte, map[string][KeySize]byte, error) {
		if index < 0 || index >= len(kf.slots) {
			return root, nil, fmt.Errorf("crypt: %s has no slot %d: it has slots 0 to %d", kf.path, index, len(kf.slots)-1)
		}
		if len(kf.slots) == 1 {
			return root, nil, fmt.Errorf("crypt: refusing to remove the last unlock slot of %s: nothing could unlock the data; add another slot first", kf.path)
		}
		kf.slots = append(kf.slots[:index:index], kf.slots[index+1:]...)
		return root, nil, nil
	})
}

// RotateRoot replaces the root key: a new random root key, wrapped again
// by every slot under the slot's same secret, and every generation key
// and the name key wrapped again by it. Only keys.json is rewritten; the
// generation keys, and so every file, stay the same.
//
// Every slot's secret keeps working, so a leaked passphrase or identity
// is revoked by removing its slot; RotateRoot then makes the old root
// key, and the old keys.json with the leaked secret, useless for
// anything the new generation (NewGeneration) encrypts.
//
// The slot keys it needs: an age slot gets a new slot key sealed to its
// recipient (no identity needed); a keyring slot's secret is read from
// the keyring; a passphrase slot needs the key derived when this Keys
// was made or unlocked with its passphrase, or the passphrase in
// RotateRootWith. Otherwise it fails naming the slot, and nothing
// changes.
func (k *Keys) RotateRoot(dir string) error { return k.RotateRootWith(dir, UnlockOptions{}) }

// RotateRootWith is RotateRoot with secrets for the slots this Keys did
// not open: opts.Passphrase for passphrase slots, the OS keyring for the
// keyring slot (always asked).
func (k *Keys) RotateRootWith(dir string, opts UnlockOptions) error {
	opts.Keyring = true
	sc := newSecrets(opts)
	return k.change(dir, func(kf *keyFile, old [KeySize]byte) ([KeySize]byte, map[string][KeySize]byte, error) {
		var root [KeySize]byte
		if _, err := rand.Read(root[:]); err != nil {
			return old, nil, fmt.Errorf("crypt: random root key: %w", err)
		}
		gens, names, err := kf.unwrapAll(old)
		if err != nil {
			return old, nil, err
		}
		keks := map[string][KeySize]byte{}
		for i := range kf.slots {
			s := &kf.slots[i]
			kek, err := k.slotKEK(kf, s, old, sc)
			if err != nil {
				return old, nil, fmt.Errorf("crypt: cannot rotate the root key of %s: %s: %w; unlock with its secret, or remove the slot", kf.path, s.describe(i), err)
			}
			if s.root, err = wrap(kek, root, rootAAD(kf.dirID, s.typ)); err != nil {
				return old, nil, err
			}
			keks[s.id()] = kek
		}
		for i := range kf.gens {
			if kf.gens[i].key, err = wrap(root, gens[kf.gens[i].id], genAAD(kf.dirID, kf.gens[i].id)); err != nil {
				return old, nil, err
			}
		}
		if kf.names, err = wrap(root, names, namesAAD(kf.dirID)); err != nil {
			return old, nil, err
		}
		return root, keks, nil
	})
}

// slotKEK returns the key-encryption key of slot s for RotateRoot: the
// one k holds, a new one for an age slot (s.age is sealed again), or one
// from the secrets, checked against the current root key.
func (k *Keys) slotKEK(kf *keyFile, s *slot, root [KeySize]byte, sc *secrets) ([KeySize]byte, error) {
	if kek, ok := k.keks[s.id()]; ok {
		return kek, nil
	}
	var kek [KeySize]byte
	if s.typ == SlotAge {
		rcp, err := parseRecipient(s.recipient)
		if err != nil {
			return kek, err
		}
		if _, err := rand.Read(kek[:]); err != nil {
			return kek, fmt.Errorf("crypt: random slot key: %w", err)
		}
		file, err := sealAge(kek, rcp)
		if err != nil {
			return kek, err
		}
		s.age = file
		return kek, nil
	}
	kek, err := sc.kek(s)
	if err != nil {
		return kek, err
	}
	if got, err := unwrap(kek, s.root, rootAAD(kf.dirID, s.typ)); err != nil || got != root {
		return kek, &reason{"its secret does not open it", ErrWrongSecret}
	}
	return kek, nil
}

// NewGeneration adds a random generation key to dir/keys.json and makes
// it active: new data keys are wrapped by it. Data keys wrapped by older
// generations still unwrap. Only keys.json is rewritten.
func (k *Keys) NewGeneration(dir string) (uint32, error) {
	var id uint32
	err := k.change(dir, func(kf *keyFile, root [KeySize]byte) ([KeySize]byte, map[string][KeySize]byte, error) {
		id = 0
		for _, g := range kf.gens {
			id = max(id, g.id)
		}
		if id == math.MaxUint32 {
			return root, nil, fmt.Errorf("crypt: %s: generation ids exhausted", kf.path)
		}
		id++
		var g [KeySize]byte
		if _, err := rand.Read(g[:]); err != nil {
			return root, nil, fmt.Errorf("crypt: random generation key: %w", err)
		}
		w, err := wrap(root, g, genAAD(kf.dirID, id))
		if err != nil {
			return root, nil, err
		}
		kf.gens = append(kf.gens, gen{id: id, created: time.Now().UTC().Truncate(time.Second), key: w})
		kf.active = id
		return root, nil, nil
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// RetireGeneration retires generation id of dir/keys.json: its key is
// replaced there by a random one, so a data key it wrapped no longer
// unwraps, with these keys or with any later copy of keys.json. Every
// file's data key must first be re-wrapped by a live generation
// (wal.Rewrap, RewrapFiles): a file still wrapped by id becomes
// unreadable. The active generation cannot be retired; retiring a
// retired one does nothing.
func (k *Keys) RetireGeneration(dir string, id uint32) error {
	return k.change(dir, func(kf *keyFile, root [KeySize]byte) ([KeySize]byte, map[string][KeySize]byte, error) {
		g := kf.gen(id)
		switch {
		case g == nil:
			return root, nil, fmt.Errorf("crypt: %s has no key generation %d", kf.path, id)
		case id == kf.active:
			return root, nil, fmt.Errorf("crypt: generation %d is the active one: make a new one first (bbengine key rotate --generation)", id)
		case g.retired:
			return root, nil, nil
		}
		var r [KeySize]byte
		if _, err := rand.Read(r[:]); err != nil {
			return root, nil, fmt.Errorf("crypt: random key: %w", err)
		}
		w, err := wrap(root, r, genAAD(kf.dirID, id))
		if err != nil {
			return root, nil, err
		}
		g.key, g.retired = w, true
		return root, nil, nil
	})
}

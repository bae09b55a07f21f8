package crypt

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/zalando/go-keyring"
	"golang.org/x/crypto/argon2"
)

// Errors of unlocking, which a *SlotError wraps.
var (
	// ErrLocked is what an *UnlockError unwraps to: no slot opened.
	ErrLocked = errors.New("crypt: no unlock slot opened")
	// ErrNoSecret reports a slot whose secret was not given.
	ErrNoSecret = errors.New("no secret given")
	// ErrWrongSecret reports a secret that was given but does not open
	// the slot.
	ErrWrongSecret = errors.New("wrong secret")
	// ErrKeyring reports an OS keyring that cannot be reached (headless
	// Linux: no D-Bus session, no Secret Service).
	ErrKeyring = errors.New("OS keyring unavailable")
	// ErrStale reports keys whose keys.json changed under them (another
	// process rotated the root key): unlock again.
	ErrStale = errors.New("the keys file no longer matches the unlocked keys")
)

// SlotError says why one slot did not open. Its message never holds a
// secret.
type SlotError struct {
	// Index is the slot's place in keys.json, as RemoveSlot takes it.
	Index int
	// Type is passphrase, age or keyring.
	Type string
	// Recipient is an age slot's recipient.
	Recipient string
	// Err is why: it wraps ErrNoSecret, ErrWrongSecret or ErrKeyring, or
	// is a *KeysFileError.
	Err error
}

func (e *SlotError) Error() string {
	if e.Type == SlotAge {
		return fmt.Sprintf("slot %d (age %s): %v", e.Index, e.Recipient, e.Err)
	}
	return fmt.Sprintf("slot %d (%s): %v", e.Index, e.Type, e.Err)
}

func (e *SlotError) Unwrap() error { return e.Err }

// UnlockError reports that no slot of a keys file opened, and why for
// each.
type UnlockError struct {
	// Path names the keys file.
	Path string
	// Slots holds one error per slot, in the file's order.
	Slots []SlotError
}

func (e *UnlockError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "crypt: cannot unlock %s: ", e.Path)
	for i := range e.Slots {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Slots[i].Error())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrLocked) hold, and errors.Is for the
// slots' reasons.
func (e *UnlockError) Unwrap() []error {
	errs := []error{ErrLocked}
	for i := range e.Slots {
		errs = append(errs, &e.Slots[i])
	}
	return errs
}

// Messages of the slots' reasons; the CLI's flags and variables are named
// so the user knows what to set.
var (
	errNoPassphrase  = &reason{"no passphrase given (set BBENGINE_PASSPHRASE)", ErrNoSecret}
	errBadPassphrase = &reason{"the passphrase is wrong", ErrWrongSecret}
	errNoIdentity    = &reason{"no age identity given (set BBENGINE_AGE_IDENTITY or --age-identity)", ErrNoSecret}
	errBadIdentity   = &reason{"the age identity did not match", ErrWrongSecret}
	errNoKeyring     = &reason{"the OS keyring was not asked (use --keyring)", ErrNoSecret}
)

// reason is why a slot did not open: its message alone, and the sentinel
// errors.Is finds.
type reason struct {
	msg  string
	kind error
}

func (r *reason) Error() string { return r.msg }
func (r *reason) Unwrap() error { return r.kind }

// secrets is what an Unlock was given, with the age identities parsed
// once, when an age slot first needs them.
type secrets struct {
	opts    UnlockOptions
	parsed  bool
	ids     []age.Identity
	idsErr  error
	keyring bool
}

func newSecrets(opts UnlockOptions) *secrets {
	return &secrets{opts: opts, keyring: opts.Keyring}
}

func (sc *secrets) identities() ([]age.Identity, error) {
	if !sc.parsed {
		sc.parsed = true
		for i, text := range sc.opts.AgeIdentities {
			ids, err := age.ParseIdentities(strings.NewReader(text))
			if err != nil {
				// age's parse errors can quote characters of the
				// secret key: say which identity, not why.
				sc.idsErr = &reason{fmt.Sprintf("age identity %d is not an age identity file (AGE-SECRET-KEY-1... lines)", i+1), ErrWrongSecret}
				continue
			}
			sc.ids = append(sc.ids, ids...)
		}
	}
	return sc.ids, sc.idsErr
}

// kek returns slot s's key-encryption key from the secrets, or why not.
// It does not check that the key opens s.root.
func (sc *secrets) kek(s *slot) ([KeySize]byte, error) {
	var kek [KeySize]byte
	switch s.typ {
	case SlotPassphrase:
		if len(sc.opts.Passphrase) == 0 {
			return kek, errNoPassphrase
		}
		return deriveKEK(sc.opts.Passphrase, s.salt, s.kdf), nil
	case SlotAge:
		ids, err := sc.identities()
		if len(ids) == 0 {
			if err != nil {
				return kek, err
			}
			return kek, errNoIdentity
		}
		return openAge(s.age, ids)
	case SlotKeyring:
		if !sc.keyring {
			return kek, errNoKeyring
		}
		kek, found, err := keyringGet(s.service, s.account)
		if err == nil && !found {
			err = &reason{fmt.Sprintf("the OS keyring holds no secret for service %q, account %q (the slot was made on another machine or by another user)", s.service, s.account), ErrNoSecret}
		}
		return kek, err
	}
	return kek, fmt.Errorf("unknown slot type %q", s.typ)
}

// deriveKEK is argon2id of a passphrase.
func deriveKEK(pass []byte, salt [SaltSize]byte, p kdfParams) [KeySize]byte {
	var kek [KeySize]byte
	copy(kek[:], argon2.IDKey(pass, salt[:], p.Time, p.MemoryKiB, p.Threads, KeySize))
	return kek
}

// parseRecipient parses one age recipient, "age1...".
func parseRecipient(r string) (age.Recipient, error) {
	r = strings.TrimSpace(r)
	if r == "" || strings.ContainsAny(r, "\r\n") {
		return nil, fmt.Errorf("crypt: age recipient %q is not one age1... public key", r)
	}
	rs, err := age.ParseRecipients(strings.NewReader(r))
	if err != nil || len(rs) != 1 {
		return nil, fmt.Errorf("crypt: age recipient %q is not an age1... public key: %v", r, err)
	}
	return rs[0], nil
}

// sealAge encrypts a slot key to an age recipient: an age file of about
// 200 bytes.
func sealAge(kek [KeySize]byte, r age.Recipient) ([]byte, error) {
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, r)
	if err != nil {
		return nil, fmt.Errorf("crypt: age encrypt: %w", err)
	}
	if _, err := w.Write(kek[:]); err != nil {
		return nil, fmt.Errorf("crypt: age encrypt: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("crypt: age encrypt: %w", err)
	}
	return buf.Bytes(), nil
}

// openAge decrypts an age slot's file with the identities.
func openAge(file []byte, ids []age.Identity) ([KeySize]byte, error) {
	var kek [KeySize]byte
	r, err := age.Decrypt(bytes.NewReader(file), ids...)
	if err != nil {
		var nm *age.NoIdentityMatchError
		if errors.As(err, &nm) {
			return kek, errBadIdentity
		}
		return kek, fmt.Errorf("its age file does not decrypt: %v", err)
	}
	b, err := io.ReadAll(io.LimitReader(r, KeySize+1))
	if err != nil {
		return kek, fmt.Errorf("its age file does not decrypt: %v", err)
	}
	if len(b) != KeySize {
		return kek, fmt.Errorf("its age file holds %d bytes, want %d", len(b), KeySize)
	}
	copy(kek[:], b)
	return kek, nil
}

// keyringGet reads a keyring slot's secret. found is false when the
// keyring answered that it holds none.
func keyringGet(service, account string) (kek [KeySize]byte, found bool, err error) {
	v, err := keyring.Get(service, account)
	if errors.Is(err, keyring.ErrNotFound) {
		return kek, false, nil
	}
	if err != nil {
		return kek, false, fmt.Errorf("%w: %w", ErrKeyring, err)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil || len(b) != KeySize {
		return kek, true, &reason{fmt.Sprintf("the OS keyring's secret for service %q, account %q is not %d bytes in base64", service, account, KeySize), ErrWrongSecret}
	}
	copy(kek[:], b)
	return kek, true, nil
}

// keyringKEK returns the secret of the directory's keyring entry, making
// and storing a random one when there is none. An entry already there
// (made for a copy of this directory, which has the same id) is reused,
// so that both copies keep unlocking. made reports a new entry, which
// undo can delete.
func keyringKEK(account string) (kek [KeySize]byte, made bool, err error) {
	kek, found, err := keyringGet(keyringService, account)
	if err == nil && found {
		return kek, false, nil
	}
	if err == nil {
		if _, err = rand.Read(kek[:]); err != nil {
			return kek, false, fmt.Errorf("crypt: random slot key: %w", err)
		}
		err = keyring.Set(keyringService, account, base64.StdEncoding.EncodeToString(kek[:]))
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrKeyring, err)
		}
	}
	if err != nil {
		return kek, false, fmt.Errorf("crypt: cannot make a keyring slot: %w; use a passphrase or an age recipient instead", err)
	}
	return kek, true, nil
}

// made is what newSlots made: the slots, their key-encryption keys by
// slot id, and how to undo a keyring entry it stored.
type made struct {
	slots []slot
	keks  map[string][KeySize]byte
	undo  func()
}

// newSlots makes one slot per secret opts names, each wrapping root.
// have are the file's slots already there.
func newSlots(dirID [DirIDSize]byte, root [KeySize]byte, opts InitOptions, have []slot) (made, error) {
	m := made{keks: map[string][KeySize]byte{}, undo: func() {}}
	if len(opts.Passphrase) == 0 && len(opts.AgeRecipients) == 0 && !opts.Keyring {
		return m, errors.New("crypt: no unlock slot asked for: give a passphrase, an age recipient or the OS keyring")
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC().Truncate(time.Second)
	add := func(s slot, kek [KeySize]byte) error {
		w, err := wrap(kek, root, rootAAD(dirID, s.typ))
		if err != nil {
			return err
		}
		s.root = w
		m.slots = append(m.slots, s)
		m.keks[s.id()] = kek
		return nil
	}
	// Recipients are parsed and the keyring asked first: they are the
	// likely failures, and the passphrase's KDF is the slow part.
	var rcps []age.Recipient
	for _, r := range opts.AgeRecipients {
		rcp, err := parseRecipient(r)
		if err != nil {
			return m, err
		}
		rcps = append(rcps, rcp)
	}
	var ringKEK [KeySize]byte
	account := hex.EncodeToString(dirID[:])
	if opts.Keyring {
		for _, s := range have {
			if s.typ == SlotKeyring {
				return m, errors.New("crypt: the directory has a keyring slot already")
			}
		}
		kek, created, err := keyringKEK(account)
		if err != nil {
			return m, err
		}
		if created {
			m.undo = func() { keyring.Delete(keyringService, account) }
		}
		ringKEK = kek
	}
	fail := func(err error) (made, error) {
		m.undo()
		m.undo = func() {}
		return m, err
	}
	if len(opts.Passphrase) > 0 {
		s := slot{typ: SlotPassphrase, created: now, kdf: passphraseKDF}
		if _, err := rand.Read(s.salt[:]); err != nil {
			return fail(fmt.Errorf("crypt: random salt: %w", err))
		}
		if err := add(s, deriveKEK(opts.Passphrase, s.salt, s.kdf)); err != nil {
			return fail(err)
		}
	}
	for i, rcp := range rcps {
		var kek [KeySize]byte
		if _, err := rand.Read(kek[:]); err != nil {
			return fail(fmt.Errorf("crypt: random slot key: %w", err))
		}
		file, err := sealAge(kek, rcp)
		if err != nil {
			return fail(err)
		}
		s := slot{typ: SlotAge, created: now, recipient: strings.TrimSpace(opts.AgeRecipients[i]), age: file}
		if err := add(s, kek); err != nil {
			return fail(err)
		}
	}
	if opts.Keyring {
		s := slot{typ: SlotKeyring, created: now, service: keyringService, account: account}
		if err := add(s, ringKEK); err != nil {
			return fail(err)
		}
	}
	return m, nil
}

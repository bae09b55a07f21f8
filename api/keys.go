package api

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/wal"
)

// Unlock is how this process unlocks encrypted data directories
// (docs/security.md). The zero Unlock reads the environment.
type Unlock struct {
	// Passphrase opens a passphrase slot. The default is
	// BBENGINE_PASSPHRASE.
	Passphrase []byte
	// AgeIdentityFile names a file of age identities (AGE-SECRET-KEY-1…
	// lines) that opens an age slot. The default is
	// BBENGINE_AGE_IDENTITY.
	AgeIdentityFile string
	// NoKeyring skips the OS keyring slot. The default tries it when
	// keys.json has one.
	NoKeyring bool
	// Prompt, when set, asks for a passphrase when no other way opened
	// the directory and it has a passphrase slot (a terminal).
	Prompt func(dir string) ([]byte, error)
}

// unlocked holds the process's Unlock and the keys it opened, per data
// directory: a directory is unlocked once per process (argon2id costs
// about 60 ms).
var unlocked struct {
	sync.Mutex
	how  *Unlock
	keys map[string]*crypt.Keys
}

// SetUnlock sets how this process unlocks encrypted data directories; the
// command line calls it once from its flags, before any directory is
// opened.
func SetUnlock(u Unlock) {
	unlocked.Lock()
	defer unlocked.Unlock()
	unlocked.how = &u
	unlocked.keys = nil
}

// Keys returns the unlocked keys of the data directory dir, or nil when
// dir is in the clear (it has no keys.json). The keys are kept for the
// rest of the process.
func Keys(dir string) (*crypt.Keys, error) {
	if !crypt.Exists(dir) {
		return nil, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	unlocked.Lock()
	defer unlocked.Unlock()
	if k := unlocked.keys[abs]; k != nil {
		return k, nil
	}
	how := Unlock{}
	if unlocked.how != nil {
		how = *unlocked.how
	}
	opts, err := how.options()
	if err != nil {
		return nil, err
	}
	k, err := crypt.Unlock(dir, opts)
	if err != nil && len(opts.Passphrase) == 0 && how.Prompt != nil && hasPassphraseSlot(dir) {
		var p []byte
		if p, err = how.Prompt(dir); err == nil {
			opts.Passphrase = p
			k, err = crypt.Unlock(dir, opts)
		}
	}
	if err != nil {
		if errors.Is(err, crypt.ErrLocked) && !strings.Contains(err.Error(), "BBENGINE_PASSPHRASE") {
			err = fmt.Errorf("%w (ways to unlock: BBENGINE_PASSPHRASE, --age-identity FILE or BBENGINE_AGE_IDENTITY, the OS keyring)", err)
		}
		return nil, err
	}
	// argon2id took 64 MiB that are garbage now: collect them and give
	// them back, or the heap's next goal stays twice that high for a
	// proxy that runs for days.
	runtime.GC()
	debug.FreeOSMemory()
	// A key retire cut short left headers half re-wrapped: finish it
	// before anything reads them.
	if err := crypt.ReplayJournal(filepath.Join(dir, rewrapJournal)); err != nil {
		return nil, fmt.Errorf("finish the key re-wrap of %s: %w", dir, err)
	}
	if unlocked.keys == nil {
		unlocked.keys = map[string]*crypt.Keys{}
	}
	unlocked.keys[abs] = k
	return k, nil
}

// options turns u, with the environment's defaults, into crypt's.
func (u Unlock) options() (crypt.UnlockOptions, error) {
	o := crypt.UnlockOptions{Passphrase: u.Passphrase, Keyring: !u.NoKeyring}
	if len(o.Passphrase) == 0 {
		if p := os.Getenv("BBENGINE_PASSPHRASE"); p != "" {
			o.Passphrase = []byte(p)
		}
	}
	file := u.AgeIdentityFile
	if file == "" {
		file = os.Getenv("BBENGINE_AGE_IDENTITY")
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return o, fmt.Errorf("age identity: %w", err)
		}
		o.AgeIdentities = append(o.AgeIdentities, string(b))
	}
	return o, nil
}

func hasPassphraseSlot(dir string) bool {
	info, err := crypt.ReadInfo(dir)
	if err != nil {
		return false
	}
	for _, s := range info.Slots {
		if s.Type == "passphrase" {
			return true
		}
	}
	return false
}

// InitRequest makes a new data directory.
type InitRequest struct {
	// Dir is the data directory. It must not hold recorded data yet.
	Dir string
	// Encrypt makes the directory encrypted with the slots of Slots
	// (at least one).
	Encrypt bool
	Slots   crypt.InitOptions
}

// InitResult says what Init made.
type InitResult struct {
	Dir       string     `json:"dir"`
	Encrypted bool       `json:"encrypted"`
	Keys      crypt.Info `json:"keys,omitzero"`
}

// Init makes the data directory r.Dir, owner-only, and with Encrypt its
// keys.json. Encryption is chosen once, at init: a directory that
// already holds a WAL, derived state or an index is refused, since its
// frames' offsets would change and what is recorded in the clear would
// stay so.
func Init(r InitRequest) (*InitResult, error) {
	if crypt.Exists(r.Dir) {
		return nil, fmt.Errorf("init: %s is already encrypted (%s exists)", r.Dir, filepath.Join(r.Dir, crypt.KeysFile))
	}
	if r.Encrypt {
		for _, part := range []string{"wal", "db", "index", "blobs"} {
			if !noFiles(filepath.Join(r.Dir, part)) {
				return nil, fmt.Errorf("init --encrypt: %s already holds data in the clear (%s/); encryption is chosen when a directory is made: use a new directory (bbengine --dir NEW init --encrypt)", r.Dir, part)
			}
		}
	}
	if err := SecureDataDir(r.Dir); err != nil {
		return nil, err
	}
	res := &InitResult{Dir: r.Dir, Encrypted: r.Encrypt}
	if !r.Encrypt {
		return res, nil
	}
	if _, err := crypt.Init(r.Dir, r.Slots); err != nil {
		return nil, fmt.Errorf("init --encrypt: %w", err)
	}
	info, err := crypt.ReadInfo(r.Dir)
	if err != nil {
		return nil, err
	}
	res.Keys = info
	return res, nil
}

// noFiles reports whether dir is missing or holds no file (segments,
// tables) at any depth.
func noFiles(dir string) bool {
	empty := true
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			empty = false
			return filepath.SkipAll
		}
		return nil
	})
	return empty
}

// KeyRequest is one change to an encrypted directory's keys.json. Every
// change rewrites keys.json only; the data is never rewritten.
type KeyRequest struct {
	Dir string
	// AddSlots adds a slot per option set.
	AddSlots *crypt.InitOptions
	// RemoveSlot removes slot number RemoveSlot, counted from 1 in the
	// order KeyStatus lists them; 0 removes none.
	RemoveSlot int
	// RotateRoot makes a new root key and re-wraps every slot,
	// generation and the blob name key under it, and makes a new active
	// generation: a copy of the old keys.json opened with an old secret
	// then opens none of the files written after. Like NewGeneration it
	// needs the directory free.
	RotateRoot bool
	// NewGeneration makes a new active generation key: files made from
	// now on have their data keys wrapped by it.
	NewGeneration bool
}

// KeyStatus describes the keys of dir without unlocking it.
func KeyStatus(dir string) (crypt.Info, error) {
	if !crypt.Exists(dir) {
		return crypt.Info{}, fmt.Errorf("%s is not encrypted (no %s)", dir, crypt.KeysFile)
	}
	return crypt.ReadInfo(dir)
}

// ChangeKeys applies r with the directory's current keys (unlocked as
// Keys does) and returns the new status. A new generation needs the
// directory free: a running proxy would go on wrapping new files by the
// generation it started with.
func ChangeKeys(r KeyRequest) (crypt.Info, error) {
	k, err := Keys(r.Dir)
	if err != nil {
		return crypt.Info{}, err
	}
	if k == nil {
		return crypt.Info{}, fmt.Errorf("%s is not encrypted (no %s); encryption is chosen at init", r.Dir, crypt.KeysFile)
	}
	if r.AddSlots != nil {
		if err := k.AddSlot(r.Dir, *r.AddSlots); err != nil {
			return crypt.Info{}, err
		}
	}
	if r.RemoveSlot < 0 {
		return crypt.Info{}, fmt.Errorf("%w: key remove-slot: slot numbers start at 1", ErrBadRequest)
	}
	if (r.RotateRoot || r.NewGeneration) && held(r.Dir) {
		return crypt.Info{}, fmt.Errorf("key rotate: %s is in use by a running bbengine (stop it first: it keeps wrapping new files by the generation it started with)", r.Dir)
	}
	if r.RemoveSlot > 0 {
		if err := k.RemoveSlot(r.Dir, r.RemoveSlot-1); err != nil {
			return crypt.Info{}, err
		}
	}
	if r.RotateRoot {
		// A passphrase slot's key comes from its passphrase: the same
		// secrets that unlocked the directory re-wrap the slots.
		how := Unlock{}
		unlocked.Lock()
		if unlocked.how != nil {
			how = *unlocked.how
		}
		unlocked.Unlock()
		opts, err := how.options()
		if err != nil {
			return crypt.Info{}, err
		}
		if err := k.RotateRootWith(r.Dir, opts); err != nil {
			return crypt.Info{}, err
		}
		r.NewGeneration = true
	}
	if r.NewGeneration {
		if _, err := k.NewGeneration(r.Dir); err != nil {
			return crypt.Info{}, err
		}
	}
	return crypt.ReadInfo(r.Dir)
}

// rewrapJournal is the journal of a re-wrap of the encrypted files of a
// data directory (crypt.RewrapFiles); the WAL keeps its own.
const rewrapJournal = "rewrap.journal"

// Retired reports a retired key generation.
type Retired struct {
	Gen uint32 `json:"generation"`
	// New is the generation the data keys are wrapped by now; Made says
	// Retire made it, because Gen was the active one.
	New  uint32 `json:"new_generation"`
	Made bool   `json:"made_new_generation,omitempty"`
	// Segments and Files count the WAL segments and the other files
	// (derived state, index, blobs) whose data keys were re-wrapped.
	Segments int        `json:"segments"`
	Files    int        `json:"files"`
	Keys     crypt.Info `json:"keys"`
}

// RetireGeneration re-wraps, by a live generation, the data key of every
// file of the encrypted data directory dir that generation gen wraps (a
// WAL segment's header frame, the 128-byte header of every other file;
// no data is rewritten), then retires gen in keys.json: its key is gone,
// and a copy of a file taken before could be opened only with a copy of
// the old keys.json. When gen is the active generation a new one is made
// first. The directory must be free: stop the proxy first.
func RetireGeneration(dir string, gen uint32) (*Retired, error) {
	if _, held, _ := engine.ReadHolder(dir); held {
		return nil, fmt.Errorf("key retire: %s is in use by a running bbengine: stop it first", dir)
	}
	k, err := Keys(dir)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, fmt.Errorf("%s is not encrypted (no %s)", dir, crypt.KeysFile)
	}
	// Hold the directory, as an engine does, so that no proxy starts
	// writing files under gen meanwhile.
	lk, err := engine.Lock(dir)
	if err != nil {
		return nil, fmt.Errorf("key retire: %w", err)
	}
	defer lk.Close()
	out := &Retired{Gen: gen}
	if k.Active() == gen {
		if out.New, err = k.NewGeneration(dir); err != nil {
			return nil, err
		}
		out.Made = true
	}
	out.New = k.Active()
	if out.Segments, err = wal.Rewrap(filepath.Join(dir, "wal"), k, gen); err != nil {
		return nil, fmt.Errorf("key retire: WAL: %w", err)
	}
	targets, err := rewrapTargets(dir)
	if err != nil {
		return nil, fmt.Errorf("key retire: %w", err)
	}
	journal := filepath.Join(dir, rewrapJournal)
	if out.Files, err = crypt.RewrapFiles(journal, k, gen, targets); err != nil {
		return nil, fmt.Errorf("key retire: %w", err)
	}
	// Nothing of gen may be left: a file it still wrapped would become
	// unreadable once its key is gone.
	if targets, err = rewrapTargets(dir); err != nil {
		return nil, fmt.Errorf("key retire: %w", err)
	}
	if n, err := crypt.RewrapFiles(journal, k, gen, targets); err != nil {
		return nil, fmt.Errorf("key retire: checking that no file is left: %w; generation %d is not retired (run key retire again)", err, gen)
	} else if n != 0 {
		return nil, fmt.Errorf("key retire: %d files appeared wrapped by generation %d while re-wrapping (re-wrapped now); generation %d is not retired: run key retire again", n, gen, gen)
	}
	if n, err := wal.Rewrap(filepath.Join(dir, "wal"), k, gen); err != nil {
		return nil, fmt.Errorf("key retire: checking that no WAL segment is left: %w; generation %d is not retired (run key retire again)", err, gen)
	} else if n != 0 {
		return nil, fmt.Errorf("key retire: %d WAL segments appeared wrapped by generation %d while re-wrapping (re-wrapped now); generation %d is not retired: run key retire again", n, gen, gen)
	}
	if err := k.RetireGeneration(dir, gen); err != nil {
		return nil, err
	}
	if out.Keys, err = crypt.ReadInfo(dir); err != nil {
		return nil, err
	}
	return out, nil
}

// rewrapTargets lists every encrypted file of dir but the WAL's: the
// derived state (and retention's snapshot of it), the index and blobs.
func rewrapTargets(dir string) ([]crypt.RewrapTarget, error) {
	t, err := engine.RewrapTargets(dir)
	if err != nil {
		return nil, err
	}
	ix, err := index.RewrapTargets(IndexDir(dir))
	if err != nil {
		return nil, err
	}
	return append(t, ix...), nil
}

// held reports whether a process holds the data directory dir.
func held(dir string) bool {
	_, h, _ := engine.ReadHolder(dir)
	return h
}

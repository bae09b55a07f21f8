package cli

import (
	"bytes"
	"fmt"
	"os"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/crypt"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// unlockFlags are the app's flags that unlock an encrypted data
// directory. The passphrase has no flag, so it never shows in a process
// list: it is BBENGINE_PASSPHRASE, or asked for on a terminal.
func unlockFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "age-identity", Usage: "file of age identities (AGE-SECRET-KEY-1…) that unlocks an encrypted data directory"},
		&ucli.BoolFlag{Name: "no-keyring", Usage: "do not try the OS keyring to unlock an encrypted data directory"},
	}
}

// setUnlock tells the service layer how this process unlocks encrypted
// data directories.
func setUnlock(c *ucli.Context) {
	api.SetUnlock(api.Unlock{
		AgeIdentityFile: c.String("age-identity"),
		NoKeyring:       c.Bool("no-keyring"),
		Prompt: func(dir string) ([]byte, error) {
			return askPassphrase(c, fmt.Sprintf("passphrase for %s: ", dir), false)
		},
	})
}

// askPassphrase reads a passphrase from the terminal without echo; with
// confirm, twice. It fails when stdin is not a terminal.
func askPassphrase(c *ucli.Context, prompt string, confirm bool) ([]byte, error) {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return nil, fmt.Errorf("no passphrase: set BBENGINE_PASSPHRASE (stdin is not a terminal to ask on)")
	}
	fmt.Fprint(c.App.ErrWriter, prompt)
	p, err := term.ReadPassword(fd)
	fmt.Fprintln(c.App.ErrWriter)
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("empty passphrase")
	}
	if confirm {
		fmt.Fprint(c.App.ErrWriter, "again: ")
		q, err := term.ReadPassword(fd)
		fmt.Fprintln(c.App.ErrWriter)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(p, q) {
			return nil, fmt.Errorf("the passphrases differ")
		}
	}
	return p, nil
}

// slotFlags choose the unlock slots of init --encrypt and key add-slot.
func slotFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "passphrase-slot", Usage: "a passphrase slot: the passphrase is " + newPassEnv + ", or asked for on a terminal (the default when no other slot is given)"},
		&ucli.StringSliceFlag{Name: "age-recipient", Usage: "an age slot for this public key (age1…): only its identity unlocks it (repeatable)"},
		&ucli.BoolFlag{Name: "keyring", Usage: "an OS keyring slot (Secret Service, Keychain, Credential Manager; not on headless Linux)"},
	}
}

// newPassEnv holds a new passphrase for a new slot (init takes
// BBENGINE_PASSPHRASE too): key add-slot needs the current one to
// unlock and a new one to add.
const newPassEnv = "BBENGINE_NEW_PASSPHRASE"

// slotOptions reads the slot flags. first says BBENGINE_PASSPHRASE may
// give the new passphrase (init, where nothing is unlocked yet).
func slotOptions(c *ucli.Context, first bool) (crypt.InitOptions, error) {
	o := crypt.InitOptions{AgeRecipients: c.StringSlice("age-recipient"), Keyring: c.Bool("keyring")}
	if c.Bool("passphrase-slot") || (len(o.AgeRecipients) == 0 && !o.Keyring) {
		p := os.Getenv(newPassEnv)
		if p == "" && first {
			p = os.Getenv("BBENGINE_PASSPHRASE")
		}
		if p != "" {
			o.Passphrase = []byte(p)
		} else {
			b, err := askPassphrase(c, "new passphrase: ", true)
			if err != nil {
				if first {
					return o, fmt.Errorf("%w (or "+newPassEnv+")", err)
				}
				return o, fmt.Errorf("no new passphrase: set %s (stdin is not a terminal to ask on)", newPassEnv)
			}
			o.Passphrase = b
		}
	}
	return o, nil
}

// dirBlobs returns the blob store of the data directory: an encrypted
// directory's is unlocked here, since show and export read blobs in this
// process even while a proxy runs.
func dirBlobs(c *ucli.Context) (*engine.Blobs, error) {
	keys, err := api.Keys(c.String("dir"))
	if err != nil {
		return nil, err
	}
	return engine.NewBlobsKeyed(c.String("dir"), keys), nil
}

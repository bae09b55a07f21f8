package cli

import (
	"fmt"

	"github.com/bbengine/bbengine/api"
	ucli "github.com/urfave/cli/v2"
)

func initCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "init",
		Usage:     "make a data directory, optionally encrypted at rest",
		ArgsUsage: " ",
		Description: "Makes the data directory (--dir), owner-only. With --encrypt, everything bbengine\n" +
			"writes there is encrypted with AES-256-GCM: WAL frame payloads, the derived state, the\n" +
			"search index and blobs (docs/security.md). It is unlocked by one of its slots: a\n" +
			"passphrase (BBENGINE_PASSPHRASE), an age identity (--age-identity), or the OS keyring.\n" +
			"Encryption is chosen here, once: a directory that holds data already is refused.\n" +
			"Losing every slot's secret loses the data: add a second slot, such as an age recipient\n" +
			"whose identity is kept offline.",
		Flags: append([]ucli.Flag{
			&ucli.BoolFlag{Name: "encrypt", Usage: "encrypt the directory at rest"},
			&ucli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		}, slotFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("init: takes no arguments")
			}
			req := api.InitRequest{Dir: c.String("dir"), Encrypt: c.Bool("encrypt")}
			if !req.Encrypt && (c.Bool("passphrase-slot") || c.Bool("keyring") || len(c.StringSlice("age-recipient")) > 0) {
				return usagef("init: --passphrase-slot, --age-recipient and --keyring choose how an encrypted directory unlocks: add --encrypt")
			}
			if req.Encrypt {
				var err error
				if req.Slots, err = slotOptions(c, true); err != nil {
					return fmt.Errorf("init --encrypt: %w", err)
				}
			}
			res, err := api.Init(req)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c, res)
			}
			if !res.Encrypted {
				fmt.Fprintf(c.App.Writer, "data directory %s ready (not encrypted)\n", res.Dir)
				return nil
			}
			fmt.Fprintf(c.App.Writer, "data directory %s ready, encrypted (AES-256-GCM), id %s\n", res.Dir, res.Keys.DirID)
			printSlots(c, res.Keys.Slots)
			if len(res.Keys.Slots) == 1 {
				fmt.Fprintf(c.App.Writer, "only one way unlocks it: if its secret is lost, so is the data. Add another with\n  bbengine key add-slot --age-recipient age1…\n")
			}
			return nil
		},
	}
}

package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/internal/crypt"
	ucli "github.com/urfave/cli/v2"
)

func keyCommand() *ucli.Command {
	jsonFlag := &ucli.BoolFlag{Name: "json", Usage: "print the result as JSON"}
	done := func(c *ucli.Context, info crypt.Info, what string) error {
		if c.Bool("json") {
			return writeJSON(c, info)
		}
		fmt.Fprintln(c.App.Writer, what)
		printKeys(c, info)
		return nil
	}
	change := func(c *ucli.Context, r api.KeyRequest, what string) error {
		r.Dir = c.String("dir")
		info, err := api.ChangeKeys(r)
		if err != nil {
			return err
		}
		return done(c, info, what)
	}
	return &ucli.Command{
		Name:  "key",
		Usage: "show and change how an encrypted data directory unlocks",
		Description: "Every change rewrites keys.json only; no data is rewritten. The current secret\n" +
			"(BBENGINE_PASSPHRASE, --age-identity or the OS keyring) unlocks the directory first.",
		Subcommands: []*ucli.Command{
			{
				Name: "status", Usage: "show the slots and key generations (needs no secret)", ArgsUsage: " ",
				Flags: []ucli.Flag{jsonFlag},
				Action: func(c *ucli.Context) error {
					info, err := api.KeyStatus(c.String("dir"))
					if err != nil {
						return err
					}
					return done(c, info, fmt.Sprintf("%s: encrypted (AES-256-GCM)", c.String("dir")))
				},
			},
			{
				Name: "add-slot", Usage: "add a way to unlock: a passphrase (" + newPassEnv + "), an age recipient or the OS keyring", ArgsUsage: " ",
				Flags: append([]ucli.Flag{jsonFlag}, slotFlags()...),
				Action: func(c *ucli.Context) error {
					o, err := slotOptions(c, false)
					if err != nil {
						return fmt.Errorf("key add-slot: %w", err)
					}
					return change(c, api.KeyRequest{AddSlots: &o}, "slot added")
				},
			},
			{
				Name: "remove-slot", Usage: "remove the slot numbered N in key status (not the last one)", ArgsUsage: "N",
				Flags: []ucli.Flag{jsonFlag},
				Action: func(c *ucli.Context) error {
					n, err := strconv.Atoi(c.Args().First())
					if c.NArg() != 1 || err != nil || n < 1 {
						return usagef("key remove-slot: need the slot's number N (1, 2, … as key status shows)")
					}
					return change(c, api.KeyRequest{RemoveSlot: n}, fmt.Sprintf("slot %d removed", n))
				},
			},
			{
				Name: "rotate", Usage: "new root key and a new key generation; --generation: only a new generation", ArgsUsage: " ",
				Description: "Do it when a slot's secret may have leaked, after removing that slot: a new root key\n" +
					"wraps the generation keys, every slot is re-wrapped, and files made from now on have\n" +
					"their data keys wrapped by a new generation, which a copy of the old keys.json does\n" +
					"not hold. Files made before keep their generation: key retire re-wraps them. With\n" +
					"--generation, only a new generation (routine, e.g. yearly). Stop the proxy first.",
				Flags: []ucli.Flag{jsonFlag, &ucli.BoolFlag{Name: "generation", Usage: "make a new active key generation"}},
				Action: func(c *ucli.Context) error {
					if c.NArg() > 0 {
						return usagef("key rotate: takes no arguments")
					}
					if c.Bool("generation") {
						return change(c, api.KeyRequest{NewGeneration: true}, "new key generation active")
					}
					return change(c, api.KeyRequest{RotateRoot: true}, "root key rotated, new key generation active")
				},
			},
			{
				Name: "retire", Usage: "re-wrap every file's data key by a newer generation, then drop generation G", ArgsUsage: "G",
				Description: "For a generation key that may have leaked. Every file whose data key generation G\n" +
					"wraps gets it re-wrapped by the active generation (a new one is made when G is active):\n" +
					"only headers are rewritten, never data, through a journal that a crash leaves to be\n" +
					"finished by the next command. Then G's key is removed from keys.json. The directory\n" +
					"must be free: stop the proxy first. A backup made before keeps its own keys.json and\n" +
					"headers (a file it shares by a hard link is re-wrapped as a copy) and restores with them.",
				Flags: []ucli.Flag{jsonFlag},
				Action: func(c *ucli.Context) error {
					g, err := strconv.ParseUint(c.Args().First(), 10, 32)
					if c.NArg() != 1 || err != nil || g == 0 {
						return usagef("key retire: need the generation G (as key status shows)")
					}
					res, err := api.RetireGeneration(c.String("dir"), uint32(g))
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return writeJSON(c, res)
					}
					if res.Made {
						fmt.Fprintf(c.App.Writer, "made generation %d, the active one now\n", res.New)
					}
					return done(c, res.Keys, fmt.Sprintf("generation %d retired: data keys of %d WAL segments and %d other files re-wrapped by generation %d, no data rewritten", res.Gen, res.Segments, res.Files, res.New))
				},
			},
		},
	}
}

// printKeys writes the slots and generations of info.
func printKeys(c *ucli.Context, info crypt.Info) {
	fmt.Fprintf(c.App.Writer, "id %s, made %s\n", info.DirID, info.Created.Local().Format(time.DateTime))
	printSlots(c, info.Slots)
	for _, g := range info.Generations {
		state := ""
		switch {
		case g.Retired:
			state = " (retired)"
		case g.ID == info.Active:
			state = " (active)"
		}
		fmt.Fprintf(c.App.Writer, "generation %d, made %s%s\n", g.ID, g.Created.Local().Format(time.DateTime), state)
	}
}

// printSlots writes one line per slot, numbered from 1.
func printSlots(c *ucli.Context, slots []crypt.SlotInfo) {
	for i, s := range slots {
		what := s.Type
		if s.Recipient != "" {
			what += " " + s.Recipient
		}
		fmt.Fprintf(c.App.Writer, "slot %d: %s\n", i+1, what)
	}
}

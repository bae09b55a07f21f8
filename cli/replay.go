package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
	ucli "github.com/urfave/cli/v2"
)

// walDir is where the write-ahead log of the data directory lives.
func walDir(c *ucli.Context) string { return filepath.Join(c.String("dir"), "wal") }

// openWALReadOnly opens the log for reading; it works while a proxy writes.
func openWALReadOnly(c *ucli.Context) (*wal.Log, error) {
	dir := walDir(c)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("no write-ahead log at %s (nothing recorded yet, or pass --dir): %w", dir, err)
	}
	keys, err := api.Keys(c.String("dir"))
	if err != nil {
		return nil, err
	}
	return wal.Open(dir, &wal.Options{ReadOnly: true, Keys: keys})
}

// parseOffset parses a decimal (or 0x hex) log offset given to flag name.
func parseOffset(name, s string) (uint64, error) {
	off, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, usagef("--%s %q: want a log offset (a non-negative integer)", name, s)
	}
	return off, nil
}

const previewLen = 72

func replayCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "replay",
		Usage:     "print the frames of the write-ahead log from an offset",
		ArgsUsage: " ",
		Description: "Reads <dir>/wal without modifying it, so it works while a proxy is writing.\n" +
			"--from must be a frame boundary (an offset printed by replay or wal stat);\n" +
			"--to is exclusive. Formats: text (offset, time, kind, exchange, a payload\n" +
			"preview), jsonl (one object per frame, payload as text or payload_base64),\n" +
			"raw (the uncompressed payloads back to back, for piping).",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "from", Usage: "first frame `OFFSET` (default: the first retained frame)"},
			&ucli.StringFlag{Name: "to", Usage: "stop before `OFFSET`"},
			&ucli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep waiting for new frames (until interrupted)"},
			&ucli.StringFlag{Name: "kind", Usage: "only frames of this `KIND` (" + kindList() + ")"},
			&ucli.StringFlag{Name: "exchange", Usage: "only frames of exchange `ID`"},
			&ucli.StringFlag{Name: "format", Value: "text", Usage: "text, jsonl or raw"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("replay: takes no arguments")
			}
			var req api.ReplayRequest
			for _, f := range []struct {
				name string
				to   **uint64
			}{{"from", &req.From}, {"to", &req.To}} {
				if c.IsSet(f.name) {
					off, err := parseOffset(f.name, c.String(f.name))
					if err != nil {
						return err
					}
					*f.to = &off
				}
			}
			if c.IsSet("kind") {
				k, ok := frame.ParseKind(c.String("kind"))
				if !ok {
					return usagef("replay: unknown --kind %q (want one of %s)", c.String("kind"), kindList())
				}
				req.Kind = k
			}
			if c.IsSet("exchange") {
				ex, err := strconv.ParseUint(c.String("exchange"), 0, 64)
				if err != nil {
					return usagef("replay: --exchange %q: want an exchange id (a non-negative integer)", c.String("exchange"))
				}
				req.Exchange = &ex
			}
			format := c.String("format")
			if format != "text" && format != "jsonl" && format != "raw" {
				return usagef("replay: unknown --format %q (want text, jsonl or raw)", format)
			}

			l, err := openWALReadOnly(c)
			if err != nil {
				return err
			}
			defer l.Close()
			ctx := c.Context
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
			defer stop()

			w := bufio.NewWriterSize(c.App.Writer, 64<<10)
			defer w.Flush()
			enc := json.NewEncoder(w)
			req.Follow, req.Idle = c.Bool("follow"), w.Flush
			err = api.Replay(ctx, l, req, func(off uint64, h frame.Header, p []byte) error {
				switch format {
				case "raw":
					w.Write(p)
				case "jsonl":
					return enc.Encode(api.NewFrame(off, h, p))
				default:
					writeTextFrame(w, off, h, p)
				}
				return nil
			})
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
}

func kindList() string {
	s := ""
	for k := frame.KindSegmentHeader; k.Valid(); k++ {
		if s != "" {
			s += ", "
		}
		s += k.String()
	}
	return s
}

func writeTextFrame(w *bufio.Writer, off uint64, h frame.Header, p []byte) {
	fmt.Fprintf(w, "%-12d %s %-15s", off, time.Unix(0, h.Time).UTC().Format("2006-01-02T15:04:05.000000Z"), h.Kind)
	if h.Exchange != 0 {
		fmt.Fprintf(w, " ex=%d", h.Exchange)
	}
	if h.Flags&frame.FlagLast != 0 {
		w.WriteString(" last")
	}
	fmt.Fprintf(w, " %dB", h.RawLen)
	if h.Compressed() {
		fmt.Fprintf(w, " (%dB snappy)", h.Len)
	}
	if len(p) > 0 {
		q := p
		if len(q) > previewLen {
			q = q[:previewLen]
		}
		s := strconv.Quote(string(q))
		if len(p) > previewLen {
			s += "…"
		}
		w.WriteString(" " + s)
	}
	w.WriteByte('\n')
}

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
	ucli "github.com/urfave/cli/v2"
)

func walCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "wal",
		Usage: "inspect, verify and repair the write-ahead log in <dir>/wal",
		Subcommands: []*ucli.Command{
			walStatCommand(),
			walVerifyCommand(),
			walRepairCommand(),
		},
	}
}

// checkWAL runs wal.Check on the data directory's log.
func checkWAL(c *ucli.Context) ([]wal.SegmentInfo, error) {
	// No key: checksums and offsets cover an encrypted log's bytes.
	if _, err := os.Stat(walDir(c)); err != nil {
		return nil, fmt.Errorf("no write-ahead log at %s (nothing recorded yet, or pass --dir): %w", walDir(c), err)
	}
	infos, err := wal.Check(walDir(c))
	if err != nil {
		return nil, fmt.Errorf("wal: check %s: %w", walDir(c), err)
	}
	return infos, nil
}

type walStat struct {
	Dir       string         `json:"dir"`
	Segments  []segStat      `json:"segments"`
	Bytes     int64          `json:"bytes"`
	Frames    int            `json:"frames"`
	Kinds     map[string]int `json:"kinds"`
	First     uint64         `json:"first_offset"`
	End       uint64         `json:"end_offset"`
	Last      uint64         `json:"last_offset"`
	FirstTime string         `json:"first_time,omitempty"`
	LastTime  string         `json:"last_time,omitempty"`
}

type segStat struct {
	Name   string `json:"name"`
	Base   uint64 `json:"base"`
	Size   int64  `json:"size"`
	Frames int    `json:"frames"`
	Status string `json:"status"`
}

func fmtTime(ns int64) string {
	if ns == 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

func segStatus(in wal.SegmentInfo) string {
	switch {
	case in.Gap != nil && in.Err != nil:
		return "gap before it: " + in.Gap.Error() + "; corrupt: " + in.Err.Error()
	case in.Gap != nil:
		return "gap before it: " + in.Gap.Error()
	case in.Err != nil:
		return "corrupt: " + in.Err.Error()
	case in.Torn:
		return fmt.Sprintf("torn tail at offset %d (%d bytes; truncated when a writer opens the log)", in.Base+uint64(in.ValidEnd), in.Size-in.ValidEnd)
	case in.Encrypted:
		return fmt.Sprintf("ok, encrypted (key generation %d)", in.KeyGen)
	}
	return "ok"
}

func walStatCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "stat",
		Usage:     "print segments, sizes, frame counts by kind, and the first and last offset and time",
		ArgsUsage: " ",
		Flags:     []ucli.Flag{&ucli.BoolFlag{Name: "json", Usage: "print as JSON"}},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("wal stat: takes no arguments")
			}
			infos, err := checkWAL(c)
			if err != nil {
				return err
			}
			st := walStat{Dir: walDir(c), Kinds: map[string]int{}, Segments: []segStat{}}
			var firstNS, lastNS int64
			for i, in := range infos {
				st.Segments = append(st.Segments, segStat{Name: filepath.Base(in.Path), Base: in.Base, Size: in.Size, Frames: in.Frames, Status: segStatus(in)})
				st.Bytes += in.Size
				st.Frames += in.Frames
				for k, n := range in.Kinds {
					st.Kinds[k.String()] += n
				}
				if i == 0 {
					st.First = in.Base
				}
				if in.Frames > 0 {
					st.Last = in.Last
					st.End = in.Base + uint64(in.ValidEnd)
					lastNS = in.LastTime
				}
				if firstNS == 0 {
					firstNS = in.FirstTime
				}
			}
			st.FirstTime, st.LastTime = fmtTime(firstNS), fmtTime(lastNS)
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SEGMENT\tBASE\tSIZE\tFRAMES\tSTATUS")
			for _, s := range st.Segments {
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", s.Name, s.Base, s.Size, s.Frames, s.Status)
			}
			w.Flush()
			fmt.Fprintf(c.App.Writer, "\n%d segments, %d bytes, %d frames in %s\n", len(st.Segments), st.Bytes, st.Frames, st.Dir)
			fmt.Fprintf(c.App.Writer, "offsets: first %d, last frame %d, end %d\n", st.First, st.Last, st.End)
			if st.FirstTime != "" {
				fmt.Fprintf(c.App.Writer, "time:    %s .. %s\n", st.FirstTime, st.LastTime)
			}
			kinds := make([]string, 0, len(st.Kinds))
			for k := range st.Kinds {
				kinds = append(kinds, k)
			}
			sort.Slice(kinds, func(i, j int) bool {
				a, _ := frame.ParseKind(kinds[i])
				b, _ := frame.ParseKind(kinds[j])
				return a < b
			})
			w = tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "\nKIND\tFRAMES")
			for _, k := range kinds {
				fmt.Fprintf(w, "%s\t%d\n", k, st.Kinds[k])
			}
			return w.Flush()
		},
	}
}

func walVerifyCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "verify",
		Usage:     "check the CRC and offset of every frame in every segment and that no segment is missing; exit 1 on corruption or a gap",
		ArgsUsage: " ",
		Description: "Needs no key, on an encrypted directory too: checksums and offsets cover the\n" +
			"encrypted bytes. --decrypt also authenticates every frame of an encrypted log with\n" +
			"the directory's keys, which finds frames changed by someone who fixed up the CRC.",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "decrypt", Usage: "also authenticate every encrypted frame (unlocks the directory)"}},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("wal verify: takes no arguments")
			}
			infos, err := checkWAL(c)
			if err != nil {
				return err
			}
			if c.Bool("decrypt") {
				if err := verifyDecrypt(c); err != nil {
					return err
				}
			}
			frames, bad, gaps := 0, 0, 0
			for _, in := range infos {
				frames += in.Frames
				if in.Gap != nil {
					gaps++
					fmt.Fprintf(c.App.Writer, "%s\n", in.Gap)
				}
				switch {
				case in.Err != nil:
					bad++
					fmt.Fprintf(c.App.Writer, "%s\n", in.Err)
				case in.Torn:
					fmt.Fprintf(c.App.Writer, "%s: %s\n", in.Path, segStatus(in))
				}
			}
			if bad > 0 || gaps > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("wal verify: %d corrupt segment(s) and %d gap(s) between segments in %s; put back missing segments, or run `bbengine wal repair` to keep copies, truncate and accept the loss", bad, gaps, walDir(c))}
			}
			_, err = fmt.Fprintf(c.App.Writer, "ok: %d segments, %d frames, every checksum and offset matches, no segment missing\n", len(infos), frames)
			return err
		},
	}
}

func walRepairCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "repair",
		Usage:     "truncate corrupt segments at the first bad frame, keeping a copy of each, and accept gaps",
		ArgsUsage: " ",
		Description: "Stop any bbengine process writing to <dir> first. Each corrupt segment is copied to\n" +
			"<segment>.damaged-<time> and truncated at its first invalid frame; frames after it\n" +
			"stay in the copy only. A torn tail is truncated without a copy. A gap between\n" +
			"segments (one deleted or renamed) is recorded as accepted: readers, verify and\n" +
			"rebuild go on past it. Put a missing segment back instead if you can.",
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("wal repair: takes no arguments")
			}
			// No key: repair works on checksums and offsets, which
			// cover an encrypted log's bytes.
			if _, err := os.Stat(walDir(c)); err != nil {
				return fmt.Errorf("no write-ahead log at %s (nothing recorded yet, or pass --dir): %w", walDir(c), err)
			}
			fixed, err := wal.Repair(walDir(c))
			for _, f := range fixed {
				if f.Gap {
					fmt.Fprintf(c.App.Writer, "accepted a gap of %d bytes at offset %d before %s: those frames are lost; readers go on past it\n", f.Dropped, f.Offset, f.Segment)
					continue
				}
				fmt.Fprintf(c.App.Writer, "truncated %s at offset %d, dropped %d bytes (%v)", f.Segment, f.Offset, f.Dropped, f.Err)
				if f.Copy != "" {
					fmt.Fprintf(c.App.Writer, "; damaged copy kept at %s", f.Copy)
				}
				fmt.Fprintln(c.App.Writer)
			}
			if errors.Is(err, wal.ErrLocked) {
				return fmt.Errorf("wal repair: %w", err)
			}
			if err != nil {
				return err
			}
			if len(fixed) == 0 {
				fmt.Fprintf(c.App.Writer, "nothing to repair in %s\n", walDir(c))
			}
			return nil
		},
	}
}

// verifyDecrypt authenticates every frame of the log with the data
// directory's keys: a frame whose bytes, or whose header, were changed
// and its CRC fixed up passes the checksums but not this. It reports
// each such frame and exits 1 when there is one.
func verifyDecrypt(c *ucli.Context) error {
	keys, err := api.Keys(c.String("dir"))
	if err != nil {
		return err
	}
	if keys == nil {
		fmt.Fprintf(c.App.Writer, "--decrypt: %s is not encrypted; nothing to authenticate\n", c.String("dir"))
		return nil
	}
	l, err := openWALReadOnly(c)
	if err != nil {
		return err
	}
	defer l.Close()
	r := l.NewReader()
	defer r.Close()
	frames, bad := 0, 0
	for r.Next() {
		frames++
		if _, err := r.Payload(); err != nil {
			bad++
			fmt.Fprintf(c.App.Writer, "%v\n", err)
		}
	}
	if err := r.Err(); err != nil {
		fmt.Fprintf(c.App.Writer, "%v\n", err)
		bad++
	}
	if bad > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("wal verify --decrypt: %d of %d frames fail authentication in %s: they were changed after they were written, or belong to another data directory", bad, frames, walDir(c))}
	}
	fmt.Fprintf(c.App.Writer, "authenticated: %d frames decrypt with the directory's keys\n", frames)
	return nil
}

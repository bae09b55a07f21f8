package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/bytesize"
)

// The retention a user sets: flags of the commands that run it (proxy,
// gc), BBENGINE_RETENTION_* in the environment, or a retention: section
// of the config file:
//
//	retention:
//	  raw_days: 30       # WAL frames older than this go (what was derived stays)
//	  max_size: 10GiB    # and the oldest go while the WAL is larger
//	  memory_days: 365   # memory of sessions older than this is forgotten
//
// Each is off when 0 or absent: by default everything is kept.

// retentionSection is the config section of the retention keys, and
// retentionKeys maps each of its keys to its flag.
const retentionSection = "retention"

var retentionKeys = map[string]string{
	"raw_days":    "retention-raw-days",
	"max_size":    "retention-max-size",
	"memory_days": "retention-memory-days",
}

// retentionFlags are the flags of the retention a user sets.
func retentionFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.IntFlag{Name: "retention-raw-days", Usage: "remove WAL frames older than this many `DAYS`, oldest segment first; what was derived from them stays (retention.raw_days in --config); 0 keeps them"},
		&ucli.StringFlag{Name: "retention-max-size", Usage: "remove the oldest WAL segments while the WAL is larger than this `SIZE` (10GiB, 500MB); what was derived from them stays (retention.max_size); off or empty keeps them"},
		&ucli.IntFlag{Name: "retention-memory-days", Usage: "forget the memory of sessions last active more than this many `DAYS` ago, unless pinned (retention.memory_days); 0 keeps it"},
	}
}

// retentionOf reads the retention flags of c.
func retentionOf(c *ucli.Context) (engine.Retention, error) {
	var r engine.Retention
	raw, mem := c.Int("retention-raw-days"), c.Int("retention-memory-days")
	if raw < 0 || mem < 0 {
		return r, usagef("--retention-raw-days and --retention-memory-days (BBENGINE_RETENTION_RAW_DAYS, BBENGINE_RETENTION_MEMORY_DAYS, or raw_days and memory_days under retention: in the config file) cannot be negative")
	}
	r.RawAge = time.Duration(raw) * 24 * time.Hour
	r.MemoryAge = time.Duration(mem) * 24 * time.Hour
	if s := c.String("retention-max-size"); s != "" {
		n, err := parseByteSize(s)
		if err != nil {
			return r, usagef("--retention-max-size (BBENGINE_RETENTION_MAX_SIZE, or max_size under retention: in the config file): %v", err)
		}
		r.RawBytes = n
	}
	return r, nil
}

// retentionValue returns the node of a retention flag's key in the
// config's retention: section, or nil.
func (cfg *config) retentionValue(flag string) *yaml.Node {
	sec := mapping(cfg.root, retentionSection)
	for key, f := range retentionKeys {
		if f == flag {
			return mapping(sec, key)
		}
	}
	return nil
}

// checkRetention reports a key of the config's retention: section that
// is not one of retentionKeys.
func (cfg *config) checkRetention(sec *yaml.Node) error {
	if sec.Kind != yaml.MappingNode {
		return fmt.Errorf("config %s:%d: %s: want a mapping of raw_days, max_size and memory_days", cfg.file, sec.Line, retentionSection)
	}
	for i := 0; i+1 < len(sec.Content); i += 2 {
		k := sec.Content[i]
		if _, ok := retentionKeys[k.Value]; !ok {
			return fmt.Errorf("config %s:%d: unknown key %q in %s: (want one of %s)", cfg.file, k.Line, k.Value, retentionSection,
				strings.Join(slices.Sorted(maps.Keys(retentionKeys)), ", "))
		}
	}
	return nil
}

// printRetained prints what a retention run removed (verb: "removed" or
// "would remove").
func printRetained(w io.Writer, r *api.Retained, verb string) {
	for _, s := range r.Raw.Segments {
		fmt.Fprintf(w, "%s %s (WAL %d-%d, %s, last written %s)\n", verb, s.Path, s.From, s.To, bytesize.Format(s.Bytes), s.Modified.Format(time.DateTime))
	}
	if r.Raw.WALBytes > 0 || len(r.Raw.Segments) > 0 {
		fmt.Fprintf(w, "WAL: %s %d segments, %s of %s", verb, len(r.Raw.Segments), bytesize.Format(r.Raw.Freed), bytesize.Format(r.Raw.WALBytes))
		if n := len(r.Raw.Waiting); n > 0 {
			fmt.Fprintf(w, "; %d more once derivation has passed them", n)
		}
		if len(r.Raw.Segments) == 0 && r.Raw.Active > 0 && r.Raw.Active == r.Raw.WALBytes {
			fmt.Fprintf(w, " (the WAL is one segment, %s, still being written: it can go once it is sealed at the proxy's --wal-segment-size)", bytesize.Format(r.Raw.Active))
		}
		fmt.Fprintln(w)
	}
	if !r.MemoryBefore.IsZero() {
		what := "forgot"
		if verb != "removed" {
			what = "would forget"
		}
		fmt.Fprintf(w, "memory: %s %d sessions last active before %s", what, len(r.Forgotten), r.MemoryBefore.Format(time.DateOnly))
		if len(r.Forgotten) > 0 {
			fmt.Fprintf(w, ": %s", strings.Join(r.Forgotten, ", "))
		}
		fmt.Fprintln(w)
	}
}

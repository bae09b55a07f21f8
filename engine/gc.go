package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// BlobGrace is how old a blob must be before GCBlobs removes it while no
// event names it. A running proxy's canonicalizer stores a long text as
// a blob while the response streams and writes the event that names it
// only when the exchange ends (and a blob it stores again is touched, see
// schema.Blobs): a young blob may be about to be named.
const BlobGrace = time.Hour

// BlobGCOptions configure GCBlobs. The zero value removes what it finds.
type BlobGCOptions struct {
	// DryRun reports what would go and removes nothing.
	DryRun bool
	// Now is the time blob ages are measured against. The default is
	// time.Now().
	Now time.Time
	// Grace is how old an unnamed blob must be to go. The default is
	// BlobGrace; tests set a negative value for none.
	Grace time.Duration
	// Removed, when set, is called after each file removed.
	Removed func(path string)
}

// BlobGC reports what GCBlobs removed, or with DryRun would remove.
type BlobGC struct {
	// Referenced is how many distinct blobs the derived state names, and
	// Kept how many files stay.
	Referenced int `json:"referenced"`
	Kept       int `json:"kept"`
	// Removed are the blobs no event names (and leftover temporary files
	// of interrupted writes), by path; Bytes their total size.
	Removed []RemovedBlob `json:"removed,omitempty"`
	Bytes   int64         `json:"bytes"`
	// Young is how many unnamed blobs were kept because they are younger
	// than the grace period.
	Young int `json:"young,omitempty"`
	// Bad are files of the store whose name is not a blob's (not 64 hex
	// digits under the directory of its first two), kept.
	Bad []BadBlob `json:"bad,omitempty"`
}

// RemovedBlob is one file GCBlobs removed.
type RemovedBlob struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	// Temp marks a temporary file an interrupted write left.
	Temp bool `json:"temp,omitempty"`
}

// BadBlob is a file in the blob store that is not a blob.
type BadBlob struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// GCBlobs removes the blobs no derived state names. It first reads every
// name the store holds (BlobRefs), and only then lists the blob store
// and removes what is not named: a process killed at any point leaves
// every named blob in place. Files whose name is not a blob's are
// reported, never removed. Derivation may run beside it (the proxy's):
// blobs younger than the grace period stay.
func (e *Engine) GCBlobs(ctx context.Context, opts *BlobGCOptions) (BlobGC, error) {
	var o BlobGCOptions
	if opts != nil {
		o = *opts
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Grace == 0 {
		o.Grace = BlobGrace
	}
	var out BlobGC
	refs, err := e.BlobRefs(ctx)
	if err != nil {
		return out, err
	}
	out.Referenced = len(refs)
	// A directory in the clear names blobs by SHA-256, an encrypted one
	// by HMAC (schema.Blobs); both names are 64 hex digits, and events
	// name either alike.
	for _, kind := range []string{"sha256", "hmac"} {
		if err := out.walk(ctx, filepath.Join(e.dir, "blobs", kind), kind, refs, o); err != nil {
			return out, err
		}
	}
	return out, nil
}

// walk runs blob gc over the store root, whose blobs are named by kind.
func (out *BlobGC) walk(ctx context.Context, root, kind string, refs map[string]bool, o BlobGCOptions) error {
	what := "a SHA-256"
	if kind == "hmac" {
		what = "an HMAC-SHA256"
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == root {
				return filepath.SkipDir
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if d.IsDir() {
			if path == root {
				return nil
			}
			if len(parts) != 1 || len(parts[0]) != 2 || !isHex([]byte(parts[0])) {
				out.Bad = append(out.Bad, BadBlob{Path: path, Reason: "a directory that is not a blob's fan-out (two hex digits)"})
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a temporary file renamed meanwhile
		}
		if err != nil {
			return err
		}
		old := o.Now.Sub(info.ModTime()) >= o.Grace
		switch {
		case strings.HasPrefix(name, ".tmp-"):
			if !old {
				out.Kept++
				return nil
			}
			return out.remove(path, info.Size(), true, o)
		case len(parts) != 2:
			out.bad(path, "not in a fan-out directory")
		case len(name) != 64 || !isHex([]byte(name)):
			out.bad(path, "the name is not "+what+" in hex (64 digits 0-9a-f)")
		case name[:2] != parts[0]:
			out.bad(path, fmt.Sprintf("in directory %s, not %s", parts[0], name[:2]))
		case refs[name]:
			out.Kept++
		case !old:
			out.Young++
			out.Kept++
		default:
			return out.remove(path, info.Size(), false, o)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("engine: blob gc in %s: %w", root, err)
	}
	return nil
}

// bad reports a file that is not a blob; it is kept.
func (g *BlobGC) bad(path, reason string) {
	g.Bad = append(g.Bad, BadBlob{Path: path, Reason: reason})
	g.Kept++
}

// remove removes one unnamed blob (unless o.DryRun) and counts it.
func (g *BlobGC) remove(path string, size int64, temp bool, o BlobGCOptions) error {
	if !o.DryRun {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if o.Removed != nil {
			o.Removed(path)
		}
	}
	g.Removed = append(g.Removed, RemovedBlob{Path: path, Bytes: size, Temp: temp})
	g.Bytes += size
	return nil
}

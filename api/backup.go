package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/internal/private"
	"github.com/bbengine/bbengine/internal/safefile"
	"github.com/bbengine/bbengine/wal"
)

// A backup is a directory laid out as a data directory, plus a manifest
// written last, whose presence says the backup is complete:
//
//	DEST/
//	  bbengine-backup.json   the Manifest
//	  wal/                   the WAL's segments (and hole records)
//	  db/                    a Pebble checkpoint of the derived state (not with Raw)
//	  blobs/sha256/ab/…      the blob store (hard links when on the same file system)
//
// The search index is not copied: Restore builds it again.

// ManifestName is the file of a backup's manifest.
const ManifestName = "bbengine-backup.json"

// BackupFormat names the layout of a backup and its manifest.
const BackupFormat = "bbengine-backup/1"

// sumChunk is the stretch of a file one CRC of the manifest covers: a
// damaged file is reported with the range that changed.
const sumChunk = 1 << 20

// BackupRequest asks for a backup of the data directory.
type BackupRequest struct {
	// Dest is the directory the backup goes to; it must not exist or be
	// empty. Remote needs an absolute path (the proxy's working
	// directory is not the caller's).
	Dest string `json:"dest"`
	// Raw copies the WAL (and the blobs) alone, not the derived state:
	// Restore derives it again.
	Raw bool `json:"raw,omitempty"`
}

// Manifest describes a backup; Restore checks the backup against it.
type Manifest struct {
	Format  string    `json:"format"`
	Created time.Time `json:"created"`
	// Builder and Schema are the versions of the derived state's code
	// (engine.BuilderVersion, engine.SchemaVersion).
	Builder string `json:"builder"`
	Schema  uint32 `json:"schema"`
	// Raw says the derived state is not included.
	Raw bool `json:"raw"`
	// WAL is the range of the log copied and its files.
	WAL wal.Copied `json:"wal"`
	// Derived is the checkpoint of the derived state; nil when Raw.
	Derived *DerivedCopy `json:"derived,omitempty"`
	// Blobs counts the blob store's files.
	Blobs BlobsCopy `json:"blobs"`
	// Retention holds the files retention wrote, when it removed part
	// of the WAL: the snapshot of what was derived from it (so that a
	// rebuild of the restored directory keeps it) and the record of the
	// ranges removed. Paths are under the backup.
	Retention []FileSum `json:"retention,omitempty"`
	// Keys is the keys file of an encrypted directory (path
	// "keys.json"): it holds wrapped keys only, and the backup is
	// readable only by whoever can unlock it (docs/security.md).
	Keys *FileSum `json:"keys,omitempty"`
}

// DerivedCopy is the checkpoint of the derived state in a backup.
type DerivedCopy struct {
	// Applied is the WAL offset the checkpoint covers; the WAL copy
	// reaches at least that far.
	Applied uint64    `json:"applied"`
	Files   []FileSum `json:"files"`
}

// FileSum is one file of a backup: its path under the backup, its size,
// and the CRC-32C (Castagnoli) of each MiB of it in order.
type FileSum struct {
	Path string   `json:"path"`
	Size int64    `json:"size"`
	CRC  []uint32 `json:"crc32c"`
}

// BlobsCopy counts the blobs of a backup.
type BlobsCopy struct {
	N      int   `json:"n"`
	Bytes  int64 `json:"bytes"`
	Linked int   `json:"linked"` // hard-linked, not copied
}

// Backup reports a backup made.
type Backup struct {
	Dest     string        `json:"dest"`
	Manifest Manifest      `json:"manifest"`
	Bytes    int64         `json:"bytes"` // of the WAL, the checkpoint and the blobs
	Took     time.Duration `json:"took_ns"`
}

// Backuper makes backups: the running proxy (Remote), which owns the
// directory, or an engine opened here (Local).
type Backuper interface {
	Backup(ctx context.Context, req BackupRequest) (*Backup, error)
}

var (
	_ Backuper = (*Local)(nil)
	_ Backuper = (*Remote)(nil)
)

// OpenBackuper returns the Backuper of the data directory dir: the
// running proxy that owns it, or its engine opened here, caught up with
// the WAL. close releases what was opened.
func OpenBackuper(ctx context.Context, dir string) (b Backuper, close func() error, err error) {
	if _, err := os.Stat(filepath.Join(dir, "wal")); err != nil {
		return nil, nil, fmt.Errorf("backup: no data directory at %s (no wal/ in it; pass --dir): %w", dir, err)
	}
	if r := Dial(dir); r != nil {
		return r, func() error { return nil }, nil
	}
	e, _, closeE, err := OpenEngine(ctx, dir, false)
	if err != nil {
		return nil, nil, err
	}
	return NewLocal(e, nil), closeE, nil
}

// Backup implements Backuper: it copies the data directory of m's engine
// while the engine follows its WAL and the proxy appends to it. The
// derived state is a Pebble checkpoint taken at a whole commit (its
// applied offset is in the manifest); the WAL is copied after it, up to
// a frame that is durable, so it reaches at least that offset; the
// blobs after that, so that every blob the checkpoint names is there.
// The manifest is written last. A backup cut short leaves no manifest,
// and Restore refuses it.
func (m *Local) Backup(ctx context.Context, req BackupRequest) (*Backup, error) {
	start := time.Now()
	dest, err := filepath.Abs(req.Dest)
	if err != nil || req.Dest == "" {
		return nil, fmt.Errorf("%w: backup: no destination directory", ErrBadRequest)
	}
	if err := emptyDir(dest); err != nil {
		return nil, fmt.Errorf("%w: backup: %v: back up into a new or empty directory", ErrBadRequest, err)
	}
	_, statErr := os.Stat(dest)
	if err := private.MkdirAll(dest); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	// A backup that fails takes back what it wrote, leaving dest as it
	// found it. (One killed midway leaves a copy without a manifest,
	// which Restore refuses.)
	ok := false
	defer func() {
		if !ok {
			clearDir(dest, statErr != nil)
		}
	}()
	man := Manifest{Format: BackupFormat, Created: start.UTC(), Builder: engine.BuilderVersion, Schema: engine.SchemaVersion, Raw: req.Raw}
	out := &Backup{Dest: dest}
	// The checkpoint, the WAL and what retention kept of the part of the
	// WAL it removed, as one: no retention run in between (one could
	// remove frames past the checkpoint's applied offset).
	if m.e.Keys() != nil {
		// The keys file first: without it nothing after it can be read.
		to := filepath.Join(dest, crypt.KeysFile)
		if err := copyFile(filepath.Join(m.e.Dir(), crypt.KeysFile), to); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		sum, err := sumFile(to, crypt.KeysFile)
		if err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		man.Keys = &sum
		out.Bytes += sum.Size
	}
	var copied *wal.Copied
	err = m.e.WithoutRetention(func() error {
		if !req.Raw {
			applied, err := m.e.Checkpoint(filepath.Join(dest, "db"))
			if err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			man.Derived = &DerivedCopy{Applied: applied}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		if copied, err = m.e.WAL().Copy(filepath.Join(dest, "wal")); err != nil {
			return fmt.Errorf("backup: copy the WAL: %w", err)
		}
		files, err := m.e.RetentionFiles()
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		for _, rel := range files {
			to := filepath.Join(dest, filepath.FromSlash(rel))
			if err := private.MkdirAll(filepath.Dir(to)); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			if err := copyFile(filepath.Join(m.e.Dir(), filepath.FromSlash(rel)), to); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			sum, err := sumFile(to, rel)
			if err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			man.Retention = append(man.Retention, sum)
			out.Bytes += sum.Size
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	man.WAL = *copied
	out.Bytes += copied.Bytes
	if d := man.Derived; d != nil {
		if d.Applied > copied.End {
			return nil, fmt.Errorf("backup: the derived state covers the WAL up to offset %d but the copy ends at %d", d.Applied, copied.End)
		}
		if d.Applied < copied.First {
			return nil, fmt.Errorf("backup: the derived state covers the WAL up to offset %d but the copy starts at %d: frames in between would be lost", d.Applied, copied.First)
		}
		err := filepath.WalkDir(filepath.Join(dest, "db"), func(p string, de fs.DirEntry, err error) error {
			if err != nil || !de.Type().IsRegular() {
				return err
			}
			rel, _ := filepath.Rel(dest, p)
			sum, err := sumFile(p, filepath.ToSlash(rel))
			if err != nil {
				return err
			}
			d.Files = append(d.Files, sum)
			out.Bytes += sum.Size
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("backup: read the checkpoint: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	src := filepath.Join(m.e.Dir(), "blobs")
	if man.Blobs, err = copyBlobs(src, filepath.Join(dest, "blobs"), false, nil); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	out.Bytes += man.Blobs.Bytes
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := safefile.WriteFileSynced(filepath.Join(dest, ManifestName), append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("backup: write the manifest: %w", err)
	}
	out.Manifest, out.Took = man, time.Since(start)
	ok = true
	return out, nil
}

// clearDir removes dir with remove, else what it holds.
func clearDir(dir string, remove bool) {
	if remove {
		os.RemoveAll(dir)
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// Backup implements Backuper by asking the running proxy, which owns the
// directory, to make the backup. It waits as long as the backup takes.
func (r *Remote) Backup(ctx context.Context, req BackupRequest) (*Backup, error) {
	if !filepath.IsAbs(req.Dest) {
		return nil, fmt.Errorf("%w: backup: the destination %q must be an absolute path", ErrBadRequest, req.Dest)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var out Backup
	return &out, r.doWithin(ctx, 0, http.MethodPost, "/v1/backup", nil, body, &out)
}

// emptyDir returns nil when dir does not exist or is an empty directory.
func emptyDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty (it holds %s)", dir, ents[0].Name())
	}
	return nil
}

// castagnoli is the CRC-32C table of the manifest's sums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumFile returns the FileSum of the file at p, named rel.
func sumFile(p, rel string) (FileSum, error) {
	f, err := os.Open(p)
	if err != nil {
		return FileSum{}, err
	}
	defer f.Close()
	s := FileSum{Path: rel, CRC: []uint32{}}
	buf := make([]byte, sumChunk)
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			s.CRC = append(s.CRC, crc32.Checksum(buf[:n], castagnoli))
			s.Size += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return s, nil
		}
		if err != nil {
			return s, err
		}
	}
}

// copyBlobs copies the blob store src (<dir>/blobs: sha256/ in the
// clear, hmac/ encrypted, both as they are) to dst, each file
// hard-linked when both are on one file system, else copied. With
// verify, each blob's content must match its name (checkBlob; an
// encrypted blob needs keys). A missing src is an empty store.
func copyBlobs(src, dst string, verify bool, keys *crypt.Keys) (BlobsCopy, error) {
	var n BlobsCopy
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == src {
				return fs.SkipAll
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return private.MkdirAll(to)
		}
		// A blob being written is a temporary file until it is
		// renamed to its digest.
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		if verify {
			if err := checkBlob(p, keys); err != nil {
				return err
			}
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if err := os.Link(p, to); err == nil {
			n.Linked++
		} else if err := copyFile(p, to); err != nil {
			return fmt.Errorf("copy blob %s: %w", p, err)
		}
		n.N++
		n.Bytes += fi.Size()
		return nil
	})
	return n, err
}

// copyFile copies src to a new file dst (owner-only), synced.
func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := private.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	return out.Sync()
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/engine/schema"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/internal/private"
	"github.com/bbengine/bbengine/internal/safefile"
	"github.com/bbengine/bbengine/wal"
)

// RestoreRequest asks to bring a backup back into a data directory.
type RestoreRequest struct {
	// Src is the backup's directory (what Backup wrote).
	Src string `json:"src"`
	// Dir is the data directory to restore into; it must not exist or
	// be empty.
	Dir string `json:"dir"`
	// Keys are the unlocked keys of the backed-up directory when it is
	// encrypted: its blobs are checked by their HMAC and authenticated,
	// and the engine and the index open with them. The default is nil,
	// a directory in the clear (an encrypted blob is then an error).
	Keys *crypt.Keys `json:"-"`
}

// Restored reports a restore.
type Restored struct {
	Dir      string   `json:"dir"`
	Manifest Manifest `json:"manifest"`
	// Derived is what derivation did after the copy: the WAL past the
	// checkpoint's applied offset, or (a raw backup) all of it.
	Derived engine.Progress `json:"derived"`
	// Indexed is the search index built again.
	Indexed index.SyncStats `json:"indexed"`
	Took    time.Duration   `json:"took_ns"`
}

// RestoreError reports a damaged or incomplete backup: the file and,
// when known, the offset in it where the damage is. Nothing was
// restored.
type RestoreError struct {
	File   string
	Offset int64 // -1 when the damage is not at an offset (a missing file)
	Err    error
}

func (e *RestoreError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("restore: the backup is damaged: %s: %v (nothing was restored)", e.File, e.Err)
	}
	return fmt.Sprintf("restore: the backup is damaged: %s at offset %d: %v (nothing was restored)", e.File, e.Offset, e.Err)
}

func (e *RestoreError) Unwrap() error { return e.Err }

// ErrIncomplete marks a backup without a manifest: it was cut short (or
// is not a backup).
var ErrIncomplete = errors.New("no manifest: the backup is incomplete (it was interrupted, or this is not a bbengine backup)")

// Restore brings the backup in req.Src back into the data directory
// req.Dir, which must not exist or be empty. It checks the backup against
// its manifest (every WAL frame with the WAL's own verification, every
// file of the checkpoint by its sums, every blob by its digest), copies
// it into a temporary directory beside req.Dir, opens it (with a raw
// backup, deriving everything from the WAL; else resuming from the
// checkpoint), builds the search index, and only then renames it to
// req.Dir: a damaged backup, or a failure on the way, leaves nothing
// behind. It needs no running proxy: the target is not in use.
func Restore(ctx context.Context, req RestoreRequest) (*Restored, error) {
	start := time.Now()
	src, err := filepath.Abs(req.Src)
	if err != nil || req.Src == "" {
		return nil, fmt.Errorf("%w: restore: no backup directory", ErrBadRequest)
	}
	dir, err := filepath.Abs(req.Dir)
	if err != nil || req.Dir == "" {
		return nil, fmt.Errorf("%w: restore: no data directory", ErrBadRequest)
	}
	man, err := readManifest(src)
	if err != nil {
		return nil, err
	}
	if err := emptyDir(dir); err != nil {
		return nil, fmt.Errorf("%w: restore: %v: restore into a new or empty directory (nothing was changed)", ErrBadRequest, err)
	}
	parent := filepath.Dir(dir)
	if err := private.MkdirAll(parent); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".restore-")
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	out := &Restored{Dir: dir, Manifest: *man}
	keys := req.Keys
	if man.Keys != nil {
		if err := copyChecked(src, tmp, *man.Keys); err != nil {
			return nil, err
		}
		// The backup's keys file unlocks it, with the secrets this
		// process unlocks directories with.
		if keys == nil {
			if keys, err = Keys(tmp); err != nil {
				return nil, fmt.Errorf("restore: %w", err)
			}
		}
	} else if keys != nil {
		return nil, fmt.Errorf("%w: restore: the backup in %s is not encrypted, but keys were given", ErrBadRequest, src)
	}
	if err := restoreWAL(src, tmp, man); err != nil {
		return nil, err
	}
	if d := man.Derived; d != nil {
		for _, f := range d.Files {
			if err := copyChecked(src, tmp, f); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range man.Retention {
		if err := copyChecked(src, tmp, f); err != nil {
			return nil, err
		}
	}
	blobs, err := copyBlobs(filepath.Join(src, "blobs"), filepath.Join(tmp, "blobs"), true, keys)
	if err != nil {
		return nil, err
	}
	if blobs.N != man.Blobs.N {
		return nil, &RestoreError{File: filepath.Join(src, "blobs"), Offset: -1, Err: fmt.Errorf("holds %d blobs, the manifest %d", blobs.N, man.Blobs.N)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := derive(ctx, tmp, src, keys, out); err != nil {
		return nil, err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("restore: move %s into place: %w", tmp, err)
	}
	done = true
	if err := safefile.SyncDir(parent); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	out.Took = time.Since(start)
	return out, nil
}

// readManifest reads and checks the manifest of the backup in src.
func readManifest(src string) (*Manifest, error) {
	path := filepath.Join(src, ManifestName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(src); serr != nil {
			return nil, fmt.Errorf("restore: no backup at %s: %w", src, serr)
		}
		return nil, &RestoreError{File: path, Offset: -1, Err: ErrIncomplete}
	}
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	var man Manifest
	if err := json.Unmarshal(b, &man); err != nil {
		off := int64(-1)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		return nil, &RestoreError{File: path, Offset: off, Err: fmt.Errorf("not a manifest: %w", err)}
	}
	if man.Format != BackupFormat {
		return nil, &RestoreError{File: path, Offset: -1, Err: fmt.Errorf("format %q, this bbengine reads %q", man.Format, BackupFormat)}
	}
	if man.Raw != (man.Derived == nil) {
		return nil, &RestoreError{File: path, Offset: -1, Err: errors.New("raw and derived disagree")}
	}
	if d := man.Derived; d != nil && (d.Applied < man.WAL.First || d.Applied > man.WAL.End) {
		return nil, &RestoreError{File: path, Offset: -1, Err: fmt.Errorf("derived.applied %d is outside the WAL copied, %d to %d", d.Applied, man.WAL.First, man.WAL.End)}
	}
	if err := manifestPaths(&man); err != nil {
		return nil, &RestoreError{File: path, Offset: -1, Err: err}
	}
	return &man, nil
}

// manifestPaths checks that every path the manifest names stays inside
// its part of the backup: a WAL file name is one name in wal/, a
// checkpoint file is under db/, and retention's files are expired.json or
// under snapshot/. A manifest naming "../x" or an absolute path would
// have restore write outside the data directory.
func manifestPaths(man *Manifest) error {
	name := func(field, n string) error {
		if n == "" || n != filepath.Base(n) || !filepath.IsLocal(n) {
			return fmt.Errorf("%s %q is not a file name in wal/", field, n)
		}
		return nil
	}
	under := func(field, p string, prefixes ...string) error {
		if filepath.IsLocal(filepath.FromSlash(p)) {
			for _, pre := range prefixes {
				if p == pre || strings.HasPrefix(p, pre+"/") {
					return nil
				}
			}
		}
		return fmt.Errorf("%s %q is not a path under %s", field, p, strings.Join(prefixes, " or "))
	}
	for _, s := range man.WAL.Segments {
		if err := name("wal.segments[].name", s.Name); err != nil {
			return err
		}
	}
	for _, h := range man.WAL.Holes {
		if err := name("wal.holes[]", h); err != nil {
			return err
		}
	}
	if d := man.Derived; d != nil {
		for _, f := range d.Files {
			if err := under("derived.files[].path", f.Path, "db"); err != nil {
				return err
			}
		}
	}
	for _, f := range man.Retention {
		if err := under("retention[].path", f.Path, "snapshot", "expired.json"); err != nil {
			return err
		}
	}
	if man.Keys != nil && man.Keys.Path != crypt.KeysFile {
		return fmt.Errorf("keys.path %q is not %q", man.Keys.Path, crypt.KeysFile)
	}
	return nil
}

// restoreWAL copies the backup's WAL into tmp/wal, checking each segment
// against the manifest and every frame with wal.Check.
func restoreWAL(src, tmp string, man *Manifest) error {
	from, to := filepath.Join(src, "wal"), filepath.Join(tmp, "wal")
	if err := private.MkdirAll(to); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	for _, s := range man.WAL.Segments {
		p := filepath.Join(from, s.Name)
		fi, err := os.Stat(p)
		if err != nil {
			return &RestoreError{File: p, Offset: -1, Err: fmt.Errorf("a WAL segment of the manifest is missing: %w", err)}
		}
		if fi.Size() != s.Size {
			return &RestoreError{File: p, Offset: min(fi.Size(), s.Size), Err: fmt.Errorf("the segment is %d bytes, the manifest says %d (truncated or grown; it should end at WAL offset %d)", fi.Size(), s.Size, s.Base+uint64(s.Size))}
		}
		if err := copyFile(p, filepath.Join(to, s.Name)); err != nil {
			return fmt.Errorf("restore: copy %s: %w", p, err)
		}
	}
	for _, h := range man.WAL.Holes {
		if err := copyFile(filepath.Join(from, h), filepath.Join(to, h)); err != nil {
			return &RestoreError{File: filepath.Join(from, h), Offset: -1, Err: err}
		}
	}
	infos, err := wal.Check(to)
	if err != nil {
		return fmt.Errorf("restore: verify the WAL: %w", err)
	}
	for _, in := range infos {
		p := filepath.Join(from, filepath.Base(in.Path))
		switch {
		case in.Gap != nil:
			return &RestoreError{File: p, Offset: -1, Err: in.Gap}
		case in.Err != nil:
			var ce *wal.CorruptionError
			if errors.As(in.Err, &ce) {
				return &RestoreError{File: p, Offset: int64(ce.Offset - in.Base), Err: fmt.Errorf("WAL offset %d: %w", ce.Offset, ce.Err)}
			}
			return &RestoreError{File: p, Offset: -1, Err: in.Err}
		case in.Torn:
			return &RestoreError{File: p, Offset: in.ValidEnd, Err: fmt.Errorf("WAL offset %d: the last frame is cut short: %w", in.Base+uint64(in.ValidEnd), in.TornErr)}
		}
	}
	var end uint64
	if n := len(infos); n > 0 {
		end = infos[n-1].Base + uint64(infos[n-1].ValidEnd)
	}
	if end != man.WAL.End {
		return &RestoreError{File: from, Offset: -1, Err: fmt.Errorf("the WAL ends at offset %d, the manifest says %d", end, man.WAL.End)}
	}
	if d := man.Derived; d != nil && d.Applied > end {
		return &RestoreError{File: filepath.Join(src, ManifestName), Offset: -1, Err: fmt.Errorf("the derived state covers the WAL up to %d, past its end %d", d.Applied, end)}
	}
	return safefile.SyncDir(to)
}

// copyChecked copies the file f of the backup in src into tmp, checking
// its size and sums as it goes.
func copyChecked(src, tmp string, f FileSum) (err error) {
	p := filepath.Join(src, filepath.FromSlash(f.Path))
	in, err := os.Open(p)
	if err != nil {
		return &RestoreError{File: p, Offset: -1, Err: fmt.Errorf("a file of the checkpoint is missing: %w", err)}
	}
	defer in.Close()
	to := filepath.Join(tmp, filepath.FromSlash(f.Path))
	if err := private.MkdirAll(filepath.Dir(to)); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	out, err := private.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("restore: %w", cerr)
		}
	}()
	buf := make([]byte, sumChunk)
	var off int64
	for i := 0; ; i++ {
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			if i >= len(f.CRC) || off+int64(n) > f.Size {
				return &RestoreError{File: p, Offset: min(off, f.Size), Err: fmt.Errorf("the file is longer than the %d bytes the manifest says", f.Size)}
			}
			if crc32.Checksum(buf[:n], castagnoli) != f.CRC[i] {
				return &RestoreError{File: p, Offset: off, Err: fmt.Errorf("checksum mismatch in bytes [%d, %d)", off, off+int64(n))}
			}
			if _, err := out.Write(buf[:n]); err != nil {
				return fmt.Errorf("restore: %w", err)
			}
			off += int64(n)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("restore: read %s: %w", p, rerr)
		}
	}
	if off != f.Size {
		return &RestoreError{File: p, Offset: off, Err: fmt.Errorf("the file is %d bytes, the manifest says %d (truncated)", off, f.Size)}
	}
	return out.Sync()
}

// checkBlob checks that the blob at p holds what its name says: its
// SHA-256 in the clear, its HMAC under keys and authentic chunks when
// encrypted (schema.CheckBlob).
func checkBlob(p string, keys *crypt.Keys) error {
	if err := schema.CheckBlob(p, keys); err != nil {
		var ce *crypt.CorruptionError
		if errors.As(err, &ce) {
			return &RestoreError{File: p, Offset: -1, Err: fmt.Errorf("plaintext offset %d: %w", ce.Offset, ce.Err)}
		}
		return &RestoreError{File: p, Offset: -1, Err: err}
	}
	return nil
}

// derive opens the restored directory dir (copied from the backup in
// src): the engine resumes from the
// checkpoint (or derives everything, without one), and the search
// index is built from the artifacts.
func derive(ctx context.Context, dir, src string, keys *crypt.Keys, out *Restored) error {
	e, err := engine.Open(dir, &engine.Options{Keys: keys})
	if err != nil {
		var de *engine.DamagedError
		if errors.As(err, &de) {
			return &RestoreError{File: filepath.Join(src, "db"), Offset: -1, Err: err}
		}
		return fmt.Errorf("restore: open the restored directory: %w", err)
	}
	defer e.Close()
	derive := e.CatchUp
	if out.Manifest.Derived == nil {
		// A raw backup: derive everything, from the snapshot retention
		// took of what it removed from the WAL when there is one.
		derive = e.Rebuild
	}
	if out.Derived, err = derive(ctx); err != nil {
		return fmt.Errorf("restore: derive from the WAL: %w", err)
	}
	ix, err := index.Open(IndexDir(dir), &index.Options{Keys: e.Keys()})
	if err != nil {
		return fmt.Errorf("restore: open the index: %w", err)
	}
	out.Indexed, err = ix.Sync(e)
	if err = errors.Join(err, ix.Close()); err != nil {
		return fmt.Errorf("restore: build the index: %w", err)
	}
	return e.Close()
}

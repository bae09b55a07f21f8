package engine

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/bbengine/bbengine/engine/schema"
	"github.com/bbengine/bbengine/internal/crypt"
)

// RewrapTargets lists the encrypted files of the data directory dir that
// the engine writes: Pebble's (the store, and retention's snapshot of
// it) and the blobs, each with the associated data its data key is bound
// to, for re-wrapping them by a new key generation
// (crypt.RewrapFiles). No engine may have dir open.
func RewrapTargets(dir string) ([]crypt.RewrapTarget, error) {
	var out []crypt.RewrapTarget
	for _, sub := range []string{"db", snapshotDir} {
		root := filepath.Join(dir, sub)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return filepath.SkipAll
			}
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			out = append(out, crypt.RewrapTarget{Path: p, AAD: pebbleAAD})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	blobs, err := schema.BlobRewrapTargets(dir)
	if err != nil {
		return nil, err
	}
	return append(out, blobs...), nil
}

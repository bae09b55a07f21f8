package derive

import (
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/wal"
)

// What the external tests (package derive_test) use of the pipeline's
// insides.

// FrameCache is the cache of a pass's import frames.
type FrameCache = frameCache

func (fc *frameCache) Add(off uint64, rec exchange.Import) { fc.add(off, rec) }

func (fc *frameCache) Records(fs *ImportFileState) ([]ImportRecord, bool) { return fc.records(fs) }

// Last returns a cache of fc's last frame alone.
func (fc *frameCache) Last() *frameCache {
	return &frameCache{offs: fc.offs[len(fc.offs)-1:], recs: fc.recs[len(fc.recs)-1:]}
}

// ReadImportRecords reads a file's records back from the WAL.
func ReadImportRecords(r *wal.Reader, fs *ImportFileState) ([]ImportRecord, error) {
	return (*Pipeline)(nil).readImportRecords(r, fs)
}

package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bbengine/bbengine/internal/crypt"
)

// cryptFS is the file system Pebble writes an encrypted data
// directory's derived state through (docs/design/encryption.md section
// 3.2): every file but the LOCK starts with crypt's 128-byte header,
// which holds the file's own data key wrapped by the directory's keys,
// so Link, Rename and Pebble's checkpoints need nothing beside the file.
// The data key is bound to the role "pebble", not to the file's name,
// which Pebble changes (a temporary file renamed, a table linked into a
// checkpoint).
//
// A file's shape follows its name: tables (*.sst, *.blob and the
// engine's event table) are chunked, written once and read at random;
// everything else (Pebble's WAL, MANIFEST, OPTIONS, markers, temporary
// files) is records, one per Write, appended and never rewritten.
// Sizes and offsets seen through cryptFS are the plaintext's.
//
// The stack is cryptFS{ownerFS{base}}: tests put Pebble's errorfs in
// Options.FS, below both, and see the real writes.
type cryptFS struct {
	vfs.FS
	keys *crypt.Keys
}

// pebbleAAD binds the data keys of Pebble's files to their role.
var pebbleAAD = []byte("pebble")

// tableChunkLog is the chunk size of tables: 16 KiB, so a random read of
// one 32 KiB block decrypts at most 3 chunks.
const tableChunkLog = 14

// newCryptFS returns fs encrypting under keys.
func newCryptFS(fs vfs.FS, keys *crypt.Keys) vfs.FS { return cryptFS{FS: fs, keys: keys} }

// shapeOf returns the shape of the file name, and false for a file kept
// in the clear (Pebble's LOCK, which holds nothing).
func shapeOf(fs vfs.FS, name string) (crypt.Shape, bool) {
	base := fs.PathBase(name)
	switch {
	case base == "LOCK":
		return 0, false
	case strings.HasSuffix(base, ".sst"), strings.HasSuffix(base, ".blob"), base == ingestName:
		return crypt.Chunked, true
	}
	return crypt.Records, true
}

// corrupt marks err, a damaged encrypted file, as Pebble's corruption,
// so pebble.IsCorruptionError holds and the engine reports a
// *DamagedError.
func corrupt(err error) error {
	if err == nil || err == io.EOF || pebble.IsCorruptionError(err) {
		return err
	}
	if errors.Is(err, crypt.ErrCorruption) || errors.Is(err, crypt.ErrAuth) || errors.Is(err, crypt.ErrNotEncrypted) || errors.Is(err, crypt.ErrUnknownGeneration) {
		return fmt.Errorf("%w: %w", pebble.ErrCorruption, err)
	}
	return err
}

func (c cryptFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := c.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return c.newWriter(f, name)
}

func (c cryptFS) newWriter(f vfs.File, name string) (vfs.File, error) {
	shape, ok := shapeOf(c.FS, name)
	if !ok {
		return f, nil
	}
	var (
		w   vfs.File
		err error
	)
	if shape == crypt.Chunked {
		w, err = newChunkWriter(f, c.keys)
	} else {
		w, err = newRecordWriter(f, c.keys)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("engine: create %s: %w", name, err)
	}
	return w, nil
}

// OpenReadWrite creates a file that does not exist or is empty. Pebble
// opens no existing file of the store for writing (it recycles logs
// with ReuseForWrite), and an encrypted file is never rewritten in place.
func (c cryptFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if _, ok := shapeOf(c.FS, name); !ok {
		return c.FS.OpenReadWrite(name, category, opts...)
	}
	if fi, err := c.FS.Stat(name); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("engine: open %s for writing: an encrypted file is not rewritten in place", name)
	}
	f, err := c.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return c.newWriter(f, name)
}

// ReuseForWrite creates newname afresh, as Pebble's contract allows:
// a recycled log rewritten in place could lose, to a torn write, bytes
// the records shape had made durable.
func (c cryptFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := c.FS.Remove(oldname); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return c.Create(newname, category)
}

func (c cryptFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := c.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	shape, ok := shapeOf(c.FS, name)
	if !ok {
		return f, nil
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.IsDir() {
		return f, nil
	}
	var r vfs.File
	if shape == crypt.Chunked {
		r, err = newChunkReader(f, fi.Size(), c.keys, name)
	} else {
		r, err = newRecordReader(f, fi.Size(), c.keys, name)
	}
	if err != nil {
		f.Close()
		// crypt's errors name the file.
		return nil, corrupt(err)
	}
	return r, nil
}

// Stat reports the plaintext size: a table's from its file size, a
// records file's by reading it.
func (c cryptFS) Stat(name string) (vfs.FileInfo, error) {
	fi, err := c.FS.Stat(name)
	if err != nil || fi.IsDir() {
		return fi, err
	}
	shape, ok := shapeOf(c.FS, name)
	if !ok {
		return fi, nil
	}
	if shape == crypt.Chunked {
		if fi.Size() < crypt.HeaderSize {
			// A crash or a full disk while the table was created: it
			// holds nothing, and reading it fails.
			return plainInfo{fi, 0}, nil
		}
		size, err := crypt.PlainSize(fi.Size(), tableChunkLog)
		if err != nil {
			return nil, corrupt(&crypt.CorruptionError{Path: name, Err: err})
		}
		return plainInfo{fi, size}, nil
	}
	f, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

func (c cryptFS) Unwrap() vfs.FS { return c.FS }

// plainInfo is a file's info with its plaintext size.
type plainInfo struct {
	vfs.FileInfo
	size int64
}

func (i plainInfo) Size() int64 { return i.size }

var (
	errWriteOnly = errors.New("engine: an encrypted file open for writing is not read")
	errReadOnly  = errors.New("engine: an encrypted file open for reading is not written")
	errWriteAt   = errors.New("engine: an encrypted file is written in order only")
)

// chunkWriter writes a chunked file. A Sync makes the partial chunk
// durable, sealed as the last one; when more is written that chunk is
// written again, under a new nonce, at the same place. A table only
// counts once Pebble has finished and synced it, so a crash between the
// two leaves nothing Pebble relies on.
type chunkWriter struct {
	vfs.File
	mu    sync.Mutex
	c     *crypt.Chunker
	plain []byte
	out   []byte
	index uint64 // the chunk plain fills
	size  int64  // plaintext written
	dirty bool   // plain holds bytes the file does not have as a last chunk
	err   error
}

const tableChunk = 1 << tableChunkLog

func newChunkWriter(f vfs.File, k *crypt.Keys) (*chunkWriter, error) {
	h, key, err := crypt.NewHeader(k, crypt.Chunked, tableChunkLog, pebbleAAD)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(h.Append(nil), 0); err != nil {
		return nil, err
	}
	return &chunkWriter{File: f, c: crypt.NewChunker(crypt.NewAEAD(key), h.Salt),
		plain: make([]byte, 0, tableChunk), out: make([]byte, 0, tableChunk+crypt.ChunkOverhead), dirty: true}, nil
}

// chunkAt is where chunk i starts in the file.
func chunkAt(i uint64) int64 {
	return crypt.HeaderSize + int64(i)*(tableChunk+crypt.ChunkOverhead)
}

func (w *chunkWriter) seal(last bool) error {
	out, err := w.c.Seal(w.out[:0], w.index, last, w.plain)
	if err == nil {
		_, err = w.File.WriteAt(out, chunkAt(w.index))
	}
	w.out = out[:0]
	if err != nil {
		w.err = err
	}
	return err
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	n := 0
	for len(p) > 0 {
		if len(w.plain) == tableChunk {
			if err := w.seal(false); err != nil {
				return n, err
			}
			w.plain = w.plain[:0]
			w.index++
		}
		k := copy(w.plain[len(w.plain):tableChunk], p)
		w.plain = w.plain[:len(w.plain)+k]
		p, n = p[k:], n+k
		w.size += int64(k)
		w.dirty = true
	}
	return n, nil
}

// flush writes the partial chunk as the last one, unless it is there.
func (w *chunkWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	if !w.dirty {
		return nil
	}
	if err := w.seal(true); err != nil {
		return err
	}
	w.dirty = false
	return nil
}

func (w *chunkWriter) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.flush(); err != nil {
		return err
	}
	return w.File.Sync()
}

func (w *chunkWriter) SyncData() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.flush(); err != nil {
		return err
	}
	return w.File.SyncData()
}

// SyncTo queues the whole chunks written so far; it never makes the
// partial chunk durable, so it never reports a full sync.
func (w *chunkWriter) SyncTo(int64) (bool, error) {
	w.mu.Lock()
	end := chunkAt(w.index)
	w.mu.Unlock()
	_, err := w.File.SyncTo(end)
	return false, err
}

func (w *chunkWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.flush()
	return errors.Join(err, w.File.Close())
}

func (w *chunkWriter) Stat() (vfs.FileInfo, error) {
	fi, err := w.File.Stat()
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return plainInfo{fi, w.size}, nil
}

func (w *chunkWriter) Preallocate(off, n int64) error {
	start := chunkAt(uint64(off / tableChunk))
	return w.File.Preallocate(start, chunkAt(uint64((off+n)/tableChunk+1))-start)
}

func (w *chunkWriter) Read([]byte) (int, error)           { return 0, errWriteOnly }
func (w *chunkWriter) ReadAt([]byte, int64) (int, error)  { return 0, errWriteOnly }
func (w *chunkWriter) WriteAt([]byte, int64) (int, error) { return 0, errWriteAt }

// recordWriter writes a records file: each Write is one record, written
// at once, so a write Pebble's log writer made without a sync is in the
// page cache as soon as it returns, as in the clear.
type recordWriter struct {
	vfs.File
	mu sync.Mutex
	w  *crypt.RecordWriter
}

func newRecordWriter(f vfs.File, k *crypt.Keys) (*recordWriter, error) {
	w, err := crypt.NewRecordWriter(f, k, pebbleAAD)
	if err != nil {
		return nil, err
	}
	return &recordWriter{File: f, w: w}, nil
}

func (w *recordWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (w *recordWriter) SyncTo(int64) (bool, error) {
	w.mu.Lock()
	end := w.w.FileSize()
	w.mu.Unlock()
	return w.File.SyncTo(end)
}

func (w *recordWriter) Stat() (vfs.FileInfo, error) {
	fi, err := w.File.Stat()
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return plainInfo{fi, w.w.Size()}, nil
}

// Preallocate scales the range by the records' overhead, counting one
// record per 4 KiB written.
func (w *recordWriter) Preallocate(off, n int64) error {
	w.mu.Lock()
	start := w.w.FileSize()
	w.mu.Unlock()
	return w.File.Preallocate(start, n+(n/4096+1)*crypt.RecordOverhead)
}

func (w *recordWriter) Read([]byte) (int, error)           { return 0, errWriteOnly }
func (w *recordWriter) ReadAt([]byte, int64) (int, error)  { return 0, errWriteOnly }
func (w *recordWriter) WriteAt([]byte, int64) (int, error) { return 0, errWriteAt }

// chunkReader reads a chunked file: ReadAt is safe for concurrent use
// (crypt.Reader), Read keeps an offset of its own.
type chunkReader struct {
	vfs.File
	r   *crypt.Reader
	mu  sync.Mutex
	off int64
}

func newChunkReader(f vfs.File, size int64, k *crypt.Keys, name string) (*chunkReader, error) {
	r, err := crypt.NewReader(f, size, k, pebbleAAD, name)
	if err != nil {
		return nil, err
	}
	return &chunkReader{File: f, r: r}, nil
}

func (r *chunkReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	return n, corrupt(err)
}

func (r *chunkReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.r.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, corrupt(err)
}

func (r *chunkReader) Stat() (vfs.FileInfo, error) {
	fi, err := r.File.Stat()
	if err != nil {
		return nil, err
	}
	return plainInfo{fi, r.r.Size()}, nil
}

func (r *chunkReader) Prefetch(off, n int64) error {
	start := chunkAt(uint64(off / tableChunk))
	return r.File.Prefetch(start, chunkAt(uint64((off+n)/tableChunk+1))-start)
}

func (r *chunkReader) Write([]byte) (int, error)          { return 0, errReadOnly }
func (r *chunkReader) WriteAt([]byte, int64) (int, error) { return 0, errReadOnly }

// recordReader reads a records file: Read in order, ReadAt through
// crypt.RecordReader's index.
type recordReader struct {
	vfs.File
	mu sync.Mutex
	r  *crypt.RecordReader
}

func newRecordReader(f vfs.File, size int64, k *crypt.Keys, name string) (*recordReader, error) {
	r, err := crypt.NewRecordReader(f, size, k, pebbleAAD, name)
	if err != nil {
		return nil, err
	}
	return &recordReader{File: f, r: r}, nil
}

func (r *recordReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.r.Read(p)
	return n, corrupt(err)
}

func (r *recordReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	return n, corrupt(err)
}

func (r *recordReader) Stat() (vfs.FileInfo, error) {
	fi, err := r.File.Stat()
	if err != nil {
		return nil, err
	}
	size, err := r.r.Size()
	if err != nil {
		return nil, corrupt(err)
	}
	return plainInfo{fi, size}, nil
}

func (r *recordReader) Prefetch(int64, int64) error        { return nil }
func (r *recordReader) Write([]byte) (int, error)          { return 0, errReadOnly }
func (r *recordReader) WriteAt([]byte, int64) (int, error) { return 0, errReadOnly }

// storeEncryption reports whether the store directory dbDir holds
// Pebble files written in the clear and whether it holds encrypted ones,
// judged by the first bytes of its MANIFEST and OPTIONS
// files (a new store has none).
func storeEncryption(dbDir string) (clear, encrypted bool, err error) {
	ents, err := os.ReadDir(dbDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, false, nil
		}
		return false, false, err
	}
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, "MANIFEST-") && !strings.HasPrefix(n, "OPTIONS-") {
			continue
		}
		f, err := os.Open(filepath.Join(dbDir, n))
		if err != nil {
			return false, false, err
		}
		b := make([]byte, len(crypt.Magic))
		k, _ := io.ReadFull(f, b)
		f.Close()
		switch {
		case k == 0:
		case crypt.IsEncrypted(b[:k]):
			encrypted = true
		case k == len(b) || !strings.HasPrefix(crypt.Magic, string(b[:k])):
			clear = true
		}
	}
	return clear, encrypted, nil
}

// checkEncryption refuses to mix: a directory with a key file, or a
// store of encrypted files, opened without keys, and a store written in
// the clear opened with keys.
func checkEncryption(dir, dbDir string, keys *crypt.Keys) error {
	clear, encrypted, err := storeEncryption(dbDir)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if keys == nil {
		if crypt.Exists(dir) || encrypted {
			return fmt.Errorf("engine: %s is encrypted: unlock it with BBENGINE_PASSPHRASE, BBENGINE_AGE_IDENTITY or the OS keyring", dir)
		}
		return nil
	}
	if clear {
		return fmt.Errorf("engine: %s holds derived state written in the clear, and the directory is encrypted: move it aside (mv %s %s.clear) and open again to derive it encrypted from the WAL", dbDir, dbDir, dbDir)
	}
	return nil
}

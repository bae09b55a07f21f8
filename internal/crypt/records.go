package crypt

import (
	"bytes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
)

// A records file (shape Records) is the header followed by one record per
// write, appended and never rewritten:
//
//	u32 len (plaintext bytes, little-endian)
//	[12] nonce
//	[len] ciphertext
//	[16] tag;  AAD = file salt || u64 plaintext offset of the record
//
// A record that fails (cut short, a bad tag, a length past the end) with
// no valid record after it is the file's torn tail: a write a crash cut,
// read as end of file. One followed by a valid record is damage, reported
// as a *CorruptionError.

// RecordOverhead is what each record adds to its plaintext: length,
// nonce and tag.
const RecordOverhead = 4 + NonceSize + TagSize

// MaxRecord is the most plaintext one record holds; a longer write is
// split into several records.
const MaxRecord = 1 << 20

// RecordWriter appends records to a records file. It is not safe for
// concurrent use.
type RecordWriter struct {
	w    io.Writer
	aead cipher.AEAD
	ad   [SaltSize + 8]byte
	off  int64 // plaintext bytes written
	size int64 // file bytes written, header included
	buf  []byte
	err  error
}

// NewRecordWriter writes the header of a new records file to w, with a
// fresh data key bound to aad, and returns a writer of its records.
func NewRecordWriter(w io.Writer, k *Keys, aad []byte) (*RecordWriter, error) {
	h, key, err := NewHeader(k, Records, 0, aad)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(h.Append(nil)); err != nil {
		return nil, err
	}
	rw := &RecordWriter{w: w, aead: NewAEAD(key), size: HeaderSize}
	copy(rw.ad[:], h.Salt[:])
	return rw, nil
}

// Write appends p as one record (several when it is longer than
// MaxRecord), each in one write to the underlying writer, so a crash
// tears at most the last. An empty p writes nothing. A failed write is
// sticky.
func (w *RecordWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n := 0
	for len(p) > 0 {
		m := min(len(p), MaxRecord)
		if err := w.record(p[:m]); err != nil {
			w.err = err
			return n, err
		}
		p, n = p[m:], n+m
	}
	return n, nil
}

func (w *RecordWriter) record(p []byte) error {
	b := append(w.buf[:0], 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b, uint32(len(p)))
	b = append(b, make([]byte, NonceSize)...)
	mustRand(b[4 : 4+NonceSize])
	binary.LittleEndian.PutUint64(w.ad[SaltSize:], uint64(w.off))
	b = w.aead.Seal(b, b[4:4+NonceSize], p, w.ad[:])
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	w.off += int64(len(p))
	w.size += int64(len(b))
	return nil
}

// Size returns the plaintext bytes written.
func (w *RecordWriter) Size() int64 { return w.off }

// FileSize returns the bytes written to the underlying writer, header
// included.
func (w *RecordWriter) FileSize() int64 { return w.size }

// RecordReader reads a records file: sequentially with Read, or at
// random with ReadAt, which indexes the records on first use. Read is
// not safe for concurrent use; ReadAt and Size are.
type RecordReader struct {
	r        io.ReaderAt
	fileSize int64
	path     string
	aead     cipher.AEAD
	salt     [SaltSize]byte

	// Read's state: the next record's file offset and plaintext offset,
	// and the unread rest of the last record decrypted.
	pos, poff int64
	pending   []byte
	rb        readBufs
	rerr      error

	once  sync.Once
	index []recordPos // records in order, then the end
	ierr  error
	pool  sync.Pool
}

// readBufs are a reader's buffers: Read's own, ReadAt's from a pool.
type readBufs struct {
	plain, enc []byte
	lb         [4]byte
	ad         [SaltSize + 8]byte
}

// recordPos is where a record starts in the file and in the plaintext.
type recordPos struct{ pos, poff int64 }

// NewRecordReader opens the records file r of fileSize bytes, unwrapping
// its data key with k and aad. path, if not empty, names the file in
// errors. A file shorter than its header whose bytes are a prefix of one
// (a crash cut it while it was created) reads as empty.
func NewRecordReader(r io.ReaderAt, fileSize int64, k *Keys, aad []byte, path string) (*RecordReader, error) {
	rd := &RecordReader{r: r, fileSize: fileSize, path: path, pos: HeaderSize}
	rd.pool.New = func() any { return new(readBufs) }
	if fileSize < HeaderSize {
		b := make([]byte, fileSize)
		if _, err := r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if !bytes.HasPrefix([]byte(Magic), b[:min(len(b), len(Magic))]) {
			return nil, fmt.Errorf("%s: %w", nameOr(path), ErrNotEncrypted)
		}
		rd.fileSize = 0
		rd.pos = 0
		rd.index = []recordPos{{0, 0}}
		rd.once.Do(func() {})
		return rd, nil
	}
	var hb [HeaderSize]byte
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		return nil, err
	}
	h, err := ParseHeader(hb[:])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameOr(path), err)
	}
	if h.Shape != Records {
		return nil, fmt.Errorf("%s: shape %d, want records", nameOr(path), h.Shape)
	}
	key, err := h.Key(k, aad)
	if err != nil {
		return nil, fmt.Errorf("%s: unwrap the data key: %w", nameOr(path), err)
	}
	rd.aead, rd.salt = NewAEAD(key), h.Salt
	return rd, nil
}

// open decrypts the record at file offset pos, of plaintext offset poff,
// into dst, reading it into sc's buffers (grown as needed). It returns the
// record's file length, or io.EOF at the end of the file, or errTorn
// when the record is not valid.
func (r *RecordReader) open(dst []byte, sc *readBufs, pos, poff int64) ([]byte, int64, error) {
	if pos >= r.fileSize {
		return dst, 0, io.EOF
	}
	if r.fileSize-pos < RecordOverhead {
		return dst, 0, errTorn
	}
	if _, err := r.r.ReadAt(sc.lb[:], pos); err != nil {
		return dst, 0, r.ioErr(err)
	}
	n := int64(binary.LittleEndian.Uint32(sc.lb[:]))
	if n == 0 || n > MaxRecord || n > r.fileSize-pos-RecordOverhead {
		return dst, 0, errTorn
	}
	if int64(cap(sc.enc)) < NonceSize+n+TagSize {
		sc.enc = make([]byte, NonceSize+n+TagSize)
	}
	b := sc.enc[:NonceSize+n+TagSize]
	if _, err := r.r.ReadAt(b, pos+4); err != nil {
		return dst, 0, r.ioErr(err)
	}
	copy(sc.ad[:], r.salt[:])
	binary.LittleEndian.PutUint64(sc.ad[SaltSize:], uint64(poff))
	out, err := r.aead.Open(dst, b[:NonceSize], b[NonceSize:], sc.ad[:])
	if err != nil {
		return dst, 0, errTorn
	}
	return out, RecordOverhead + n, nil
}

// errTorn marks a record that is not valid; tail tells whether it is
// the file's torn tail or damage.
var errTorn = errors.New("crypt: invalid record")

func (r *RecordReader) ioErr(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%s: read: %w", nameOr(r.path), err)
}

// tail decides about the invalid record at file offset pos, plaintext
// offset poff: nil when no valid record follows it (a torn tail), a
// *CorruptionError when one does. It tries every offset after pos as the
// start of the next record, whose plaintext offset the distance fixes.
func (r *RecordReader) tail(pos, poff int64) error {
	rest := make([]byte, r.fileSize-pos)
	if _, err := r.r.ReadAt(rest, pos); err != nil && !errors.Is(err, io.EOF) {
		return r.ioErr(err)
	}
	var ad [SaltSize + 8]byte
	copy(ad[:], r.salt[:])
	var out []byte
	for y := int64(RecordOverhead + 1); y+RecordOverhead < int64(len(rest)); y++ {
		n := int64(binary.LittleEndian.Uint32(rest[y:]))
		if n == 0 || n > MaxRecord || y+RecordOverhead+n > int64(len(rest)) {
			continue
		}
		binary.LittleEndian.PutUint64(ad[SaltSize:], uint64(poff+y-RecordOverhead))
		enc := rest[y+4 : y+RecordOverhead+n]
		var err error
		if out, err = r.aead.Open(out[:0], enc[:NonceSize], enc[NonceSize:], ad[:]); err == nil {
			return &CorruptionError{Path: r.path, Offset: poff,
				Err: fmt.Errorf("%w: the record at file offset %d is damaged and a valid one follows at %d", ErrAuth, pos, pos+y)}
		}
	}
	return nil
}

// Read reads the plaintext in order. At a torn tail it returns io.EOF.
func (r *RecordReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(r.pending) == 0 {
		if r.rerr != nil {
			return 0, r.rerr
		}
		out, n, err := r.open(r.rb.plain[:0], &r.rb, r.pos, r.poff)
		if err == errTorn {
			if err = r.tail(r.pos, r.poff); err == nil {
				err = io.EOF
			}
		}
		if err != nil {
			r.rerr = err
			return 0, err
		}
		r.rb.plain, r.pending = out, out
		r.pos += n
		r.poff += int64(len(out))
	}
	k := copy(p, r.pending)
	r.pending = r.pending[k:]
	return k, nil
}

// build indexes the records, authenticating each.
func (r *RecordReader) build() {
	r.once.Do(func() {
		pos, poff := int64(HeaderSize), int64(0)
		var sc readBufs
		for {
			out, n, err := r.open(sc.plain[:0], &sc, pos, poff)
			if err == errTorn {
				err = r.tail(pos, poff)
				if err == nil {
					err = io.EOF
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				r.ierr = err
				return
			}
			sc.plain = out
			r.index = append(r.index, recordPos{pos, poff})
			pos, poff = pos+n, poff+int64(len(out))
		}
		r.index = append(r.index, recordPos{pos, poff})
	})
}

// Size returns the plaintext size: up to the torn tail, if any. It reads
// and authenticates the whole file the first time.
func (r *RecordReader) Size() (int64, error) {
	r.build()
	if r.ierr != nil {
		return 0, r.ierr
	}
	return r.index[len(r.index)-1].poff, nil
}

// ReadAt reads plaintext at off, authenticating every record it touches.
func (r *RecordReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("crypt: negative offset")
	}
	size, err := r.Size()
	if err != nil {
		return 0, err
	}
	if off >= size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	recs := r.index[:len(r.index)-1]
	i := sort.Search(len(recs), func(i int) bool { return recs[i].poff > off }) - 1
	b := r.pool.Get().(*readBufs)
	defer r.pool.Put(b)
	n := 0
	for ; len(p) > 0 && i < len(recs); i++ {
		out, _, err := r.open(b.plain[:0], b, recs[i].pos, recs[i].poff)
		if err != nil {
			if err == errTorn {
				err = &CorruptionError{Path: r.path, Offset: recs[i].poff, Err: fmt.Errorf("%w: the record at file offset %d changed after it was read", ErrAuth, recs[i].pos)}
			}
			return n, err
		}
		b.plain = out
		k := copy(p, out[off-recs[i].poff:])
		p, n, off = p[k:], n+k, off+int64(k)
	}
	if len(p) > 0 {
		return n, io.EOF
	}
	return n, nil
}

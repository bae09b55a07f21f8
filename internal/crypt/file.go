package crypt

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// HeaderSize is the size of an encrypted file's header.
const HeaderSize = 128

// Magic starts every encrypted file.
const Magic = "BBCRYPT\x00"

// SaltSize is the size of a file's random salt.
const SaltSize = 16

// ChunkOverhead is what each chunk adds to its plaintext: nonce and tag.
const ChunkOverhead = NonceSize + TagSize

// Shape is the layout that follows an encrypted file's header.
type Shape uint8

// Shapes.
const (
	// Chunked files hold fixed-size chunks: written once, read at random
	// (Pebble tables, Bluge segments, blobs).
	Chunked Shape = 1
	// Records files hold one record per write: appended and synced as
	// they go (Pebble's WAL and MANIFEST).
	Records Shape = 2
)

const (
	headerVersion = 1
	cipherAESGCM  = 1
)

// ErrNotEncrypted reports a file that does not start with Magic.
var ErrNotEncrypted = errors.New("crypt: not an encrypted file")

// ErrCorruption is what every CorruptionError unwraps to.
var ErrCorruption = errors.New("crypt: corrupt encrypted file")

// CorruptionError reports damage in an encrypted file: a chunk or record
// that fails authentication, or a file cut short.
type CorruptionError struct {
	// Path names the file, when the reader was given it.
	Path string
	// Offset is the plaintext offset where the damage starts.
	Offset int64
	// Err says what is wrong.
	Err error
}

func (e *CorruptionError) Error() string {
	p := e.Path
	if p == "" {
		p = "encrypted file"
	}
	return fmt.Sprintf("%s: at plaintext offset %d: %v (the file was changed or cut after it was written, or belongs to another data directory)", p, e.Offset, e.Err)
}

// Unwrap makes errors.Is(err, ErrCorruption) hold, and errors.Is(err,
// ErrAuth) when a tag failed.
func (e *CorruptionError) Unwrap() []error { return []error{ErrCorruption, e.Err} }

// Header is an encrypted file's header.
type Header struct {
	Shape    Shape
	ChunkLog uint8
	Gen      uint32
	Salt     [SaltSize]byte
	Wrapped  [WrappedSize]byte
}

// NewHeader makes the header of a new file with a fresh data key wrapped
// by k's active generation and bound to aad, and returns the data key.
// chunkLog is the log2 of the chunk size of a Chunked file (10 to 24);
// it is ignored for Records.
func NewHeader(k *Keys, shape Shape, chunkLog uint8, aad []byte) (Header, [KeySize]byte, error) {
	h := Header{Shape: shape, ChunkLog: chunkLog}
	if shape == Records {
		h.ChunkLog = 0
	} else if chunkLog < 10 || chunkLog > 24 {
		return h, [KeySize]byte{}, fmt.Errorf("crypt: chunk size 2^%d out of range", chunkLog)
	}
	if _, err := rand.Read(h.Salt[:]); err != nil {
		return h, [KeySize]byte{}, fmt.Errorf("crypt: random salt: %w", err)
	}
	d, err := k.NewDataKey(h.wrapAAD(aad))
	if err != nil {
		return h, d.Key, err
	}
	h.Gen, h.Wrapped = d.Gen, d.Wrapped
	return h, d.Key, nil
}

// wrapAAD binds a data key to its header (all of it but the generation,
// which Rewrap changes and the wrap's own AAD holds) and to aad.
func (h *Header) wrapAAD(aad []byte) []byte {
	var b [HeaderSize]byte
	h.encode(b[:])
	ad := make([]byte, 0, 28+len(aad))
	ad = append(ad, b[0:12]...)
	ad = append(ad, b[16:32]...)
	return append(ad, aad...)
}

// Key unwraps the file's data key with k; aad must be the one the file
// was made with.
func (h *Header) Key(k *Keys, aad []byte) ([KeySize]byte, error) {
	return k.Unwrap(h.Gen, h.Wrapped[:], h.wrapAAD(aad))
}

// Rewrap re-wraps the header's data key by k's active generation. The
// data key, and so the file's data, stay the same.
func (h *Header) Rewrap(k *Keys, aad []byte) error {
	gen, w, err := k.Rewrap(h.Gen, h.Wrapped[:], h.wrapAAD(aad))
	if err != nil {
		return err
	}
	h.Gen, h.Wrapped = gen, w
	return nil
}

// Append appends the header's HeaderSize bytes to dst.
func (h *Header) Append(dst []byte) []byte {
	var b [HeaderSize]byte
	h.encode(b[:])
	return append(dst, b[:]...)
}

func (h *Header) encode(b []byte) {
	copy(b[0:8], Magic)
	b[8] = headerVersion
	b[9] = byte(h.Shape)
	b[10] = cipherAESGCM
	b[11] = h.ChunkLog
	binary.LittleEndian.PutUint32(b[12:16], h.Gen)
	copy(b[16:32], h.Salt[:])
	copy(b[32:92], h.Wrapped[:])
	binary.LittleEndian.PutUint32(b[92:96], crc32.Checksum(b[0:92], castagnoli))
	clear(b[96:128])
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ParseHeader reads a header without any key: a damaged header is told
// apart from a wrong key by its CRC. It returns ErrNotEncrypted when b
// does not start with Magic.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < len(Magic) || !bytes.Equal(b[:len(Magic)], []byte(Magic)) {
		return h, ErrNotEncrypted
	}
	if len(b) < HeaderSize {
		return h, fmt.Errorf("crypt: header cut short: %d of %d bytes", len(b), HeaderSize)
	}
	if got, want := crc32.Checksum(b[0:92], castagnoli), binary.LittleEndian.Uint32(b[92:96]); got != want {
		return h, fmt.Errorf("crypt: header checksum mismatch (%08x, want %08x): the header is damaged", got, want)
	}
	if !bytes.Equal(b[96:HeaderSize], make([]byte, HeaderSize-96)) {
		return h, errors.New("crypt: header's reserved bytes are not zero: the header is damaged")
	}
	if b[8] != headerVersion {
		return h, fmt.Errorf("crypt: format version %d, this build reads version %d", b[8], headerVersion)
	}
	if b[10] != cipherAESGCM {
		return h, fmt.Errorf("crypt: unknown cipher %d", b[10])
	}
	h.Shape, h.ChunkLog = Shape(b[9]), b[11]
	switch {
	case h.Shape == Chunked && (h.ChunkLog < 10 || h.ChunkLog > 24):
		return h, fmt.Errorf("crypt: chunk size 2^%d out of range", h.ChunkLog)
	case h.Shape != Chunked && h.Shape != Records:
		return h, fmt.Errorf("crypt: unknown shape %d", h.Shape)
	}
	h.Gen = binary.LittleEndian.Uint32(b[12:16])
	copy(h.Salt[:], b[16:32])
	copy(h.Wrapped[:], b[32:92])
	return h, nil
}

// Chunker seals and opens the chunks of one chunked file. It is not safe
// for concurrent use: each goroutine takes its own (NewChunker is cheap
// once the AEAD exists).
type Chunker struct {
	aead cipher.AEAD
	ad   [SaltSize + 9]byte
}

// NewChunker returns a Chunker for the file with header h and data key
// key.
func NewChunker(aead cipher.AEAD, salt [SaltSize]byte) *Chunker {
	c := &Chunker{aead: aead}
	copy(c.ad[:SaltSize], salt[:])
	return c
}

func (c *Chunker) setAD(index uint64, last bool) []byte {
	binary.LittleEndian.PutUint64(c.ad[SaltSize:], index)
	c.ad[SaltSize+8] = 0
	if last {
		c.ad[SaltSize+8] = 1
	}
	return c.ad[:]
}

// Seal appends chunk index of plaintext plain, nonce || ciphertext ||
// tag, to dst. plain and dst must not overlap.
func (c *Chunker) Seal(dst []byte, index uint64, last bool, plain []byte) ([]byte, error) {
	n := len(dst)
	dst = append(dst, make([]byte, NonceSize)...)
	if _, err := rand.Read(dst[n:]); err != nil {
		return dst[:n], fmt.Errorf("crypt: random nonce: %w", err)
	}
	return c.aead.Seal(dst, dst[n:n+NonceSize], plain, c.setAD(index, last)), nil
}

// Open appends the plaintext of chunk index, as Seal made it, to dst. It
// returns ErrAuth when the chunk, its index or its last flag differ.
func (c *Chunker) Open(dst []byte, index uint64, last bool, chunk []byte) ([]byte, error) {
	if len(chunk) < ChunkOverhead {
		return dst, ErrAuth
	}
	out, err := c.aead.Open(dst, chunk[:NonceSize], chunk[NonceSize:], c.setAD(index, last))
	if err != nil {
		return dst, ErrAuth
	}
	return out, nil
}

// PlainSize returns the plaintext size of a chunked file of fileSize
// bytes with chunks of 2^chunkLog, or an error when no valid chunk
// layout has that size.
func PlainSize(fileSize int64, chunkLog uint8) (int64, error) {
	body := fileSize - HeaderSize
	if body < ChunkOverhead {
		return 0, fmt.Errorf("file of %d bytes is cut short: its last chunk is missing", fileSize)
	}
	enc := int64(1)<<chunkLog + ChunkOverhead
	n := (body + enc - 1) / enc
	last := body - (n-1)*enc
	if last < ChunkOverhead {
		return 0, fmt.Errorf("file of %d bytes ends inside a chunk's nonce or tag", fileSize)
	}
	return (n-1)*(enc-ChunkOverhead) + last - ChunkOverhead, nil
}

// Writer writes a chunked file sequentially: the header at once, then a
// chunk each time 2^chunkLog bytes are buffered and more follow, and the
// last chunk at Close. Nothing is durable until the caller syncs the
// underlying file after Close. It is not safe for concurrent use.
type Writer struct {
	w      io.Writer
	c      *Chunker
	size   int
	plain  []byte
	out    []byte
	index  uint64
	err    error
	closed bool
}

// NewWriter writes the header of a new chunked file to w, with a fresh
// data key bound to aad, and returns a Writer for its content.
func NewWriter(w io.Writer, k *Keys, chunkLog uint8, aad []byte) (*Writer, error) {
	h, key, err := NewHeader(k, Chunked, chunkLog, aad)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(h.Append(nil)); err != nil {
		return nil, err
	}
	size := 1 << chunkLog
	return &Writer{
		w:     w,
		c:     NewChunker(NewAEAD(key), h.Salt),
		size:  size,
		plain: make([]byte, 0, size),
		out:   make([]byte, 0, size+ChunkOverhead),
	}, nil
}

// Write encrypts p into the file. A failed write is sticky.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, errors.New("crypt: write to a closed Writer")
	}
	n := 0
	for len(p) > 0 {
		if len(w.plain) == w.size {
			if err := w.flush(false); err != nil {
				return n, err
			}
		}
		k := copy(w.plain[len(w.plain):w.size], p)
		w.plain = w.plain[:len(w.plain)+k]
		p, n = p[k:], n+k
	}
	return n, nil
}

func (w *Writer) flush(last bool) error {
	out, err := w.c.Seal(w.out[:0], w.index, last, w.plain)
	if err == nil {
		_, err = w.w.Write(out)
	}
	if err != nil {
		w.err = err
		return err
	}
	w.out, w.plain = out[:0], w.plain[:0]
	w.index++
	return nil
}

// Close writes the last chunk. It does not close or sync the underlying
// writer. It is safe to call twice.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	return w.flush(true)
}

// Reader reads a chunked file at random offsets. ReadAt is safe for
// concurrent use.
type Reader struct {
	r        io.ReaderAt
	path     string
	aead     cipher.AEAD
	salt     [SaltSize]byte
	chunkLog uint8
	size     int64
	fileSize int64
	pool     sync.Pool
}

type readBuf struct {
	c     *Chunker
	enc   []byte
	plain []byte
	index int64
}

// NewReader opens the chunked file r of fileSize bytes, unwrapping its
// data key with k and aad. path, if not empty, names the file in errors.
func NewReader(r io.ReaderAt, fileSize int64, k *Keys, aad []byte, path string) (*Reader, error) {
	var hb [HeaderSize]byte
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &CorruptionError{Path: path, Err: fmt.Errorf("header cut short: %w", io.ErrUnexpectedEOF)}
		}
		return nil, err
	}
	h, err := ParseHeader(hb[:])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameOr(path), err)
	}
	if h.Shape != Chunked {
		return nil, fmt.Errorf("%s: shape %d, want chunked", nameOr(path), h.Shape)
	}
	key, err := h.Key(k, aad)
	if err != nil {
		return nil, fmt.Errorf("%s: unwrap the data key: %w", nameOr(path), err)
	}
	size, err := PlainSize(fileSize, h.ChunkLog)
	if err != nil {
		return nil, &CorruptionError{Path: path, Err: err}
	}
	rd := &Reader{r: r, path: path, aead: NewAEAD(key), salt: h.Salt, chunkLog: h.ChunkLog, size: size, fileSize: fileSize}
	rd.pool.New = func() any {
		cs := 1 << rd.chunkLog
		return &readBuf{c: NewChunker(rd.aead, rd.salt), enc: make([]byte, cs+ChunkOverhead), plain: make([]byte, 0, cs), index: -1}
	}
	// The last chunk is authenticated at open, so a file cut at a chunk
	// boundary, or with a stray partial chunk, fails here and not at a
	// later read that may never touch its end.
	b := rd.pool.Get().(*readBuf)
	defer rd.pool.Put(b)
	enc := int64(1)<<h.ChunkLog + ChunkOverhead
	if err := rd.chunk(b, (fileSize-HeaderSize-1)/enc); err != nil {
		return nil, err
	}
	return rd, nil
}

func nameOr(path string) string {
	if path == "" {
		return "encrypted file"
	}
	return path
}

// Size returns the plaintext size.
func (r *Reader) Size() int64 { return r.size }

// ReadAt reads plaintext at off, authenticating every chunk it touches.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("crypt: negative offset")
	}
	if off >= r.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	b := r.pool.Get().(*readBuf)
	defer r.pool.Put(b)
	cs := int64(1) << r.chunkLog
	n := 0
	for len(p) > 0 && off < r.size {
		idx := off / cs
		if err := r.chunk(b, idx); err != nil {
			return n, err
		}
		k := copy(p, b.plain[off-idx*cs:])
		p, n, off = p[k:], n+k, off+int64(k)
	}
	if len(p) > 0 {
		return n, io.EOF
	}
	return n, nil
}

// chunk decrypts chunk idx into b.plain, unless it is there already.
func (r *Reader) chunk(b *readBuf, idx int64) error {
	if b.index == idx {
		return nil
	}
	b.index = -1
	cs := int64(1) << r.chunkLog
	enc := cs + ChunkOverhead
	start := HeaderSize + idx*enc
	end := min(start+enc, r.fileSize)
	last := end == r.fileSize
	buf := b.enc[:end-start]
	if _, err := r.r.ReadAt(buf, start); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%s: read chunk %d: %w", nameOr(r.path), idx, err)
	}
	out, err := b.c.Open(b.plain[:0], uint64(idx), last, buf)
	if err != nil {
		if last {
			err = fmt.Errorf("%w: last chunk (or the file was cut at a chunk boundary)", err)
		}
		return &CorruptionError{Path: r.path, Offset: idx * cs, Err: err}
	}
	b.plain, b.index = out, idx
	return nil
}

// ReadAll decrypts a whole chunked file held in memory, authenticating
// every chunk and the end. path, if not empty, names it in errors.
func ReadAll(file []byte, k *Keys, aad []byte, path string) ([]byte, error) {
	r, err := NewReader(bytes.NewReader(file), int64(len(file)), k, aad, path)
	if err != nil {
		return nil, err
	}
	out := make([]byte, r.Size())
	if _, err := r.ReadAt(out, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return out, nil
}

// IsEncrypted reports whether b (a file's first bytes) starts with Magic.
func IsEncrypted(b []byte) bool {
	return len(b) >= len(Magic) && string(b[:len(Magic)]) == Magic
}

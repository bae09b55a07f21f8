package wal

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
)

// readChunk is how much a Reader reads from a segment at a time.
const readChunk = 1 << 20

// pollInterval is how often a Reader of a read-only log looks for growth.
const pollInterval = 50 * time.Millisecond

// Reader iterates over the frames of a log, from any frame boundary, and
// can follow the tail while a writer appends (in this process or, for a
// read-only log, another one). Every frame it returns has passed its
// checksum and self-offset check; it stops with a *GapError rather than
// skip bytes missing between two segments. A Reader is not safe for concurrent use;
// use one per goroutine. Close it before the Log.
//
//	r := log.NewReader()
//	defer r.Close()
//	for r.Next() {
//		p, err := r.Payload()
//		...
//	}
//	if err := r.Err(); err != nil { ... }
type Reader struct {
	l    *Log
	f    *os.File
	path string
	base uint64 // base of the open segment
	size int64  // readable bytes of the open segment
	pos  int64  // position of the next frame in the open segment
	next uint64 // logical offset of the next frame when no segment is open

	buf    []byte
	bufPos int64 // segment position of buf[0]

	fr      frame.Frame
	off     uint64
	payload []byte // the current frame's payload: fr.Payload, ebuf or dbuf
	dbuf    []byte // decompressed payloads; never aliases buf
	ebuf    []byte // decrypted payloads; never aliases buf or dbuf
	decoded bool
	perr    error

	aead     cipher.AEAD // data key of the segment at aeadBase
	aeadBase uint64

	end uint64 // end of the log when Next last returned false
	err error
}

// NewReader returns a Reader positioned at the first retained frame.
func (l *Log) NewReader() *Reader {
	r := &Reader{l: l}
	if first, err := l.First(); err == nil {
		r.next = first
	}
	return r
}

// Reset closes r and positions it at the first retained frame of its
// log, as NewReader does, keeping the buffers it read and decoded frames
// into (each up to maxKeptBuf bytes) for the frames it reads next: a
// reader reused for each pass over a log that gains a 700 KB request
// every turn allocates none of it again.
func (r *Reader) Reset() {
	r.Close()
	keep := func(b []byte) []byte {
		if cap(b) > maxKeptBuf {
			return nil
		}
		return b[:0]
	}
	*r = Reader{l: r.l, buf: keep(r.buf), dbuf: keep(r.dbuf), ebuf: keep(r.ebuf)}
	if first, err := r.l.First(); err == nil {
		r.next = first
	}
}

// maxKeptBuf is the largest buffer Reset keeps.
const maxKeptBuf = 4 << 20

// Seek positions r so that Next returns the frame at off. off must be a
// frame boundary (or the end of the log, to follow from there); otherwise
// Seek returns a *BoundaryError naming the next boundary, or an error
// wrapping ErrOutOfRange.
func (r *Reader) Seek(off uint64) error {
	r.closeFile()
	r.err, r.end = nil, 0
	segs, err := r.l.view()
	if err != nil {
		return err
	}
	if len(segs) == 0 && off == 0 {
		// An empty log (a read-only open before the writer created its
		// first segment): offset 0 is its end, to follow from there.
		r.next = 0
		return nil
	}
	i := len(segs) - 1
	for i >= 0 && segs[i].base > off {
		i--
	}
	if i < 0 {
		first := uint64(0)
		if len(segs) > 0 {
			first = segs[0].base
		}
		return fmt.Errorf("%w: offset %d precedes the first retained frame at %d", ErrOutOfRange, off, first)
	}
	s := segs[i]
	if end := s.base + uint64(s.size); off >= end {
		switch {
		case i+1 < len(segs):
			return &BoundaryError{Offset: off, Next: segs[i+1].base}
		case off == end:
			r.next = off
			return nil
		default:
			return fmt.Errorf("%w: offset %d is past the end of the log at %d", ErrOutOfRange, off, end)
		}
	}
	if err := r.open(s); err != nil {
		return err
	}
	want := int64(off - s.base)
	if _, err := r.frameAt(want); err == nil {
		r.pos = want
		return nil
	}
	// Not a boundary: walk the segment to name the next one.
	for p := int64(0); p < r.size; {
		f, err := r.frameAt(p)
		if err != nil {
			r.closeFile()
			return &CorruptionError{Segment: r.path, Offset: s.base + uint64(p), Err: err}
		}
		p += int64(f.Size())
		if p > want {
			r.closeFile()
			return &BoundaryError{Offset: off, Next: s.base + uint64(p)}
		}
	}
	r.closeFile()
	return &BoundaryError{Offset: off, Next: s.base + uint64(s.size)}
}

func (r *Reader) open(s segment) error {
	r.closeFile()
	path := r.l.path(s.base)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("wal: open segment %s: %w", path, err)
	}
	r.f, r.path, r.base, r.size, r.pos = f, path, s.base, s.size, 0
	r.buf, r.bufPos = r.buf[:0], 0
	return nil
}

func (r *Reader) closeFile() {
	if r.f != nil {
		r.next = r.base + uint64(r.pos)
		r.f.Close()
		r.f = nil
	}
}

// load returns the bytes [pos, pos+n) of the open segment, or fewer if the
// segment ends first.
func (r *Reader) load(pos int64, n int) ([]byte, error) {
	if avail := r.size - pos; int64(n) > avail {
		n = int(max(avail, 0))
	}
	if pos >= r.bufPos && pos+int64(n) <= r.bufPos+int64(len(r.buf)) {
		return r.buf[pos-r.bufPos : pos-r.bufPos+int64(n)], nil
	}
	want := int64(max(n, readChunk))
	if want > r.size-pos {
		want = r.size - pos
	}
	if int64(cap(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	if pos < int64(headerFrameLenEnc) {
		// A header frame Log.Rewrap may be rewriting.
		r.l.hdrMu.RLock()
	}
	m, err := r.f.ReadAt(r.buf[:want], pos)
	if pos < int64(headerFrameLenEnc) {
		r.l.hdrMu.RUnlock()
	}
	r.buf, r.bufPos = r.buf[:m], pos
	if m < n {
		if err == io.EOF {
			err = nil // the file is shorter than we knew: treated as a short frame
		}
		return r.buf[:m], err
	}
	return r.buf[:n], nil
}

// frameAt decodes and checks the frame at pos of the open segment.
func (r *Reader) frameAt(pos int64) (frame.Frame, error) {
	b, err := r.load(pos, frame.HeaderLen)
	if err != nil {
		return frame.Frame{}, err
	}
	h, err := frame.ParseHeader(b)
	if err != nil {
		return frame.Frame{}, err
	}
	if b, err = r.load(pos, h.Size()); err != nil {
		return frame.Frame{}, err
	}
	f, err := frame.Decode(b)
	if err != nil {
		return f, err
	}
	if f.Offset != r.base+uint64(pos) {
		return f, errOffsetMismatch
	}
	if pos == 0 {
		if err := checkHeaderFrame(&f); err != nil {
			return f, err
		}
	}
	return f, nil
}

// Next advances to the next frame and reports whether there is one. At the
// end of the log it returns false with Err() == nil; call Wait to follow
// the tail, then Next again. On corruption or an I/O error it returns false
// and Err says where.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	for {
		if r.f == nil {
			ok, err := r.openNext()
			if err != nil {
				r.err = err
				return false
			}
			if !ok {
				return false
			}
		}
		if r.pos >= r.size {
			ok, err := r.advance()
			if err != nil {
				r.err = err
				return false
			}
			if !ok {
				return false
			}
			continue
		}
		f, err := r.frameAt(r.pos)
		if err != nil {
			var perr *os.PathError
			if errors.As(err, &perr) {
				r.err = fmt.Errorf("wal: read segment %s: %w", r.path, err)
				return false
			}
			return r.invalid(err)
		}
		r.fr, r.off = f, r.base+uint64(r.pos)
		r.decoded, r.perr = false, nil
		r.pos += int64(f.Size())
		return true
	}
}

// openNext opens the segment holding r.next, or the first one after it.
func (r *Reader) openNext() (bool, error) {
	segs, err := r.l.view()
	if err != nil {
		return false, err
	}
	for i, s := range segs {
		end := s.base + uint64(s.size)
		if r.next < end || (r.next == end && s.base == segs[len(segs)-1].base) {
			if r.next < s.base && i > 0 {
				prev := segs[i-1]
				if err := gapBetween(r.l.dir, prev.base, prev.base+uint64(prev.size), s.base); err != nil {
					return false, err
				}
			}
			if err := r.open(s); err != nil {
				return false, err
			}
			if r.next > s.base {
				r.pos = int64(r.next - s.base)
			}
			return true, nil
		}
	}
	if len(segs) > 0 {
		last := segs[len(segs)-1]
		r.end = last.base + uint64(last.size)
	}
	return false, nil
}

// advance handles the end of the known part of the open segment: the
// segment grew, or a later segment exists, or the log ends here.
func (r *Reader) advance() (bool, error) {
	segs, err := r.l.view()
	if err != nil {
		return false, err
	}
	for i, s := range segs {
		if s.base < r.base {
			continue
		}
		if s.base == r.base {
			if s.size < r.pos {
				return false, &CorruptionError{Segment: r.path, Offset: r.base + uint64(s.size), Err: errShrunk}
			}
			if s.size > r.size {
				r.size = s.size
				return true, nil
			}
			if i == len(segs)-1 {
				r.end = r.base + uint64(r.size)
				return false, nil
			}
			continue
		}
		// The first segment after the open one (which is therefore
		// sealed): it must start where the open one ends.
		if err := gapBetween(r.l.dir, r.base, r.base+uint64(r.size), s.base); err != nil {
			return false, err
		}
		return true, r.open(s)
	}
	r.end = r.base + uint64(r.size)
	return false, nil
}

// invalid handles an invalid frame at r.pos. In a read-only log it may be a
// frame that another process is still writing: if it is in the last segment
// and nothing valid follows it, the log ends there for now.
func (r *Reader) invalid(reason error) bool {
	if r.l.readOnly {
		segs, err := r.l.view()
		if err != nil {
			r.err = err
			return false
		}
		if len(segs) > 0 && segs[len(segs)-1].base == r.base {
			for attempt := 0; ; attempt++ {
				n := r.size - r.pos
				data := make([]byte, n)
				m, _ := r.f.ReadAt(data, r.pos)
				if findValid(data[:m], r.base+uint64(r.pos), 1) < 0 {
					r.buf = r.buf[:0] // re-read once the writer is done
					r.end = r.base + uint64(r.size)
					return false
				}
				if attempt == 1 {
					break
				}
				time.Sleep(20 * time.Millisecond) // a concurrent write may still be landing
				r.buf = r.buf[:0]
				if _, err := r.frameAt(r.pos); err == nil {
					return r.Next()
				}
			}
		}
	}
	r.err = &CorruptionError{Segment: r.path, Offset: r.base + uint64(r.pos), Err: reason}
	return false
}

// Offset returns the logical offset of the current frame.
func (r *Reader) Offset() uint64 { return r.off }

// Header returns the header of the current frame.
func (r *Reader) Header() frame.Header { return r.fr.Header }

// Stored returns the current frame's stored payload (compressed if the
// header says so, encrypted if it says so: then nonce, ciphertext and
// tag). It is valid until the next call to Next, Seek or Close and must
// not be modified.
func (r *Reader) Stored() []byte { return r.fr.Payload }

// Payload returns the current frame's uncompressed payload, decrypted if
// the frame is encrypted. It is valid until the next call to Next, Seek
// or Close and must not be modified. An encrypted frame that fails
// authentication is a *CorruptionError whose reason is ErrAuth; one read
// without Options.Keys returns ErrNoKey, and one whose segment's data key
// cannot be unwrapped a *KeyError.
func (r *Reader) Payload() ([]byte, error) {
	if !r.decoded {
		r.decoded = true
		fr := r.fr
		if !fr.Encrypted() && r.l.opts.Keys != nil && (fr.Kind != frame.KindSegmentHeader || r.off != r.base) {
			// Anyone can write a clear frame with a valid CRC: in an
			// encrypted log only an authenticated frame is genuine, but
			// for each segment's header frame, which holds the wrapped
			// data key in the clear (the wrap authenticates it).
			r.payload, r.perr = nil, &CorruptionError{Segment: r.path, Offset: r.off, Err: errClearFrame}
			return nil, r.perr
		}
		if fr.Encrypted() {
			aead, err := r.segAEAD()
			if err != nil {
				r.payload, r.perr = nil, err
				return nil, err
			}
			// Decrypt into ebuf, never in place: buf holds the segment
			// bytes later frames are read from.
			p, err := fr.Decrypt(r.ebuf[:0], aead)
			if err != nil {
				r.payload, r.perr = nil, &CorruptionError{Segment: r.path, Offset: r.off, Err: ErrAuth}
				return nil, r.perr
			}
			r.ebuf = p
			fr = frame.Frame{Header: fr.Header.Plain(), Payload: p}
		}
		if !fr.Compressed() {
			r.payload, r.perr = fr.Payload, nil
		} else {
			// Decompress into dbuf, never into payload: for an
			// uncompressed frame payload aliases buf, the segment bytes
			// later frames are read from, and decompressing over them
			// made the next frames fail their checksum.
			var p []byte
			p, r.perr = fr.AppendPayload(r.dbuf[:0])
			if r.perr != nil {
				r.perr = &CorruptionError{Segment: r.path, Offset: r.off, Err: r.perr}
			}
			r.dbuf, r.payload = p, p
		}
	}
	return r.payload, r.perr
}

// segAEAD returns the data key of the open segment: cached, or
// unwrapped from its header frame, read apart from buf (which the
// current frame aliases).
func (r *Reader) segAEAD() (cipher.AEAD, error) {
	if r.aead != nil && r.aeadBase == r.base {
		return r.aead, nil
	}
	keys := r.l.opts.Keys
	if keys == nil {
		return nil, fmt.Errorf("%w (frame at offset %d in segment %s)", ErrNoKey, r.off, r.path)
	}
	a := r.l.cachedAEAD(r.base)
	if a == nil {
		hdr := make([]byte, headerFrameLenEnc)
		r.l.hdrMu.RLock()
		n, err := r.f.ReadAt(hdr, 0)
		r.l.hdrMu.RUnlock()
		if n < len(hdr) && err != nil && err != io.EOF {
			return nil, fmt.Errorf("wal: read segment %s: %w", r.path, err)
		}
		f, err := decodeAt(hdr[:n], r.base, 0)
		if err != nil {
			return nil, &CorruptionError{Segment: r.path, Offset: r.base, Err: err}
		}
		v, k, _ := parseHeaderFrame(&f)
		if v != VersionEncrypted {
			return nil, &CorruptionError{Segment: r.path, Offset: r.off, Err: errClearSegment}
		}
		if a, err = k.unwrap(keys); err != nil {
			return nil, &KeyError{Segment: r.path, Gen: k.gen, Err: err}
		}
		r.l.cacheAEAD(r.base, a)
	}
	r.aead, r.aeadBase = a, r.base
	return a, nil
}

// Err returns the error that stopped Next, if any.
func (r *Reader) Err() error { return r.err }

// Wait blocks until the log has grown past the point where Next last
// returned false, ctx is done (it returns ctx.Err()), or the Log is closed
// (ErrClosed). For a read-only log it polls the directory.
func (r *Reader) Wait(ctx context.Context) error {
	if r.err != nil {
		return r.err
	}
	for {
		if !r.l.readOnly {
			ch := r.l.waitChan(r.end)
			if ch == nil {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-ch:
				return nil
			case <-r.l.done:
				if ch := r.l.waitChan(r.end); ch == nil {
					return nil
				}
				return ErrClosed
			}
		}
		end, err := r.l.End()
		if err != nil {
			return err
		}
		if end > r.end {
			return nil
		}
		t := time.NewTimer(pollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Close releases the Reader's file. It is safe to call more than once.
func (r *Reader) Close() error {
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}

package agentlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// MaxLine is the longest line read (Claude Code lines with base64 images
// pass 1 MB; Codex compaction lines can be far larger).
const MaxLine = 64 << 20

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// File is an open agent log: its decompressed bytes.
type File struct {
	r    io.Reader
	f    *os.File
	path string
	dec  *zstd.Decoder
	in   *countReader // the compressed bytes the decoder consumed
	off  int64        // the decompressed bytes read
	// Compressed reports a zstd file; offsets are in its decompressed
	// stream.
	Compressed bool
}

// CorruptError reports compressed data that does not decompress: a
// truncated or damaged .zst file. Everything before Offset was read.
type CorruptError struct {
	Path string
	// Offset is how far the decompressed data was read; Compressed how
	// far the compressed file was (the damage is in the block ending
	// there, or the file ends before it should).
	Offset     int64
	Compressed int64
	Err        error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: zstd data corrupt or cut short near compressed byte %d (decompressed byte %d): %v",
		e.Path, e.Compressed, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Open opens path, decompressing a zstd file (by its .zst suffix or its
// magic number).
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".zst") {
		// A plain file is read as it is: its reader (a Scanner)
		// buffers.
		var head [4]byte
		if n, err := f.ReadAt(head[:], 0); (err == nil || err == io.EOF) && !bytes.Equal(head[:n], zstdMagic) {
			return &File{r: f, f: f, path: path}, nil
		}
	}
	br := bufio.NewReaderSize(f, 256<<10)
	head, _ := br.Peek(4)
	if !strings.HasSuffix(path, ".zst") && !bytes.Equal(head, zstdMagic) {
		return &File{r: br, f: f, path: path}, nil
	}
	in := &countReader{r: br}
	dec, err := zstd.NewReader(in, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<30))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: zstd: %w", path, err)
	}
	return &File{r: dec, f: f, path: path, dec: dec, in: in, Compressed: true}, nil
}

// Read reads decompressed bytes. A compressed file that does not
// decompress fails with a *CorruptError.
func (f *File) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.off += int64(n)
	if err != nil && err != io.EOF && f.Compressed {
		err = &CorruptError{Path: f.path, Offset: f.off, Compressed: f.in.n, Err: err}
	}
	return n, err
}

// OpenAt opens path positioned at offset off of its decompressed bytes:
// a plain file seeks there, a compressed one is decompressed up to it.
func OpenAt(path string, off int64) (*File, error) {
	if off == 0 {
		return Open(path)
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	if !f.Compressed {
		if _, err := f.f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
		f.r = f.f
		f.off = off
		return f, nil
	}
	if _, err := io.CopyN(io.Discard, f, off); err != nil {
		f.Close()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: shorter than %d bytes", path, off)
		}
		return nil, err
	}
	return f, nil
}

// Close closes the file.
func (f *File) Close() error {
	if f.dec != nil {
		f.dec.Close()
	}
	return f.f.Close()
}

// Line is one complete line of a log.
type Line struct {
	// Offset is the byte offset of the line's first byte; Number its
	// 1-based line number.
	Offset int64
	Number int64
	// Data is the line without its line ending ("\n" or "\r\n"). It is
	// valid until the next call to Next.
	Data []byte
}

// ErrLineTooLong reports a line longer than MaxLine; the scanner skips it.
var ErrLineTooLong = errors.New("line longer than 64 MiB")

// Scanner reads complete lines.
type Scanner struct {
	r      *bufio.Reader
	off    int64 // offset of the next unread byte
	num    int64 // number of the last line read
	line   Line
	buf    []byte
	err    error
	tail   int64 // bytes of an unterminated last line
	tailAt int64
	tailB  []byte
	skips  []Skip
	closed bool
}

// Skip is a line the scanner could not return.
type Skip struct {
	Offset int64
	Number int64
	Err    error
}

// readers are the Scanners' read buffers (1 MiB each), for reuse: an
// import reads hundreds of files.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 1<<20) }}

// NewScanner reads lines from r, whose first byte is at offset of the
// log and begins line number line+1. Release gives its buffer back.
func NewScanner(r io.Reader, offset, line int64) *Scanner {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return &Scanner{r: br, off: offset, num: line}
}

// Release gives the scanner's read buffer back for another scanner to
// reuse; s, and the Data of its lines, must not be used after it. It is
// safe to call twice.
func (s *Scanner) Release() {
	if s.r != nil {
		s.r.Reset(nil)
		readers.Put(s.r)
		s.r = nil
	}
}

// Next reads the next complete line. It returns false at the end of the
// input or on a read error (Err).
func (s *Scanner) Next() bool {
	for !s.closed {
		start := s.off
		s.buf = s.buf[:0]
		var long bool
		for {
			chunk, err := s.r.ReadSlice('\n')
			s.off += int64(len(chunk))
			if !long {
				if len(s.buf)+len(chunk) > MaxLine+2 {
					long = true
					s.buf = s.buf[:0]
				} else {
					s.buf = append(s.buf, chunk...)
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				s.closed = true
				if s.off > start {
					// An unterminated last line: a write in progress.
					s.tail = s.off - start
					s.off = start
					if !long {
						s.tailB, s.tailAt = s.buf, start
					}
				}
				return false
			}
			if err != nil {
				s.closed = true
				s.err = err
				s.off = start
				return false
			}
			break
		}
		s.num++
		if long {
			s.skips = append(s.skips, Skip{Offset: start, Number: s.num, Err: ErrLineTooLong})
			continue
		}
		b := s.buf[:len(s.buf)-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
		s.line = Line{Offset: start, Number: s.num, Data: b}
		return true
	}
	return false
}

// Line returns the line Next read.
func (s *Scanner) Line() Line { return s.line }

// Err returns the read error that stopped the scanner, if any.
func (s *Scanner) Err() error { return s.err }

// End returns the offset just after the last complete line read, and its
// line number: where the next import of a growing file starts.
func (s *Scanner) End() (offset, line int64) { return s.off, s.num }

// Tail returns the size of an unterminated last line (0 when the input
// ended with a line ending).
func (s *Scanner) Tail() int64 { return s.tail }

// TailLine returns the unterminated last line as a Line numbered after
// the last complete one (Data is nil when there is none or it was too
// long). A caller may import it when it is complete (valid JSON).
func (s *Scanner) TailLine() Line {
	if s.tail == 0 {
		return Line{}
	}
	return Line{Offset: s.tailAt, Number: s.num + 1, Data: s.tailB}
}

// Skipped returns the lines the scanner skipped (too long).
func (s *Scanner) Skipped() []Skip { return s.skips }

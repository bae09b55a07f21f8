package bbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Document is a parsed bbox/1 file: an optional header and the body lines.
type Document struct {
	// Header is nil when the file does not open with a --- line (a
	// fragment, such as the examples in the spec).
	Header *Header
	Lines  []Line
}

// Equal reports whether d and e hold the same content, ignoring positions.
func (d *Document) Equal(e *Document) bool {
	if !d.Header.Equal(e.Header) || len(d.Lines) != len(e.Lines) {
		return false
	}
	for i := range d.Lines {
		if !d.Lines[i].Equal(&e.Lines[i]) {
			return false
		}
	}
	return true
}

// MaxLineBytes bounds one physical line; a longer line is an error rather
// than an unbounded allocation.
const MaxLineBytes = 256 << 20

// Scanner reads a document one line at a time, with its continuation
// lines attached, without holding the whole input. It is not safe for
// concurrent use.
type Scanner struct {
	r       *bufio.Reader
	num     int // physical lines read
	started bool
	header  *Header

	next    string // lookahead physical line
	nextNum int
	hasNext bool
	prevRaw bool // the previous body line was not blank

	line Line
	err  error
	buf  []byte
}

// NewScanner returns a Scanner reading from r.
func NewScanner(r io.Reader) *Scanner {
	return &Scanner{r: bufio.NewReaderSize(r, 64<<10)}
}

// readLine returns the next physical line without its terminator ("\n" or
// "\r\n"). The string is a fresh copy.
func (s *Scanner) readLine() (string, bool) {
	if s.err != nil {
		return "", false
	}
	s.buf = s.buf[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.buf = append(s.buf, chunk...)
		if len(s.buf) > MaxLineBytes {
			s.err = fmt.Errorf("bbox: line %d: longer than %d bytes", s.num+1, MaxLineBytes)
			return "", false
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			s.err = fmt.Errorf("bbox: read line %d: %w", s.num+1, err)
			return "", false
		}
		if len(s.buf) == 0 && err == io.EOF {
			return "", false
		}
		break
	}
	s.num++
	b := s.buf
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	for n := len(b); n > 0 && b[n-1] == '\r'; n-- {
		b = b[:n-1]
	}
	return string(b), true
}

// Header reads the header if it has not been read yet and returns it, or
// nil when the document has none.
func (s *Scanner) Header() *Header {
	s.start()
	return s.header
}

func (s *Scanner) start() {
	if s.started {
		return
	}
	s.started = true
	first, ok := s.readLine()
	if !ok {
		return
	}
	if trimRight(first) != "---" {
		s.next, s.nextNum, s.hasNext = first, s.num, true
		return
	}
	h := &Header{}
	for {
		l, ok := s.readLine()
		if !ok {
			break
		}
		// A header line is kept right-trimmed (parseHeaderLine): what
		// trims to --- that way closes the header, as it would once
		// written.
		if trimSpace(trimRight(l)) == "---" {
			h.Closed = true
			break
		}
		h.Lines = append(h.Lines, parseHeaderLine(l, s.num))
	}
	s.header = h
}

// Scan advances to the next body line, reporting false at the end of the
// input or on an error.
func (s *Scanner) Scan() bool {
	s.start()
	var raw string
	var num int
	if s.hasNext {
		raw, num, s.hasNext = s.next, s.nextNum, false
	} else {
		var ok bool
		if raw, ok = s.readLine(); !ok {
			return false
		}
		num = s.num
	}
	if trimSpace(raw) == "" {
		s.line = Line{Kind: KindBlank, Pos: Pos{Line: num}}
		s.prevRaw = false
		return true
	}
	s.line = parseLine(raw, num)
	if s.line.Kind == KindBlank {
		// Whitespace parseLine drops (a lone CR) made it blank: a blank
		// line takes no continuation lines.
		s.prevRaw = false
		return true
	}
	s.prevRaw = true
	for {
		l, ok := s.readLine()
		if !ok {
			break
		}
		if c, ok := continuation(l); ok {
			s.line.More = append(s.line.More, c)
			continue
		}
		s.next, s.nextNum, s.hasNext = l, s.num, true
		break
	}
	return true
}

// continuation returns the text of l if it is a continuation line: indented
// by two spaces or a tab.
func continuation(l string) (string, bool) {
	switch {
	case len(l) >= 2 && l[0] == ' ' && l[1] == ' ':
		return l[2:], true
	case len(l) >= 1 && l[0] == '\t':
		return l[1:], true
	}
	return "", false
}

// Line returns the current line. The Line (and its strings) stay valid
// after the next call to Scan.
func (s *Scanner) Line() Line { return s.line }

// Err returns the first read error, or nil at a clean end of input.
func (s *Scanner) Err() error { return s.err }

// Parse reads a whole document. Only a read error fails; anything in the
// text that is not well-formed is kept and reported by Validate.
func Parse(r io.Reader) (*Document, error) {
	s := NewScanner(r)
	d := &Document{Header: s.Header()}
	for s.Scan() {
		d.Lines = append(d.Lines, s.Line())
	}
	return d, s.Err()
}

// ParseBytes parses a document held in memory.
func ParseBytes(b []byte) (*Document, error) {
	return Parse(bytes.NewReader(b))
}

// ErrNotWellFormed is returned by Check and the writers for a document
// that its text form cannot represent.
var ErrNotWellFormed = errors.New("bbox: document not representable")

package bbox

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Form selects a text form for Write.
type Form uint8

const (
	// Canonical is one space after the prefix of an unnamed kind, one space
	// between name and body, " → " between call and result, continuation
	// lines indented by two spaces, blank lines kept.
	Canonical Form = iota
	// Compact drops blank lines and the optional spaces ("t:grep x→[4]",
	// "u:text"). The header, comments and continuation lines stay, since
	// dropping them would lose data; blank header lines go.
	Compact
)

// Arrow is the separator the writers emit.
const Arrow = "→"

// AppendLine appends the text of l's first line (without continuation
// lines or a terminator) in form f to dst.
func AppendLine(dst []byte, l *Line, f Form) []byte {
	compact := f == Compact
	switch l.Kind {
	case KindBlank:
		return dst
	case KindUnknown:
		return append(dst, l.Body...)
	case KindComment:
		// Comments keep their space in the compact form too: "# t=…" and
		// "# metrics …" stay readable and are no longer.
		dst = append(dst, '#')
		if l.Body != "" {
			dst = append(dst, ' ')
			dst = append(dst, l.Body...)
		}
		return dst
	}
	dst = append(dst, l.Kind.Prefix()...)
	if l.Kind.Named() {
		dst = append(dst, l.Name...)
		if l.Body != "" {
			dst = append(dst, ' ')
		}
	} else if l.Body != "" && !compact {
		dst = append(dst, ' ')
	}
	dst = append(dst, l.Body...)
	if l.Arrow {
		if !compact && (l.Body != "" || l.Kind.Named() && l.Name != "" || !l.Kind.Named()) {
			dst = append(dst, ' ')
		}
		dst = append(dst, Arrow...)
		if l.Result != "" {
			if !compact {
				dst = append(dst, ' ')
			}
			dst = append(dst, l.Result...)
		}
	}
	return dst
}

// AppendHeaderLine appends the canonical text of a header line to dst.
func AppendHeaderLine(dst []byte, h *HeaderLine) []byte {
	switch h.Kind {
	case HeaderPair:
		dst = append(dst, h.Key...)
		dst = append(dst, ':')
		if h.Value != "" {
			dst = append(dst, ' ')
			dst = append(dst, h.Value...)
		}
		return dst
	case HeaderBlank:
		return dst
	}
	return append(dst, h.Text...)
}

// Write writes doc to w in form f. It returns an error wrapping
// ErrNotWellFormed, and writes nothing, when doc fails Check.
func Write(w io.Writer, doc *Document, f Form) error {
	if err := doc.Check(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf []byte
	if h := doc.Header; h != nil {
		buf = append(buf[:0], "---\n"...)
		for i := range h.Lines {
			if f == Compact && h.Lines[i].Kind == HeaderBlank {
				continue
			}
			buf = AppendHeaderLine(buf, &h.Lines[i])
			buf = append(buf, '\n')
		}
		if h.Closed {
			buf = append(buf, "---\n"...)
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	for i := range doc.Lines {
		l := &doc.Lines[i]
		if f == Compact && l.Kind == KindBlank && !keepBlank(doc, i) {
			continue
		}
		buf = AppendLine(buf[:0], l, f)
		buf = append(buf, '\n')
		for _, m := range l.More {
			buf = append(buf, "  "...)
			buf = append(buf, m...)
			buf = append(buf, '\n')
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// String returns the canonical text of doc, or "" if doc fails Check.
func (d *Document) String() string {
	var b strings.Builder
	if err := Write(&b, d, Canonical); err != nil {
		return ""
	}
	return b.String()
}

// Check reports whether the text forms can represent doc exactly, so that
// parsing what Write produces gives back an equal document. Every document
// Parse returns passes; a document built by hand may not, for example a
// Body holding a newline or, for a kind that takes results, an unquoted
// arrow. The error wraps ErrNotWellFormed and names the line (1-based
// index into Lines, or the header line).
func (d *Document) Check() error {
	if h := d.Header; h != nil {
		if !h.Closed && len(d.Lines) > 0 {
			return fmt.Errorf("%w: header is not closed but body lines follow", ErrNotWellFormed)
		}
		for i := range h.Lines {
			if err := checkHeaderLine(&h.Lines[i]); err != nil {
				return fmt.Errorf("%w: header line %d: %v", ErrNotWellFormed, i+1, err)
			}
		}
	}
	var buf []byte
	for i := range d.Lines {
		l := &d.Lines[i]
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%w: line %d (%s): %s", ErrNotWellFormed, i+1, l.Kind, fmt.Sprintf(format, args...))
		}
		if l.Kind >= kindN {
			return fail("kind %d out of range", l.Kind)
		}
		if i == 0 && d.Header == nil && l.Kind == KindUnknown && trimRight(l.Body) == "---" {
			return fail("a first line --- would open a header")
		}
		if l.Kind == KindBlank {
			if l.Name != "" || l.Body != "" || l.Arrow || l.Result != "" || len(l.More) > 0 {
				return fail("a blank line holds nothing")
			}
			continue
		}
		if l.Kind == KindUnknown && (strings.HasPrefix(l.Body, "  ") || strings.HasPrefix(l.Body, "\t")) {
			if i > 0 && d.Lines[i-1].Kind != KindBlank {
				return fail("an indented line after a non-blank line would continue it")
			}
		}
		for j, m := range l.More {
			if strings.ContainsAny(m, "\n") || strings.HasSuffix(m, "\r") {
				return fail("continuation %d holds a line break", j+1)
			}
		}
		for _, f := range [...]Form{Canonical, Compact} {
			buf = AppendLine(buf[:0], l, f)
			if strings.ContainsAny(string(buf), "\n") {
				return fail("holds a line break")
			}
			got := string(buf)
			if trimSpace(got) == "" {
				return fail("would be written as a blank line")
			}
			if _, ok := continuation(got); ok {
				if l.Kind != KindUnknown {
					return fail("would be written indented")
				}
			}
			back := parseLine(got, 0)
			back.More = l.More
			if !back.Equal(l) {
				return fail("does not read back: %q", got)
			}
		}
	}
	return nil
}

func checkHeaderLine(h *HeaderLine) error {
	var buf []byte
	buf = AppendHeaderLine(buf, h)
	s := string(buf)
	if strings.ContainsAny(s, "\n") || strings.HasSuffix(s, "\r") {
		return fmt.Errorf("holds a line break")
	}
	if trimSpace(s) == "---" {
		return fmt.Errorf("--- would close the header")
	}
	back := parseHeaderLine(s, 0)
	if back.Kind != h.Kind || back.Key != h.Key || back.Value != h.Value || back.Text != h.Text {
		return fmt.Errorf("does not read back: %q", s)
	}
	return nil
}

// keepBlank reports whether the compact form must keep blank line i: it
// separates an indented unknown line from the line before, which would
// otherwise read it as a continuation, or keeps a "---" line off line 1,
// where it would open a header.
func keepBlank(doc *Document, i int) bool {
	if i+1 >= len(doc.Lines) {
		return false
	}
	n := &doc.Lines[i+1]
	return n.Kind == KindUnknown && (n.Body != "" && isSpace(n.Body[0]) || trimRight(n.Body) == "---")
}

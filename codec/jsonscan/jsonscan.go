package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// SyntaxError is a JSON syntax error at a byte offset of the input.
type SyntaxError struct {
	Offset int64 // byte offset of the error
	msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.msg)
}

// opts make jsontext accept what encoding/json accepts.
var opts = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}

// scanner is a pooled decoder and its input.
type scanner struct {
	buf bytes.Buffer
	d   jsontext.Decoder
}

var pool = sync.Pool{New: func() any { return new(scanner) }}

func decoder(b []byte) *scanner {
	s := pool.Get().(*scanner)
	s.buf = *bytes.NewBuffer(b)
	s.d.Reset(&s.buf, opts...)
	return s
}

// release returns s to the pool, holding no reference to its input.
func (s *scanner) release() {
	s.buf = bytes.Buffer{}
	s.d.Reset(&s.buf, opts...)
	pool.Put(s)
}

// wrap turns a jsontext error into a SyntaxError.
func wrap(d *jsontext.Decoder, err error) error {
	if err == nil {
		return nil
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return &SyntaxError{Offset: se.ByteOffset, msg: se.Err.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &SyntaxError{Offset: d.InputOffset(), msg: "unexpected end of input"}
	}
	return &SyntaxError{Offset: d.InputOffset(), msg: err.Error()}
}

// Valid reports whether b is one valid JSON value (with white space
// around it).
func Valid(b []byte) bool {
	s := decoder(b)
	defer s.release()
	d := &s.d
	if _, err := d.ReadValue(); err != nil {
		return false
	}
	return finish(d) == nil
}

// finish checks that only white space follows the top-level value.
func finish(d *jsontext.Decoder) error {
	if _, err := d.ReadValue(); err != io.EOF {
		if err == nil {
			return &SyntaxError{Offset: d.InputOffset(), msg: "data after the value"}
		}
		return wrap(d, err)
	}
	return nil
}

// Fields calls fn with the key and the raw value of each member of the
// JSON object b, in order, until fn returns false. The key is unquoted
// (a slice of b unless it holds escapes; fn must not keep it); the value
// is a slice of b without surrounding white space. Everything up to
// where fn stopped (the whole of b when it did not) is validated; an
// error names the byte offset of the first syntax error.
func Fields(b []byte, fn func(key, value []byte) bool) error {
	s := decoder(b)
	defer s.release()
	d := &s.d
	if d.PeekKind() != '{' {
		if _, err := d.ReadValue(); err != nil {
			return wrap(d, err)
		}
		return &SyntaxError{Offset: 0, msg: "not an object"}
	}
	if _, err := d.ReadToken(); err != nil {
		return wrap(d, err)
	}
	for d.PeekKind() != '}' {
		k, err := d.ReadValue()
		if err != nil {
			return wrap(d, err)
		}
		key := b[d.InputOffset()-int64(len(k))+1 : d.InputOffset()-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			// Rare keys: decode them as encoding/json does (escapes,
			// invalid UTF-8 as U+FFFD).
			var s string
			if err := json.Unmarshal(k, &s); err != nil {
				return &SyntaxError{Offset: d.InputOffset() - int64(len(k)), msg: err.Error()}
			}
			key = []byte(s)
		}
		v, err := d.ReadValue()
		if err != nil {
			return wrap(d, err)
		}
		end := d.InputOffset()
		if !fn(key, b[end-int64(len(v)):end]) {
			return nil
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return wrap(d, err)
	}
	return finish(d)
}

// Elements calls fn with the index and the raw value of each element of
// the JSON array b, in order, until fn returns false; validation and
// errors are as for Fields.
func Elements(b []byte, fn func(i int, value []byte) bool) error {
	s := decoder(b)
	defer s.release()
	d := &s.d
	if d.PeekKind() != '[' {
		if _, err := d.ReadValue(); err != nil {
			return wrap(d, err)
		}
		return &SyntaxError{Offset: 0, msg: "not an array"}
	}
	if _, err := d.ReadToken(); err != nil {
		return wrap(d, err)
	}
	for n := 0; d.PeekKind() != ']'; n++ {
		v, err := d.ReadValue()
		if err != nil {
			return wrap(d, err)
		}
		end := d.InputOffset()
		if !fn(n, b[end-int64(len(v)):end]) {
			return nil
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return wrap(d, err)
	}
	return finish(d)
}

// Value returns the length of the JSON value at the start of b (white
// space before it is part of it), validated as Valid would; what follows
// the value is not read, so b may go on with anything (a comma and the
// next element of an array, say). It is how a reader that knows where an
// array's new elements start reads them without the rest of the
// document.
func Value(b []byte) (int, error) {
	s := decoder(b)
	defer s.release()
	if _, err := s.d.ReadValue(); err != nil {
		return 0, wrap(&s.d, err)
	}
	return int(s.d.InputOffset()), nil
}

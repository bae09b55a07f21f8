package agentlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// ErrNotObject reports a line that is JSON but not a JSON object.
var ErrNotObject = errors.New("not a JSON object")

// SyntaxError reports a line that is not JSON.
type SyntaxError struct {
	// Offset is the byte offset in the line where the error is.
	Offset int64
	// Truncated is set when the line ends inside a JSON value: it is the
	// start of a JSON value (a line still being written, or cut short).
	Truncated bool
	// Msg says what is wrong ("invalid character 'o' at start of
	// value", "exceeded max depth").
	Msg string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("not JSON: %s at column %d", e.Msg, e.Offset+1)
}

// fieldsDecoder is a pooled decoder and the buffer it reads, which
// aliases the line being checked.
type fieldsDecoder struct {
	d   *jsontext.Decoder
	buf bytes.Buffer
}

var decoders = sync.Pool{New: func() any {
	fd := new(fieldsDecoder)
	fd.d = jsontext.NewDecoder(&fd.buf)
	return fd
}}

// Fields checks, in one pass, that b is one JSON object (nested no deeper
// than jsontext's 10000 levels), and returns the values of its top-level
// members named keys that are strings ("" for a member that is absent or
// not a string). b that is not JSON gives a *SyntaxError; JSON of another
// kind an error wrapping ErrNotObject. Invalid UTF-8 and duplicate names
// are accepted, as encoding/json accepts them. Fields does not keep b.
func Fields(b []byte, keys ...string) ([]string, error) {
	vals := make([]string, len(keys))
	if fastFields(b, keys, vals) {
		return vals, nil
	}
	return decodeFields(b, keys)
}

// decodeFields is Fields by the decoder.
func decodeFields(b []byte, keys []string) ([]string, error) {
	vals := make([]string, len(keys))
	fd := decoders.Get().(*fieldsDecoder)
	d := fd.d
	defer func() {
		fd.buf = bytes.Buffer{} // drop b
		d.Reset(&fd.buf)
		decoders.Put(fd)
	}()
	fd.buf = *bytes.NewBuffer(b)
	d.Reset(&fd.buf, jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	fail := func(err error) ([]string, error) {
		var (
			se  *jsontext.SyntacticError
			own *SyntaxError
		)
		if errors.As(err, &own) {
			return nil, own
		}
		if errors.As(err, &se) {
			msg := strings.TrimPrefix(se.Error(), "jsontext: ")
			if se.Err != nil {
				msg = strings.TrimPrefix(se.Err.Error(), "jsontext: ")
			}
			return nil, &SyntaxError{Offset: se.ByteOffset, Truncated: errors.Is(err, io.ErrUnexpectedEOF), Msg: msg}
		}
		if err == io.EOF {
			return nil, &SyntaxError{Offset: d.InputOffset(), Truncated: true, Msg: "no value"}
		}
		return nil, &SyntaxError{Offset: d.InputOffset(), Msg: err.Error()}
	}
	if k := d.PeekKind(); k != '{' {
		if k == 0 || k == jsontext.KindInvalid {
			_, err := d.ReadToken()
			return fail(err)
		}
		// The whole value must be valid before it is called a value of
		// another kind.
		if err := d.SkipValue(); err != nil {
			return fail(err)
		}
		if err := end(d, b); err != nil {
			return fail(err)
		}
		return nil, fmt.Errorf("%w: %s", ErrNotObject, kindName(k))
	}
	if _, err := d.ReadToken(); err != nil {
		return fail(err)
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadToken()
		if err != nil {
			return fail(err)
		}
		i := -1
		for j, k := range keys {
			if k == name.String() {
				i = j
				break
			}
		}
		if i >= 0 && d.PeekKind() == '"' {
			v, err := d.ReadToken()
			if err != nil {
				return fail(err)
			}
			vals[i] = v.String()
			continue
		}
		if err := d.SkipValue(); err != nil {
			return fail(err)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return fail(err)
	}
	if err := end(d, b); err != nil {
		return fail(err)
	}
	return vals, nil
}

// end checks that b holds nothing after the value d read (the decoder
// reads a stream of values).
func end(d *jsontext.Decoder, b []byte) error {
	off := d.InputOffset()
	_, err := d.ReadToken()
	switch err {
	case io.EOF:
		return nil
	case nil:
		for off < int64(len(b)) && strings.IndexByte(" \t\r\n", b[off]) >= 0 {
			off++
		}
		return &SyntaxError{Offset: off, Msg: "more than one JSON value"}
	}
	return err
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "not an object"
}

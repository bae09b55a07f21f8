package settings

import (
	"errors"
	"fmt"
	"os"

	"github.com/bbengine/bbengine/internal/jsonedit"
)

// JSONC returns b, a JSONC document (JSON with // and /* */ comments and
// trailing commas, as opencode reads its config), as JSON of the same
// length: comments and trailing commas become spaces, line breaks stay,
// so a line and column in the result are the same in b. b is not
// modified; the result is new.
func JSONC(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	blank := func(i, j int) {
		for ; i < j; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
	}
	// Comments, outside strings.
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			j := i
			for j < len(out) && out[j] != '\n' {
				j++
			}
			blank(i, j)
			i = j
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			j := i + 2
			for j+1 < len(out) && (out[j] != '*' || out[j+1] != '/') {
				j++
			}
			j = min(j+2, len(out))
			blank(i, j)
			i = j - 1
		}
	}
	// Trailing commas: a comma followed by white space and a closing
	// bracket.
	for i := 0; i < len(out); i++ {
		switch out[i] {
		case '"':
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case ',':
			j := i + 1
			for j < len(out) && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}

// ReadDocJSONC reads the settings file path as JSONC (see JSONC) for a
// check, changing nothing; a missing file is a Doc with a nil Root. An
// error names the file, line and column, never the text there (a
// config line may hold an API key).
func ReadDocJSONC(path string) (Doc, error) {
	d := Doc{Path: path}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return d, nil
	case err != nil:
		return d, err
	}
	v, err := jsonedit.Parse(JSONC(b))
	if err != nil {
		var se *jsonedit.SyntaxError
		if errors.As(err, &se) {
			return d, fmt.Errorf("%s:%d:%d: not valid JSONC: %s", path, se.Line, se.Col, se.Msg)
		}
		return d, fmt.Errorf("%s: %w", path, err)
	}
	o, ok := v.(*jsonedit.Object)
	if !ok {
		return d, fmt.Errorf("%s: the file holds a JSON %s, not an object", path, JSONKind(v))
	}
	d.Root = o
	return d, nil
}

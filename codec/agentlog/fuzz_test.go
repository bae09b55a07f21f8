package agentlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzFields checks that Fields never panics and agrees with
// encoding/json: it accepts exactly the valid JSON objects, and a key it
// reports has that string value.
func FuzzFields(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","id":"x"}`,
		`{"type":1,"id":["a"]}`,
		`[{"type":"user"}]`,
		`{"type":"us`,
		"{\"type\":\"\xff\"}",
		`{oops`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := Fields(b, "type", "id")
		if bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > 9000 {
			return // the two packages' depth limits differ by one
		}
		trimmed := bytes.TrimLeft(b, " \t\r\n")
		object := json.Valid(b) && len(trimmed) > 0 && trimmed[0] == '{'
		if (err == nil) != object {
			t.Fatalf("Fields(%q) = %v; encoding/json says object %v", b, err, object)
		}
		var se *SyntaxError
		if err != nil && !errors.As(err, &se) && !errors.Is(err, ErrNotObject) {
			t.Fatalf("Fields(%q) = %v: neither a *SyntaxError nor ErrNotObject", b, err)
		}
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			return
		}
		if s, ok := m["type"].(string); ok && !bytes.ContainsAny(b, "\\\x80\x81\xff") && s != vals[0] {
			// (escapes and invalid UTF-8 decode differently; duplicates
			// keep the last, as both do)
			t.Fatalf("Fields(%q) type = %q, encoding/json %q", b, vals[0], s)
		}
	})
}

// FuzzFieldsFast checks that every line Fields's fast path accepts, the
// decoder accepts, with the same values.
func FuzzFieldsFast(f *testing.F) {
	for _, s := range []string{
		`{}`, ` {"type":"user"} `, `{"type":"a","type":1}`, `{"type":1,"type":"b"}`, `{"type":""}`,
		`{"id":"x","type":"t","n":-0.5e+3,"a":[1,true,null,{"k":"\u00e9\n"}],"o":{}}`,
		`{"type":"a"}{}`, `{"type":"\u0061"}`, `{"t\u0079pe":"a"}`, `{"a":01}`, `{"a":1.}`, `{"a":"` + "\x01" + `"}`,
		`{"a":"` + "\xff\xfe" + `"}`, `[{"type":"a"}]`, `{"a":[}`, `{"a":tru}`, "{\"type\":\"x\",}",
	} {
		f.Add([]byte(s))
	}
	keys := []string{"type", "id"}
	f.Fuzz(func(t *testing.T, b []byte) {
		vals := make([]string, len(keys))
		if !fastFields(b, keys, vals) {
			return
		}
		want, err := decodeFields(b, keys)
		if err != nil {
			t.Fatalf("fast path accepts %q, the decoder says %v", b, err)
		}
		for i := range keys {
			if vals[i] != want[i] {
				t.Fatalf("%q: %s = %q, the decoder says %q", b, keys[i], vals[i], want[i])
			}
		}
	})
}

package jsonw

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzString: String writes what encoding/json writes for any string,
// and says whether it held invalid UTF-8.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&</a>", "tab\tnew\nline\r\x00\x1f", "\u2028\u2029", "\xff\xfe bad", "é中🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, invalid := String([]byte("x"), s)
		if !bytes.Equal(got[1:], want) {
			t.Fatalf("String(%q) = %s, want %s", s, got[1:], want)
		}
		if invalid == utf8.ValidString(s) {
			t.Fatalf("String(%q) says invalid %v", s, invalid)
		}
	})
}

func TestFields(t *testing.T) {
	b := append([]byte(nil), '{')
	b = Int(b, "a", -3)
	b = OptText(b, "skip", "")
	b = Text(b, "s", "x")
	b = OptBool(b, "no", false)
	b = Bool(b, "t", true)
	b = OptInt(b, "zero", 0)
	b = append(b, '}')
	if string(b) != `{"a":-3,"s":"x","t":true}` {
		t.Errorf("got %s", b)
	}
}

package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// TestOAIString checks the fast path of oaiString against encoding/json.
func TestOAIString(t *testing.T) {
	for _, in := range []string{
		`""`, `"plain"`, `"caf\u00e9"`, `"café"`, `"a\"b"`, `"a\\b"`, `"\n\t"`, `"\/"`,
		`"\ud83d\ude00"`, "\"\xff\xfe\"", "\"ok\xc3\"", `"😀"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		got, err := oaiString([]byte(in))
		if err != nil || got != want {
			t.Errorf("oaiString(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestOAISetURL(t *testing.T) {
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	tests := []struct {
		url  string
		want Part
	}{
		{"https://example.com/a.png", Part{URL: "https://example.com/a.png"}},
		{"data:image/png;base64,iVBORw0KGgo=", Part{MediaType: "image/png", Size: 8, SHA256: sum("\x89PNG\r\n\x1a\n")}},
		// Unpadded, URL alphabet: "\xfb\xff" is "-_8" in base64url.
		{"data:image/webp;base64,-_8", Part{MediaType: "image/webp", Size: 2, SHA256: sum("\xfb\xff")}},
		// Line breaks inside base64 are skipped.
		{"data:text/plain;base64,aGVs\r\nbG8=", Part{MediaType: "text/plain", Size: 5, SHA256: sum("hello")}},
		{"data:text/plain;charset=utf-8,a%20b", Part{MediaType: "text/plain", Size: 3, SHA256: sum("a b")}},
		// Not base64: the media type only.
		{"data:image/png;base64,!!!!", Part{MediaType: "image/png"}},
		// No comma: not a data URL after all.
		{"data:nothing", Part{URL: "data:nothing"}},
	}
	for _, tt := range tests {
		var p Part
		oaiSetURL(&p, tt.url)
		oaiCheckEqual(t, tt.url, p, tt.want)
	}
}

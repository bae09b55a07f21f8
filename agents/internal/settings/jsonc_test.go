package settings

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/internal/jsonedit"
)

func TestJSONC(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"{\"a\": 1, // c\n}", "{\"a\": 1      \n}"},
		{`{"a": [1, 2,], /* c */ "b": "//x,}"}`, `{"a": [1, 2 ],         "b": "//x,}"}`},
		{`{"a": "\"/*", "b": 2,}`, `{"a": "\"/*", "b": 2 }`},
		{`{"a": 1 /* open`, `{"a": 1        `},
	} {
		got := string(JSONC([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("JSONC(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if len(got) != len(tc.in) {
			t.Errorf("JSONC(%q): length %d, want %d", tc.in, len(got), len(tc.in))
		}
	}
	if !json.Valid(JSONC([]byte("{\n  \"k\": [\"v\",], // x\n  /* y */\n}\n"))) {
		t.Error("not valid JSON")
	}
}

// TestEditJSONNoLine: a settings file that does not parse is refused
// with its line and column, never the text of the line (it may hold an
// API key), for every agent that edits its settings through EditJSON.
func TestEditJSONNoLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	bad := "{\n  \"apiKey\": \"sk-SECRETzz9\", // rotate\n}\n"
	os.WriteFile(path, []byte(bad), 0o600)
	_, err := EditJSON(path, 0o600, func(*jsonedit.Object) error { return nil })
	if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("EditJSON of a broken file: %v", err)
	}
	if _, err := ReadDocJSONC(path); err != nil {
		t.Errorf("ReadDocJSONC: %v", err)
	}
	os.WriteFile(path, []byte("{\n  \"apiKey\": \"sk-SECRETzz9\" 1\n}\n"), 0o600)
	if _, err := ReadDocJSONC(path); err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("ReadDocJSONC of a broken file: %v", err)
	}
}

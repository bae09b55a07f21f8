package index

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blugelabs/bluge/analysis"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"parseHTTPRequest", []string{"parsehttprequest", "parse", "pars", "http", "request"}},
		{"snake_case_name", []string{"snake_case_name", "snake", "case", "name"}},
		{"kebab-name", []string{"kebab-name", "kebab", "name"}},
		{"pkg.Func", []string{"pkg.func", "pkg", "func"}},
		{"internal/wal/segment.go", []string{"internal/wal/segment.go", "internal", "intern", "wal", "segment", "go"}},
		{"--flag", []string{"--flag", "flag"}},
		{"--dry-run", []string{"--dry-run", "dry", "dri", "run"}},
		{"-v", []string{"-v", "v"}},
		{"pkg.ParseHTTP()", []string{"pkg.parsehttp", "pkg", "parsehttp", "parse", "pars", "http"}},
		{"HTTPServer", []string{"httpserver", "http", "server"}},
		{"Base64Encode utf8 sha256", []string{"base64encode", "base64", "encode", "encod", "utf8", "sha256"}},
		{"We decided: use SQLite.", []string{"we", "decid", "use", "sqlite", "sq", "lite"}},
		{"see segment.go, then", []string{"see", "segment.go", "segment", "go", "then"}},
		{"file.go:12:3: undefined", []string{"file.go:12:3", "file", "go", "12", "3", "undefin"}},
		// A word is its stem; an identifier's part is followed by its stem.
		{"tagging tags tag", []string{"tag", "tag", "tag"}},
		{"parseConfig", []string{"parseconfig", "parse", "pars", "config"}},
		{"parse_config_files", []string{"parse_config_files", "parse", "pars", "config", "files", "file"}},
		{"cmd/run_tests.go", []string{"cmd/run_tests.go", "cmd", "run", "tests", "test", "go"}},
		{"Running", []string{"run"}},
		// A long word is followed by the short form code uses for it.
		{"where is it configured", []string{"where", "is", "it", "configur", "config"}},
		{"the repository", []string{"the", "repositori", "repo"}},
		{"loadConfiguration", []string{"loadconfiguration", "load", "configuration", "configur", "config"}},
		{"__init__", []string{"__init__", "init"}},
		{"- bullet -- x", []string{"bullet", "x"}},
		{"Ünïcode Straße", []string{"ünïcode", "straße"}},
		{"日本語テキスト", []string{"日本語テキスト"}},
		{"", nil},
		{"... --- ///", nil},
		{"a\xffb", []string{"a", "b"}},
	}
	for _, tt := range tests {
		got := Tokens(tt.in)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTokensLong(t *testing.T) {
	long := strings.Repeat("a", maxTokenBytes+1)
	if got := Tokens(long); len(got) != 0 {
		t.Errorf("Tokens(%d a's) = %d tokens, want none", len(long), len(got))
	}
	got := Tokens(long[:10] + "/" + long)
	if want := []string{long[:10]}; !slices.Equal(got, want) {
		t.Errorf("Tokens(short/long) = %q, want %q", got, want)
	}
}

// checkTokens checks the invariants of a token stream of in: every term is
// the lowercased input it spans or its stem; spans lie inside the input
// and are valid UTF-8, and no term is empty or too long.
func checkTokens(t *testing.T, in []byte) {
	ts := codeTokenizer{}.Tokenize(in)
	for _, tok := range ts {
		if tok.Start < 0 || tok.End > len(in) || tok.Start >= tok.End {
			t.Fatalf("%q: bad span [%d,%d)", in, tok.Start, tok.End)
		}
		if !utf8.Valid(in[tok.Start:tok.End]) {
			t.Fatalf("%q: span [%d,%d) is not valid UTF-8", in, tok.Start, tok.End)
		}
		want := strings.ToLower(string(in[tok.Start:tok.End]))
		if string(tok.Term) != want && string(stem(&analysis.Token{Term: []byte(want)})) != string(tok.Term) {
			t.Fatalf("%q: term %q for span %q, want %q", in, tok.Term, in[tok.Start:tok.End], want)
		}
		if len(tok.Term) == 0 || tok.End-tok.Start > maxTokenBytes {
			t.Fatalf("%q: term %q empty or too long", in, tok.Term)
		}
	}
}

func FuzzAnalyzer(f *testing.F) {
	for _, s := range []string{
		"parseHTTPRequest snake_case_name kebab-name pkg.Func internal/wal/segment.go --flag",
		"go test -run TestX ./index/... 2>&1 | tee /tmp/x.log",
		"panic: runtime error: index out of range [3] with length 2",
		"Ünïcode İstanbul ΣΑΣ a\xffb\xc0",
		"--- -- - _ __ ./..//",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkTokens(t, in)
		if n := analyzerPanics.Load(); n != 0 {
			t.Fatalf("tokenizer panicked: %v", lastAnalyzerPanic.Load())
		}
	})
}

package redact

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzLitTable checks that a litTable's one-pass scan finds exactly the
// literals bytes.Contains finds, custom rules' included.
func FuzzLitTable(f *testing.F) {
	for _, s := range []string{
		"", "s", "sk", "sk-", "task-list sk-ant-", "xxghp_", "eyJeyJ", "-----PRIVATE KEY-----",
		"hooks.slack.com/services", "sk_test_whsec_rk_live_", strings.Repeat("gh", 100) + "github_pat_",
		"AKIAASIA[redacted:aws_access_key]", "npm_hf_ya29.GOCSPX-glpat-xoxb-xapp-AIza",
	} {
		f.Add([]byte(s))
	}
	r, err := New([]string{`x`, `token=[a-z]+`, `tok_[0-9]+`})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var set litSet
		r.lits.scan(&set, b)
		for k, lit := range r.lits.lits {
			if got, want := r.lits.contains(&set, b, k), bytes.Contains(b, []byte(lit)); got != want {
				t.Fatalf("literal %q in %q: table says %t, bytes.Contains %t", lit, b, got, want)
			}
		}
	})
}

// TestLitTableCorpus checks the table against bytes.Contains on every
// literal placed at the start, the middle and the end of a text, with
// near misses around it.
func TestLitTableCorpus(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, lit := range r.lits.lits {
		for _, text := range []string{
			lit, "x" + lit, lit + "x", "task " + lit[:len(lit)-1] + " " + lit + " end",
			lit[:len(lit)-1], strings.Repeat(lit[:2], 50), strings.Repeat(lit[:len(lit)-1]+" ", 3) + lit,
		} {
			var set litSet
			r.lits.scan(&set, []byte(text))
			for j, l := range r.lits.lits {
				if got, want := r.lits.contains(&set, []byte(text), j), strings.Contains(text, l); got != want {
					t.Errorf("literal %d %q in %q (placing %d %q): got %t, want %t", j, l, text, k, lit, got, want)
				}
			}
		}
	}
}

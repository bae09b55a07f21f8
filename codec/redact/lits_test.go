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

// maybeContains is Maybe by one strings.Contains per literal: what Maybe
// must report.
func maybeContains(r *Redactor, s string) bool {
	if strings.Contains(s, "PRIVATE KEY-----") || strings.Contains(s, "://") {
		return true
	}
	for _, w := range wordCases {
		if strings.Contains(s, string(w)) {
			return true
		}
	}
	for _, rule := range r.rules {
		if len(rule.Lits) == 0 {
			return true
		}
		for _, l := range rule.Lits {
			if strings.Contains(s, l) {
				return true
			}
		}
	}
	return false
}

func TestMaybeLiterals(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	custom, err := New([]string{`tok_[0-9]+`, `x`})
	if err != nil {
		t.Fatal(err)
	}
	noLit, err := New([]string{`[0-9]{6}`})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, l := range r.maybeLits.lits {
		texts = append(texts, l, "a "+l+" b", l[:len(l)-1], l[1:])
	}
	texts = append(texts, "", "plain text", "Token", "PASSWD", "pAsSwOrD=x", "https://x", ":/", "tok_1", "x")
	for _, s := range texts {
		for _, rr := range []*Redactor{r, custom, noLit} {
			if got, want := rr.Maybe(s), maybeContains(rr, s); got != want {
				t.Errorf("Maybe(%q) = %t, want %t", s, got, want)
			}
		}
	}
}

func FuzzMaybe(f *testing.F) {
	for _, s := range []string{"", "sk-ant-", "password", "TOKEN", "http://a:b@c", "-----PRIVATE KEY-----", "tok_1", "x"} {
		f.Add(s)
	}
	r, err := New(nil)
	if err != nil {
		f.Fatal(err)
	}
	custom, err := New([]string{`tok_[0-9]+`, `x`})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, rr := range []*Redactor{r, custom} {
			if got, want := rr.Maybe(s), maybeContains(rr, s); got != want {
				t.Fatalf("Maybe(%q) = %t, want %t", s, got, want)
			}
		}
	})
}

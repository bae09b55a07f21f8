package agents

import (
	"fmt"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i) + "\n")
		}
		return b.String()
	}
	before := lines(20, func(i int) string { return fmt.Sprint("line ", i) })
	after := strings.Replace(strings.Replace(before, "line 2\n", "line 2\nnew A\n", 1), "line 17\n", "", 1)
	want := "--- f\n+++ f\n" +
		"@@ -1,6 +1,7 @@\n line 0\n line 1\n line 2\n+new A\n line 3\n line 4\n line 5\n" +
		"@@ -15,6 +16,5 @@\n line 14\n line 15\n line 16\n-line 17\n line 18\n line 19\n"
	if got := unifiedDiff("f", []byte(before), []byte(after)); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := unifiedDiff("f", nil, []byte("a\n")); got != "--- /dev/null\n+++ f\n@@ -0,0 +1,1 @@\n+a\n" {
		t.Errorf("a new file: %q", got)
	}
	// A whole large file rewritten: no quadratic table, every line shown.
	big := unifiedDiff("f", []byte(lines(3000, func(i int) string { return fmt.Sprint("a", i) })), []byte(lines(3000, func(i int) string { return fmt.Sprint("b", i) })))
	if strings.Count(big, "\n-a") != 3000 || strings.Count(big, "\n+b") != 3000 {
		t.Errorf("a large rewrite: %d removed, %d added lines", strings.Count(big, "\n-a"), strings.Count(big, "\n+b"))
	}
}

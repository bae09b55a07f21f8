package webui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestMarkdown: Markdown becomes markup; HTML written in the text shows
// as its characters; nothing that runs script survives.
func TestMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // substrings of the HTML
		not      []string
	}{
		{"emphasis and code", "Run `go test ./...` and **check** the _cache_.",
			[]string{"<code>go test ./...</code>", "<strong>check</strong>", "<em>cache</em>"}, nil},
		{"fenced code", "```go\nfunc main() {}\n```", []string{"<pre><code class=\"language-go\">func main() {}\n</code></pre>"}, nil},
		{"list and table", "- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |",
			[]string{"<li>one</li>", "<table>", "<td>1</td>"}, nil},
		{"script as text", "Look: <script>alert(1)</script> done",
			[]string{"&lt;script&gt;alert(1)&lt;/script&gt;"}, []string{"<script"}},
		{"html block as text", "<div onclick=\"alert(1)\">\nhi\n</div>",
			[]string{"&lt;div onclick=&#34;alert(1)&#34;&gt;"}, []string{"<div", "onclick=\""}},
		{"img onerror as text", "x <img src=x onerror=alert(1)> y", []string{"&lt;img src=x onerror=alert(1)&gt;"}, []string{"<img"}},
		{"javascript link", "[click](javascript:alert(1))", []string{"click"}, []string{"javascript:"}},
		{"javascript autolink", "<javascript:alert(1)>", nil, []string{"href=\"javascript"}},
		{"image with onerror in its url", "![x](x\" onerror=\"alert(1))", nil, []string{"onerror=\""}},
		{"data url link", "[x](data:text/html;base64,PHNjcmlwdD4=)", nil, []string{"href=\"data:"}},
		{"lines stay lines", "ok  \texample.com/cache\nPASS", []string{"cache<br>"}, nil},
		{"image as text, never fetched", "see ![chart](/v1/messages?x=1) and ![a](https://evil.example/t.png)",
			[]string{"<code>![chart](/v1/messages?x=1)</code>", "<code>![a](https://evil.example/t.png)</code>"}, []string{"<img"}},
		{"a small table", "| a | b |\n|---|--:|\n| 1 | 2 |\n| 3 | 4 |", []string{"<table>", "<td>4</td>"}, nil},
		{"link gets noreferrer", "see https://example.com/docs", []string{`href="https://example.com/docs"`, "noreferrer"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := markdown(tc.in)
			if !ok {
				t.Fatal("not rendered")
			}
			out := string(h)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q renders\n%s\nwithout %q", tc.in, out, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("%q renders\n%s\nwith %q", tc.in, out, n)
				}
			}
			if regexp.MustCompile(`(?i)<[a-z][^>]*\son[a-z]+\s*=`).MatchString(out) {
				t.Errorf("%q renders an event handler attribute:\n%s", tc.in, out)
			}
		})
	}
	if _, ok := markdown(strings.Repeat("a", maxMarkdown+1)); ok {
		t.Error("a text past maxMarkdown was rendered")
	}
}

// TestMarkdownCostlyShapes: texts under maxMarkdown whose parse or
// output would grow faster than they do stay preformatted (a table of a
// few kilobytes padded to a wide header made a megabyte of cells, and
// at 64 KiB would have made a gigabyte), and what is rendered stays in
// proportion to the text.
func TestMarkdownCostlyShapes(t *testing.T) {
	wide := strings.Repeat("|a", 512) + "|\n" + strings.Repeat("|-", 512) + "|\n" + strings.Repeat("x\n", 1024)
	for name, in := range map[string]string{
		"a wide table padded on every line": wide,
		"quotes nested deep":                strings.Repeat(">", 4000) + " a",
		"quotes nested deep, spaced":        strings.Repeat("> ", 100) + "a",
		"many nodes":                        strings.Repeat("*a* ", 4000),
	} {
		if len(in) > maxMarkdown {
			t.Fatalf("%s: %d bytes, past maxMarkdown: the case tests nothing", name, len(in))
		}
		if h, ok := markdown(in); ok {
			t.Errorf("%s: rendered, %d bytes of HTML from %d", name, len(h), len(in))
		}
	}
	// A long message of ordinary shape renders, in proportion.
	var b strings.Builder
	for i := 0; b.Len() < maxMarkdown-200; i++ {
		fmt.Fprintf(&b, "- item %d with `code` and **bold**\n", i)
	}
	h, ok := markdown(b.String())
	if !ok || len(h) > 8*b.Len() {
		t.Errorf("an ordinary list of %d bytes: rendered %v, %d bytes of HTML", b.Len(), ok, len(h))
	}
}

// FuzzMarkdown: whatever the text, the rendering holds no element that
// runs script, no event handler attribute and no javascript: URL.
func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{"**b** `c`", "<script>x</script>", "[a](javascript:x)", "<img src=x onerror=y>", "```\n<b>\n```",
		"<svg onload=alert(1)>", "<a href='jav&#x09;ascript:alert(1)'>x</a>", "[x](JaVaScRiPt:alert(1))", "<iframe src=x>"} {
		f.Add(s)
	}
	bad := regexp.MustCompile(`(?i)<(script|iframe|object|embed|svg|math|style|form|input|button|link|meta|base)[\s/>]|<[a-z][^>]*\son[a-z]+\s*=|(href|src)\s*=\s*"\s*(javascript|vbscript|data:text)`)
	f.Fuzz(func(t *testing.T, s string) {
		h, ok := markdown(s)
		if !ok {
			return
		}
		if m := bad.FindString(string(h)); m != "" {
			t.Fatalf("%q renders %q:\n%s", s, m, h)
		}
	})
}

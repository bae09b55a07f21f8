package webui

import (
	"bytes"
	"html/template"
	"strings"
	"sync"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	gtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Messages are shown as Markdown, rendered by goldmark (CommonMark and
// GitHub's tables, strikethrough, task lists and autolinks) and then
// sanitised by bluemonday:
//
//   - HTML written in a message is text, not markup: the raw HTML nodes
//     are rendered escaped (rawAsText), so a model's "<script>" shows as
//     the characters it wrote, where goldmark alone would drop it;
//   - goldmark drops dangerous link targets (javascript:, vbscript:,
//     data: other than images);
//   - bluemonday's policy for user content then keeps only safe elements
//     and attributes, and links get rel="nofollow noreferrer";
//   - the CSP (default-src 'self') loads no image from elsewhere.
//
// A text longer than maxMarkdown stays preformatted: rendering is for
// reading, and a long text reads as well folded. So does a text whose
// shape would make goldmark's work or output grow faster than the text
// (mdShapeOK: a table's rows padded to a wide header, deep quotes), and
// one that parses into more than maxMarkdownNodes nodes. A timeline page
// renders at most pageMarkdown bytes of messages; the rest of its
// messages stay preformatted.
const (
	maxMarkdown      = 16 << 10
	maxMarkdownNodes = 8192
	pageMarkdown     = 256 << 10
	maxQuoteDepth    = 16
	maxTableCells    = 8192
)

var (
	mdOnce   sync.Once
	mdEngine goldmark.Markdown
	mdPolicy *bluemonday.Policy
)

func markdownSetup() {
	mdEngine = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		// A line break in a message is one, as the agent's terminal
		// shows it: tool output pasted into a reply keeps its lines.
		goldmark.WithRendererOptions(html.WithHardWraps(), renderer.WithNodeRenderers(util.Prioritized(rawAsText{}, 100))),
	)
	mdPolicy = bluemonday.UGCPolicy()
	mdPolicy.RequireNoReferrerOnLinks(true)
	mdPolicy.AllowAttrs("class").Matching(bluemonday.SpaceSeparatedTokens).OnElements("code")
}

// markdown renders text as sanitised HTML, and reports false when it did
// not (too long, of a costly shape, or goldmark failed): the caller shows
// the text as it is.
func markdown(text string) (template.HTML, bool) {
	if len(text) > maxMarkdown || !mdShapeOK(text) {
		return "", false
	}
	mdOnce.Do(markdownSetup)
	src := []byte(text)
	doc := mdEngine.Parser().Parse(gtext.NewReader(src))
	nodes := 0
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			if nodes++; nodes > maxMarkdownNodes {
				return ast.WalkStop, nil
			}
		}
		return ast.WalkContinue, nil
	})
	if nodes > maxMarkdownNodes {
		return "", false
	}
	var b bytes.Buffer
	if err := mdEngine.Renderer().Render(&b, src, doc); err != nil {
		return "", false
	}
	return template.HTML(mdPolicy.SanitizeBytes(b.Bytes())), true
}

// mdShapeOK reports whether text is free of the shapes whose parse
// grows faster than the text: quotes nested deeper than maxQuoteDepth,
// and a table whose header is so wide that padding every later line to
// it (goldmark makes a cell for each) passes maxTableCells.
func mdShapeOK(text string) bool {
	lines := strings.Count(text, "\n") + 1
	for line := range strings.Lines(text) {
		depth := 0
		for _, c := range line {
			if c == '>' {
				depth++
			} else if c != ' ' && c != '\t' {
				break
			}
		}
		if depth > maxQuoteDepth {
			return false
		}
		if cols := delimiterColumns(line); cols > 0 && cols*lines > maxTableCells {
			return false
		}
	}
	return true
}

// delimiterColumns returns the columns of a table's delimiter row
// ("|---|:-:|"), or 0 when line is not one.
func delimiterColumns(line string) int {
	t := strings.TrimSpace(line)
	if !strings.Contains(t, "-") || strings.Trim(t, "|:- \t") != "" {
		return 0
	}
	t = strings.Trim(t, "|")
	return strings.Count(t, "|") + 1
}

// rawAsText renders the raw HTML of a Markdown text (inline and blocks)
// as escaped text.
type rawAsText struct{}

func (rawAsText) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawInline)
	reg.Register(ast.KindHTMLBlock, renderRawBlock)
	reg.Register(ast.KindImage, renderImageAsText)
}

// renderImageAsText writes an image as the Markdown that names it, as
// text: an <img> would make the browser fetch its URL on sight, and a
// same-origin one (the proxy's own paths) would reach the proxy.
func renderImageAsText(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.Image)
	w.WriteString("<code>![")
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			template.HTMLEscape(w, t.Segment.Value(source))
		}
	}
	w.WriteString("](")
	template.HTMLEscape(w, n.Destination)
	w.WriteString(")</code>")
	return ast.WalkSkipChildren, nil
}

func renderRawInline(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	for i := 0; i < n.Segments.Len(); i++ {
		s := n.Segments.At(i)
		template.HTMLEscape(w, s.Value(source))
	}
	return ast.WalkSkipChildren, nil
}

func renderRawBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if entering {
		w.WriteString("<pre class=\"rawhtml\">")
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			s := lines.At(i)
			template.HTMLEscape(w, s.Value(source))
		}
		return ast.WalkContinue, nil
	}
	if n.HasClosure() {
		template.HTMLEscape(w, n.ClosureLine.Value(source))
	}
	w.WriteString("</pre>\n")
	return ast.WalkContinue, nil
}

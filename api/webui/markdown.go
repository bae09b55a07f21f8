package webui

import (
	"bytes"
	"html/template"
	"sync"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
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
// reading, and a long text reads as well folded.
const maxMarkdown = 64 << 10

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
// not (too long, or goldmark failed): the caller shows the text as it is.
func markdown(text string) (template.HTML, bool) {
	if len(text) > maxMarkdown {
		return "", false
	}
	mdOnce.Do(markdownSetup)
	var b bytes.Buffer
	if err := mdEngine.Convert([]byte(text), &b); err != nil {
		return "", false
	}
	return template.HTML(mdPolicy.SanitizeBytes(b.Bytes())), true
}

// rawAsText renders the raw HTML of a Markdown text (inline and blocks)
// as escaped text.
type rawAsText struct{}

func (rawAsText) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawInline)
	reg.Register(ast.KindHTMLBlock, renderRawBlock)
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

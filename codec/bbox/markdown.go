package bbox

import "strings"

// Block is a fenced code block of a Markdown file that holds bbox text.
type Block struct {
	Lang string // the fence's info string: "", "bbox" or "yaml"
	// Line is the line number of the opening fence; the block's first
	// line is Line+1.
	Line int
	Text string
}

// MarkdownBlocks returns the fenced code blocks of md that hold bbox text:
// those marked bbox or blackbox, unmarked ones, and yaml ones that hold a
// "format: bbox/" header. Blocks marked with another language (json,
// jsonl, rust, ...) and the spec's table of regular expressions are
// skipped.
func MarkdownBlocks(md string) []Block {
	var out []Block
	var cur *Block
	var b strings.Builder
	for i, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			if cur == nil {
				cur = &Block{Lang: strings.TrimSpace(strings.TrimSpace(l)[3:]), Line: i + 1}
				b.Reset()
				continue
			}
			cur.Text = b.String()
			if isBBoxBlock(cur) {
				out = append(out, *cur)
			}
			cur = nil
			continue
		}
		if cur != nil {
			b.WriteString(strings.TrimSuffix(l, "\r"))
			b.WriteByte('\n')
		}
	}
	return out
}

func isBBoxBlock(b *Block) bool {
	switch b.Lang {
	case "", "bbox", "blackbox":
		return !strings.HasPrefix(b.Text, "# Structure")
	case "yaml", "yml":
		return strings.Contains(b.Text, "format: bbox/")
	}
	return false
}

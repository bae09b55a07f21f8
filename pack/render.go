package pack

import (
	"strings"
	"sync"

	"github.com/bbengine/bbengine/engine"
	"github.com/tiktoken-go/tokenizer"
)

const pointersHeading = "## More (ids for memory_get)\n"

// Markdown renders the pack for a prompt, wrapped in its
// <bbengine-context-pack> element. Sections with nothing to say are left
// out; the order is fixed.
func (p *Pack) Markdown() string {
	var b strings.Builder
	b.Grow(2048)
	b.WriteString("<" + engine.PackTag + ` session="` + attr(p.Session) + `"`)
	if p.TaskID != "" {
		b.WriteString(` task="` + attr(p.TaskID) + `"`)
	}
	b.WriteString(` version="` + p.Version + "\">\n")
	b.WriteString("# Session context from bbengine\n")
	b.WriteString(p.Contract + "\n")
	if p.Goal != "" {
		b.WriteString("\nGoal: " + p.Goal + "\n")
	}
	if p.Checkpoint != "" {
		b.WriteString("Checkpoint: " + p.Checkpoint + "\n")
	}
	if p.Task != "" {
		b.WriteString("This task: " + p.Task + "\n")
	}
	section := func(title string, items []Item) {
		if len(items) == 0 {
			return
		}
		b.WriteString("\n## " + title + "\n")
		for _, it := range items {
			b.WriteString(renderItem(it))
		}
	}
	section("Decisions in force", p.Decisions)
	section("Constraints", p.Constraints)
	if len(p.Implemented) > 0 {
		b.WriteString("\n## Implemented in earlier tasks\n")
		for _, t := range p.Implemented {
			b.WriteString(renderTask(t))
		}
	}
	section("Open threads", p.Threads)
	if len(p.Pointers) > 0 {
		b.WriteString("\n" + pointersHeading)
		b.WriteString(strings.Join(p.Pointers, ", ") + "\n")
	}
	b.WriteString("</" + engine.PackTag + ">\n")
	return b.String()
}

// renderItem is an item's Markdown line.
func renderItem(it Item) string {
	s := "- " + it.Text
	switch {
	case it.Note != "" && it.From != "":
		s += " (" + it.Note + "; from " + it.From + ")"
	case it.Note != "":
		s += " (" + it.Note + ")"
	case it.From != "":
		s += " (from " + it.From + ")"
	}
	return s + " [" + it.ID + "]\n"
}

// renderTask is a task's Markdown lines.
func renderTask(t TaskItem) string {
	var b strings.Builder
	b.WriteString("- " + t.Task + " (" + t.Status + ") [" + t.ID + "]")
	if len(t.Files) > 0 {
		b.WriteString(" files: " + strings.Join(t.Files, ", "))
	}
	b.WriteByte('\n')
	for _, s := range t.Bullets {
		b.WriteString("  - " + s + "\n")
	}
	return b.String()
}

// attr escapes an attribute value.
func attr(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;", "\n", " ").Replace(s)
}

var (
	encOnce sync.Once
	enc     tokenizer.Codec
)

// Count returns the number of cl100k_base tokens in s: the measure every
// budget uses. The vocabulary loads on first use (about 10 ms).
func Count(s string) int { return count(s) }

func count(s string) int {
	encOnce.Do(func() {
		var err error
		if enc, err = tokenizer.Get(tokenizer.Cl100kBase); err != nil {
			panic("pack: the embedded cl100k_base vocabulary does not load: " + err.Error())
		}
	})
	n, err := enc.Count(s)
	if err != nil {
		// Count fails only on text the codec cannot split; fall back on
		// the usual estimate of a token per three bytes, rounded up.
		return (len(s) + 2) / 3
	}
	return n
}

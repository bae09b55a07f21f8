package agents

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bbengine/bbengine/internal/safefile"
)

// Change is one file an install writes: its content before (nil when
// it does not exist) and after (nil to remove it). The JSON form is what
// `bbengine install --json` prints.
type Change struct {
	File   string `json:"file"`
	Action string `json:"action"` // created, updated, removed or unchanged
	Backup string `json:"backup,omitempty"`
	before []byte
	after  []byte
	perm   fs.FileMode
}

// NewChange returns the change of the file at path from before to
// after; nil means the file does not exist (before) or is removed
// (after). perm is the mode of a file it creates. The change keeps both
// slices: the caller must not modify them.
func NewChange(path string, perm fs.FileMode, before, after []byte) *Change {
	ch := &Change{File: path, perm: perm, before: before, after: after}
	ch.setAction()
	return ch
}

// Diff returns the change as a unified diff, "" when it changes nothing.
func (ch *Change) Diff() string {
	if ch.Action == "unchanged" {
		return ""
	}
	return unifiedDiff(ch.File, ch.before, ch.after)
}

func (ch *Change) setAction() {
	switch {
	case ch.before == nil && ch.after == nil, ch.before != nil && ch.after != nil && bytes.Equal(ch.before, ch.after):
		ch.Action = "unchanged"
	case ch.before == nil:
		ch.Action = "created"
	case ch.after == nil:
		ch.Action = "removed"
	default:
		ch.Action = "updated"
	}
}

// Apply writes the change: the old file is copied to FILE.bak-stamp
// first, the new content replaces it atomically (through a symbolic
// link to its target), with the old file's permissions.
func (ch *Change) Apply(stamp string) error {
	if ch.Action == "unchanged" {
		return nil
	}
	path := ch.File
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	perm := ch.perm
	if info, err := os.Stat(path); err == nil {
		perm = info.Mode().Perm()
	}
	if ch.before != nil {
		if err := ch.backup(stamp, perm); err != nil {
			return err
		}
	}
	if ch.after == nil {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove %s: %w", ch.File, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return safefile.WriteFile(path, ch.after, perm)
}

// backup copies the old content to FILE.bak-stamp, or FILE.bak-stamp-N
// when that exists (an install and an uninstall in the same second),
// never over an earlier backup.
func (ch *Change) backup(stamp string, perm fs.FileMode) error {
	for n := 0; ; n++ {
		name := ch.File + ".bak-" + stamp
		if n > 0 {
			name += fmt.Sprintf("-%d", n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("back up %s: %w", ch.File, err)
		}
		_, err = f.Write(ch.before)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return fmt.Errorf("back up %s: %w", ch.File, err)
		}
		ch.Backup = name
		return nil
	}
}

// unifiedDiff shows how after differs from before, line by line with
// three lines of context.
func unifiedDiff(name string, before, after []byte) string {
	a, b := splitLines(before), splitLines(after)
	from, to := name, name
	if before == nil {
		from = "/dev/null"
	}
	if after == nil {
		to = "/dev/null"
	}
	// The common head and tail are skipped before the quadratic part.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	lcs := make([][]int32, len(am)+1)
	// maxCells bounds the table; past it (a file rewritten from end to
	// end) the middle shows as all removed, then all added.
	const maxCells = 4 << 20
	small := len(am)*len(bm) <= maxCells
	for i := range lcs {
		if small {
			lcs[i] = make([]int32, len(bm)+1)
		} else {
			lcs[i] = make([]int32, 1)
		}
	}
	for i := len(am) - 1; i >= 0 && small; i-- {
		for j := len(bm) - 1; j >= 0; j-- {
			if am[i] == bm[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
		ai   int // line index in a (for ' ' and '-') or where it goes
		bi   int
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', a[i], i, i})
	}
	i, j := 0, 0
	for i < len(am) || j < len(bm) {
		switch {
		case small && i < len(am) && j < len(bm) && am[i] == bm[j]:
			ops = append(ops, op{' ', am[i], pre + i, pre + j})
			i, j = i+1, j+1
		case i < len(am) && (j == len(bm) || !small || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', am[i], pre + i, pre + j})
			i++
		default:
			ops = append(ops, op{'+', bm[j], pre + i, pre + j})
			j++
		}
	}
	for k := 0; k < suf; k++ {
		ops = append(ops, op{' ', a[len(a)-suf+k], len(a) - suf + k, len(b) - suf + k})
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	const context = 3
	var changed []int
	for k, o := range ops {
		if o.kind != ' ' {
			changed = append(changed, k)
		}
	}
	for c := 0; c < len(changed); {
		// A hunk runs from a change to the last one less than two
		// contexts after the one before it.
		d := c
		for d+1 < len(changed) && changed[d+1]-changed[d] <= 2*context+1 {
			d++
		}
		start, end := max(0, changed[c]-context), min(len(ops), changed[d]+context+1)
		an, bn := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				an++
			}
			if o.kind != '-' {
				bn++
			}
		}
		// A side with no lines names the line before the hunk.
		as, bs := ops[start].ai+1, ops[start].bi+1
		if an == 0 {
			as--
		}
		if bn == 0 {
			bs--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", as, an, bs, bn)
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		c = d + 1
	}
	return out.String()
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

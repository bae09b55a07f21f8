package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
)

// What a task under bbengine run changed, by the repository's own diff:
// the working tree's changed files are noted before the agent starts
// (with a hash of each one's content) and again after it exits, and the
// files whose content differs, or that a commit during the task touched,
// are the task's changes, with git's line counts against the commit the
// task started from. Only paths, counts and hashes are recorded, never a
// diff. Outside a git work tree, or without git, nothing is noted.

// repoState is a work tree at one moment.
type repoState struct {
	root string
	head string            // "" before the first commit
	hash map[string]string // changed files (against head), by path from root: SHA-256 of the content, "" when deleted
}

// gitTimeout bounds each git command: a slow repository delays the
// outcome note, never the agent.
const gitTimeout = 10 * time.Second

func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New(strings.TrimSpace("git " + strings.Join(args, " ") + ": " + err.Error() + " " + stderr.String()))
	}
	return out, nil
}

// snapshotRepo reads the work tree that holds dir; nil when dir is not
// in one or git is missing.
func snapshotRepo(ctx context.Context, dir string) *repoState {
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil
	}
	st := &repoState{root: strings.TrimSpace(string(out)), hash: map[string]string{}}
	if out, err := git(ctx, st.root, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		st.head = strings.TrimSpace(string(out))
	}
	out, err = git(ctx, st.root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return nil
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		if len(rec) < 4 {
			continue
		}
		p := rec[3:]
		st.hash[p] = fileHash(filepath.Join(st.root, p))
	}
	return st
}

// fileHash is the SHA-256 (hex) of a file's content, "" when it is gone
// or not a regular file.
func fileHash(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// repoChanges are the files that changed between before and after, at
// most exchange.MaxNoteFiles (the ones with the most changed lines).
func repoChanges(ctx context.Context, before, after *repoState) []exchange.FileStat {
	if before == nil || after == nil || before.root != after.root {
		return nil
	}
	changed := map[string]bool{}
	for p, h := range after.hash {
		if old, ok := before.hash[p]; !ok || old != h {
			changed[p] = true
		}
	}
	for p := range before.hash {
		if _, ok := after.hash[p]; !ok {
			changed[p] = true // clean again: reverted or committed
		}
	}
	if before.head != after.head && before.head != "" && after.head != "" {
		if out, err := git(ctx, after.root, "diff", "--name-only", "-z", "--no-renames", before.head, after.head); err == nil {
			for _, p := range strings.Split(string(out), "\x00") {
				if p != "" {
					changed[p] = true
				}
			}
		}
	}
	if len(changed) == 0 {
		return nil
	}
	// Line counts against the commit the task started from, for the
	// tracked files; a file new since then counts its lines.
	counts := map[string][2]int{}
	if before.head != "" {
		if out, err := git(ctx, after.root, "diff", "--numstat", "-z", "--no-renames", before.head); err == nil {
			parseNumstat(out, counts)
		}
	}
	var out []exchange.FileStat
	for p := range changed {
		full := filepath.Join(after.root, p)
		fs := exchange.FileStat{Path: p, SHA256: fileHash(full)}
		if c, ok := counts[p]; ok {
			fs.Added, fs.Deleted = c[0], c[1]
		} else if fs.SHA256 != "" {
			fs.Added = lineCount(full)
		}
		if fs.Path == "" || len(fs.Path) > exchange.MaxNoteFile || strings.ContainsAny(fs.Path, "\x00\n\r") {
			continue
		}
		out = append(out, fs)
	}
	slices.SortFunc(out, func(a, b exchange.FileStat) int {
		if d := (b.Added + b.Deleted) - (a.Added + a.Deleted); d != 0 {
			return d
		}
		return strings.Compare(a.Path, b.Path)
	})
	if len(out) > exchange.MaxNoteFiles {
		out = out[:exchange.MaxNoteFiles]
	}
	slices.SortFunc(out, func(a, b exchange.FileStat) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// parseNumstat reads git diff --numstat -z: "added\tdeleted\tpath\x00"
// per file ("-" for a binary file's counts).
func parseNumstat(out []byte, counts map[string][2]int) {
	for _, rec := range strings.Split(string(out), "\x00") {
		f := strings.SplitN(rec, "\t", 3)
		if len(f) != 3 || f[2] == "" {
			continue
		}
		a, _ := strconv.Atoi(f[0])
		d, _ := strconv.Atoi(f[1])
		counts[f[2]] = [2]int{a, d}
	}
}

// lineCount counts a file's lines, up to 64 MiB of it.
func lineCount(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, total, last := 0, 0, byte('\n')
	for total < 64<<20 {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if k > 0 {
			last = buf[k-1]
		}
		total += k
		if err != nil {
			break
		}
	}
	if last != '\n' {
		n++
	}
	return n
}

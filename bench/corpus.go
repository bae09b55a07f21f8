package bench

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// GoldenClaude is the golden Claude Code corpus, relative to the
// repository's root: ../shared/agentlogs-golden/claude.
const GoldenClaude = "../shared/agentlogs-golden/claude"

// CorpusStats is what ClaudeCorpus wrote.
type CorpusStats struct {
	Files int
	Bytes int64
}

var sessionIDRe = regexp.MustCompile(`"sessionId":"([0-9a-f-]{36})"`)

// ClaudeCorpus writes copies copies of the Claude Code logs under src (a
// tree of projects as ~/.claude/projects holds them) into dst/projects,
// so that dst is a CLAUDE_CONFIG_DIR. Copy i lives in
// dst/projects/c<i>/, and every session id of the corpus (its sessionId
// values and the names of its session files and folders) is renamed in
// it, its first 8 hex digits replaced by i's, as is every requestId: so
// each copy is a set of sessions of its own for bbengine and for
// ccusage, which counts a (message id, requestId) pair once.
func ClaudeCorpus(dst, src string, copies int) (CorpusStats, error) {
	var st CorpusStats
	type file struct {
		rel  string
		data []byte
	}
	var files []file
	ids := map[string]bool{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasSuffix(p, ".jsonl") && !strings.HasSuffix(p, ".json") && filepath.Base(filepath.Dir(p)) != "tool-results" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		files = append(files, file{rel, data})
		for _, m := range sessionIDRe.FindAllSubmatch(data, -1) {
			ids[string(m[1])] = true
		}
		if stem := strings.TrimSuffix(filepath.Base(p), ".jsonl"); len(stem) == 36 && stem[8] == '-' {
			ids[stem] = true
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	if len(files) == 0 {
		return st, fmt.Errorf("no Claude Code logs under %s", src)
	}
	for i := range copies {
		prefix := fmt.Sprintf("%08x", i)
		var pairs []string
		for id := range ids {
			pairs = append(pairs, id, prefix+id[8:])
		}
		pairs = append(pairs, `"requestId":"`, `"requestId":"`+prefix)
		r := strings.NewReplacer(pairs...)
		var buf bytes.Buffer
		for _, f := range files {
			out := filepath.Join(dst, "projects", fmt.Sprintf("c%d", i), r.Replace(f.rel))
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return st, err
			}
			buf.Reset()
			if _, err := r.WriteString(&buf, string(f.data)); err != nil {
				return st, err
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return st, err
			}
			st.Files++
			st.Bytes += int64(buf.Len())
		}
	}
	return st, nil
}

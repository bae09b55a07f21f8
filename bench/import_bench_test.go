package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

// importCorpus writes n copies of the golden logs of source into a fresh
// folder, each copy a session of its own (its session ids renamed), and
// returns the folder and its size. It skips when ../shared is absent.
func importCorpus(b *testing.B, source string, copies int) (string, int64) {
	b.Helper()
	src := filepath.Join("..", "..", "shared", "agentlogs-golden", source)
	if _, err := os.Stat(src); err != nil {
		b.Skipf("golden agent logs not present: %v", err)
	}
	dst := b.TempDir()
	var size int64
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".jsonl" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		for i := range copies {
			out := filepath.Join(dst, string(rune('a'+i)), rel)
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			// Rename the session ids so that every copy is a session.
			body := bytes.ReplaceAll(data, []byte(`"sessionId":"`), []byte(`"sessionId":"`+string(rune('a'+i))))
			body = bytes.ReplaceAll(body, []byte(`"type":"session_meta","payload":{"id":"`), []byte(`"type":"session_meta","payload":{"id":"`+string(rune('a'+i))))
			if err := os.WriteFile(out, body, 0o644); err != nil {
				return err
			}
			size += int64(len(body))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return dst, size
}

func corpusFiles(b *testing.B, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	return out
}

// benchImport measures bbengine import end to end on a fresh data
// directory: reading the files, writing their records to the WAL as
// import frames, and deriving every session (the engine caught up). The
// baseline, measured in the same run, copies the same files into one raw
// file (read + write, no parsing); import/copy is the ratio.
func benchImport(b *testing.B, source string) {
	dir, size := importCorpus(b, source, 4)
	files := corpusFiles(b, dir)
	var copyNs, importNs, readNs, appendNs int64
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		// Baseline: raw copy.
		b.StopTimer()
		raw, err := os.Create(filepath.Join(b.TempDir(), "raw"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := nowNs()
		for _, p := range files {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(raw, f)
			f.Close()
		}
		raw.Sync()
		raw.Close()
		t1 := nowNs()
		copyNs += t1 - t0

		b.StopTimer()
		data := b.TempDir()
		log, err := wal.Open(filepath.Join(data, "wal"), &wal.Options{Sync: wal.SyncInterval})
		if err != nil {
			b.Fatal(err)
		}
		e, err := engine.Open(data, &engine.Options{WAL: log})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t2 := nowNs()
		for _, p := range files {
			ta := nowNs()
			fi, err := engine.ReadImport(source, p, nil)
			if err != nil {
				b.Fatal(err)
			}
			tb := nowNs()
			if err := engine.AppendImport(log, fi.Records); err != nil {
				b.Fatal(err)
			}
			readNs += tb - ta
			appendNs += nowNs() - tb
		}
		if err := log.Sync(); err != nil {
			b.Fatal(err)
		}
		if _, err := e.CatchUp(context.Background()); err != nil {
			b.Fatal(err)
		}
		importNs += nowNs() - t2
		b.StopTimer()
		e.Close()
		log.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(size)/(float64(importNs)/float64(b.N))*1e3, "import-MB/s")
	b.ReportMetric(float64(importNs)/float64(copyNs), "import/copy")
	b.ReportMetric(float64(readNs)/float64(importNs), "read-share")
	b.ReportMetric(float64(appendNs)/float64(importNs), "append-share")
}

func BenchmarkImportCodex(b *testing.B) { benchImport(b, "codex") }

// BenchmarkImport runs `bbengine import claude` as the command does (in
// this process, through cli.MainContext) on copies of the golden Claude
// corpus (bench.ClaudeCorpus: each copy sessions of its own), into a
// fresh data directory each time: streaming the files through the
// pipeline, the WAL, and derivation of every session and its memory.
// MB/s is of the corpus's bytes; allocations are the whole process's.
// bench/cmd/importbench compares the built binary with ccusage.
func BenchmarkImport(b *testing.B) {
	for _, copies := range []int{1, 4} {
		b.Run(fmt.Sprintf("source=claude/copies=%d", copies), func(b *testing.B) {
			src := filepath.Join("..", GoldenClaude)
			if _, err := os.Stat(src); err != nil {
				b.Skipf("golden agent logs not present: %v", err)
			}
			corpus := b.TempDir()
			st, err := ClaudeCorpus(corpus, src, copies)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Bytes)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				data := b.TempDir()
				b.StartTimer()
				var stderr bytes.Buffer
				code := cli.MainContext(context.Background(), []string{"bbengine", "--dir", data, "import", "claude", "--quiet", filepath.Join(corpus, "projects")}, io.Discard, &stderr)
				if code != 0 {
					b.Fatalf("import exited %d: %s", code, stderr.String())
				}
			}
		})
	}
}

func nowNs() int64                       { return time.Now().UnixNano() }
func BenchmarkImportClaude(b *testing.B) { benchImport(b, "claude") }

package agentlog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func goldenLines(b testing.TB) ([][]byte, int64) {
	var out [][]byte
	var n int64
	filepath.WalkDir(filepath.Join("..", "..", "..", "shared", "agentlogs-golden"), func(p string, d os.DirEntry, err error) error {
		if err != nil || filepath.Ext(p) != ".jsonl" {
			return nil
		}
		data, _ := os.ReadFile(p)
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(l) > 0 {
				out = append(out, l)
				n += int64(len(l))
			}
		}
		return nil
	})
	if len(out) == 0 {
		b.Skip("golden agent logs not present")
	}
	return out, n
}

// BenchmarkFields compares the one-pass envelope check (its fast path,
// and the decoder alone) with encoding/json's Valid, which the importer
// called on every line before.
func BenchmarkFields(b *testing.B) {
	lines, n := goldenLines(b)
	b.Run("check=fields", func(b *testing.B) {
		b.SetBytes(n)
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				if _, err := Fields(l, "type"); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("check=decoder", func(b *testing.B) {
		b.SetBytes(n)
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				if _, err := decodeFields(l, []string{"type"}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("check=valid", func(b *testing.B) {
		b.SetBytes(n)
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				if !json.Valid(l) {
					b.Fatal("invalid")
				}
			}
		}
	})
}

package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/bbox"
	"github.com/bbengine/bbengine/engine"
)

// TestGoldenBBox renders every recorded scenario of the engine's
// testdata/wire as bbox/1 and compares it with testdata/golden (go test
// -update rewrites them). Every rendered document must validate without
// errors.
func TestGoldenBBox(t *testing.T) {
	for _, name := range wireNames(t) {
		t.Run(name, func(t *testing.T) {
			_, ss, evs, data := timeline(t, name)
			var text strings.Builder
			for _, s := range ss {
				doc, err := BBox(s, evs[s.ID], &BBoxOptions{Blobs: engine.NewBlobs(data)})
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range bbox.Validate(doc, name) {
					if d.Severity == bbox.Error {
						t.Errorf("session %s: %v", s.ID, d)
					}
				}
				text.WriteString(doc.String())
			}
			golden(t, filepath.Join("testdata", "golden", name+".bbox"), text.String())
		})
	}
}

// agentLogs is where the golden agent logs are (read-only, outside the
// repository); tests that read them skip when it is missing.
var agentLogs = filepath.Join("..", "..", "shared", "agentlogs-golden")

// convertGolden reads the golden logs of source under agentLogs as
// bbengine convert does (engine.ReadImport, grouped by the session each
// file names, then engine.DeriveImport), keeping the files for which
// keep is true.
func convertGolden(t *testing.T, source string, keep func(path string) bool) map[string]*engine.Imported {
	t.Helper()
	root := filepath.Join(agentLogs, source)
	if _, err := os.Stat(root); err != nil {
		t.Skip("golden agent logs not found:", err)
	}
	bySession := map[string][]engine.ImportFile{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !keep(p) {
			return err
		}
		fi, err := engine.ReadImport(source, p, nil)
		if err != nil {
			return err
		}
		if len(fi.Records) == 0 {
			return nil
		}
		f := engine.ImportFile{Path: fi.Path}
		for _, r := range fi.Records {
			f.Records = append(f.Records, engine.ImportRecord{Import: r})
		}
		bySession[fi.Session] = append(bySession[fi.Session], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bySession) == 0 {
		t.Fatalf("no %s sessions under %s", source, root)
	}
	out := map[string]*engine.Imported{}
	for id, files := range bySession {
		im, err := engine.DeriveImport(source, id, files)
		if err != nil {
			t.Fatalf("session %s: %v", id, err)
		}
		out[id] = im
	}
	return out
}

// TestImportClaudeBBox renders every golden Claude Code session as
// bbox/1; each must validate without errors and parse back.
func TestImportClaudeBBox(t *testing.T) {
	sessions := convertGolden(t, "claude", func(p string) bool {
		return strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".meta.json")
	})
	for id, im := range sessions {
		doc, err := BBox(im.Session, im.Events, &BBoxOptions{Blobs: engine.NewBlobs(t.TempDir())})
		if err != nil {
			t.Fatalf("session %s: %v", id, err)
		}
		for _, d := range bbox.Validate(doc, id) {
			if d.Severity == bbox.Error {
				t.Errorf("session %s: %v", id, d)
			}
		}
		if _, err := bbox.ParseBytes([]byte(doc.String())); err != nil {
			t.Errorf("session %s: %v", id, err)
		}
	}
}

// TestImportCodexBBox renders every golden Codex rollout as bbox/1; each
// must validate without errors.
func TestImportCodexBBox(t *testing.T) {
	sessions := convertGolden(t, "codex", func(p string) bool {
		return strings.HasPrefix(filepath.Base(p), "rollout-") && strings.HasSuffix(p, ".jsonl")
	})
	for id, im := range sessions {
		doc, err := BBox(im.Session, im.Events, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range bbox.Validate(doc, id) {
			if d.Severity == bbox.Error {
				t.Errorf("session %s: %s", id, d.String())
			}
		}
	}
}

package export

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bbengine/bbengine/codec/atif"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// FuzzATIFImport checks that the atif importer never panics, and that a
// document that imports without problems exports as a valid document that
// imports to the same census.
func FuzzATIFImport(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "codec", "atif", "testdata", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	s, events := everyKind()
	tr, err := ATIF(s, events, nil)
	if err != nil {
		f.Fatal(err)
	}
	b, err := atif.Encode(tr)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	imp := func(b []byte) *engine.Imported {
		im, err := engine.DeriveImport("atif", "atif:f", []engine.ImportFile{{Path: "f.json", Records: []engine.ImportRecord{{
			Import: exchange.Import{Kind: exchange.ImportDoc, Data: b}}}}})
		if err != nil {
			f.Fatal(err)
		}
		return im
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		im := imp(b)
		for _, ev := range im.Events {
			if ev.Kind == engine.KindError {
				return
			}
		}
		if len(im.Events) == 0 {
			return
		}
		tr, err := ATIF(&im.Session, im.Events, nil)
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		if errs := atif.Validate(tr); errs != nil {
			t.Fatalf("export does not validate: %v", errs)
		}
		out, err := atif.Encode(tr)
		if err != nil {
			t.Fatal(err)
		}
		again := imp(out)
		for _, r := range census.Compare(engine.Census(&im.Session, im.Events), engine.Census(&again.Session, again.Events)) {
			if r.Differs {
				t.Fatalf("census %s: %d → %d", r.Name, r.Source, r.Result)
			}
		}
	})
}

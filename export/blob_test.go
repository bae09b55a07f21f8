package export

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/bbox"
	"github.com/bbengine/bbengine/engine"
)

// TestBBoxBlobTexts: texts the engine kept as blobs (longer than its
// TextLimit: Event.TextBlob) are blob references in bbox/1 whatever the
// threshold, and formats without blob references say where the rest of
// a text is (engine.MarkBlobTexts).
func TestBBoxBlobTexts(t *testing.T) {
	dir := t.TempDir()
	blobs := engine.NewBlobs(dir)
	prompt := "Summarize: " + strings.Repeat("log line\n", 40)
	answer := "  " + strings.Repeat("The answer goes on. ", 20) + "\n"
	spill := func(text string) (string, string, int64) {
		sum, err := blobs.PutString(text)
		if err != nil {
			t.Fatal(err)
		}
		return text[:64], sum, int64(len(text))
	}
	pText, pSum, pN := spill(prompt)
	aText, aSum, aN := spill(answer)
	s := engine.Session{ID: "s", Requests: 1, Threads: 1}
	prov := engine.Provenance{Exchange: 1}
	evs := []engine.Event{
		{Seq: 1, Kind: engine.KindSystem, Role: "system", Thread: 1, Text: "sys", Prov: prov},
		{Seq: 2, Kind: engine.KindMessage, Role: "user", Thread: 1, Text: pText, TextBlob: pSum, TextBytes: pN, Prov: prov},
		{Seq: 3, Kind: engine.KindModelCall, Thread: 1, Call: &engine.Call{Model: "claude-x", Status: 200}, Prov: prov},
		{Seq: 4, Kind: engine.KindMessage, Role: "assistant", Thread: 1, Text: aText, TextBlob: aSum, TextBytes: aN, Prov: prov},
		{Seq: 5, Kind: engine.KindMessage, Role: "user", Thread: 1, Text: "thanks", Prov: prov},
	}
	doc, err := BBox(s, evs, &BBoxOptions{Blobs: blobs, BlobThreshold: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := bbox.Write(&out, doc, bbox.Canonical); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "@blob sha256="); n != 2 {
		t.Errorf("bbox has %d blob references, want 2:\n%s", n, out.String())
	}
	for _, d := range bbox.Validate(doc, "blobs") {
		if d.Severity == bbox.Error {
			t.Errorf("validate: %v", d)
		}
	}
	rl, err := RLog(&s, engine.MarkBlobTexts(evs))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(rl), " bytes in all: blob sha256="); n != 2 {
		t.Errorf("rlog marks %d texts as blobs, want 2:\n%s", n, rl)
	}
}

package export

import (
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/bbox"
	"github.com/bbengine/bbengine/engine"
)

// TestBBoxMessageFields: message text that ends in key=value tokens must
// not turn into metadata (E204 for ts=, E203 for step= going backwards).
func TestBBoxMessageFields(t *testing.T) {
	s := engine.Session{ID: "s", Requests: 1}
	evs := []engine.Event{
		{Seq: 1, Kind: engine.KindMessage, Role: "user", Thread: 1, Text: "run the job at ts=tomorrow", Prov: engine.Provenance{Exchange: 1}},
		{Seq: 2, Kind: engine.KindModelCall, Thread: 1, Call: &engine.Call{Model: "m", Status: 200}, Prov: engine.Provenance{Exchange: 1}},
		{Seq: 3, Kind: engine.KindMessage, Role: "assistant", Thread: 1, Text: "Now on step=5", Prov: engine.Provenance{Exchange: 1}},
		{Seq: 4, Kind: engine.KindMessage, Role: "assistant", Thread: 1, Text: "Back to step=1\nsecond line", Prov: engine.Provenance{Exchange: 1}},
		{Seq: 5, Kind: engine.KindToolCall, Thread: 1, Tool: &engine.Tool{ID: "c1", Name: "mcp__github__create_issue", Args: []byte(`{"id":3,"title":"x → y"}`)}, Prov: engine.Provenance{Exchange: 1}},
		{Seq: 6, Kind: engine.KindToolResult, Thread: 1, Tool: &engine.Tool{ID: "orphan", Name: "Read"}, Text: "late", Prov: engine.Provenance{Exchange: 1}},
	}
	doc, err := BBox(s, evs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range bbox.Validate(doc, "t") {
		if d.Severity == bbox.Error {
			t.Errorf("%v", d)
		}
	}
	back, err := bbox.ParseBytes([]byte(doc.String()))
	if err != nil {
		t.Fatal(err)
	}
	text := doc.String()
	for _, want := range []string{"run the job at ts=tomorrow", "Now on step=5", "Back to step=1", `c:github.create_issue id=c1 arg.id=3 title="x → y"`, "t:Read id=orphan extra.orphan=true → late"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if !back.Equal(doc) {
		t.Error("the document does not read back equal")
	}
}

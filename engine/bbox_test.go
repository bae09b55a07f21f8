package engine

import (
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/bbox"
)

// TestBBoxMessageFields: message text that ends in key=value tokens must
// not turn into metadata (E204 for ts=, E203 for step= going backwards).
func TestBBoxMessageFields(t *testing.T) {
	s := Session{ID: "s", Requests: 1}
	evs := []Event{
		{Seq: 1, Kind: KindMessage, Role: "user", Thread: 1, Text: "run the job at ts=tomorrow", Prov: Provenance{Exchange: 1}},
		{Seq: 2, Kind: KindModelCall, Thread: 1, Call: &Call{Model: "m", Status: 200}, Prov: Provenance{Exchange: 1}},
		{Seq: 3, Kind: KindMessage, Role: "assistant", Thread: 1, Text: "Now on step=5", Prov: Provenance{Exchange: 1}},
		{Seq: 4, Kind: KindMessage, Role: "assistant", Thread: 1, Text: "Back to step=1\nsecond line", Prov: Provenance{Exchange: 1}},
		{Seq: 5, Kind: KindToolCall, Thread: 1, Tool: &Tool{ID: "c1", Name: "mcp__github__create_issue", Args: []byte(`{"id":3,"title":"x → y"}`)}, Prov: Provenance{Exchange: 1}},
		{Seq: 6, Kind: KindToolResult, Thread: 1, Tool: &Tool{ID: "orphan", Name: "Read"}, Text: "late", Prov: Provenance{Exchange: 1}},
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

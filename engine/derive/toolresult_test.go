package derive

import "testing"

// TestThreadResult pairs tool results with their calls: by id; by name
// when the result has no id; and a result with an id no call has (Gemini
// CLI's synth_… for a functionCall sent without one) with the oldest
// waiting call of its name whose id was made up, never with a call whose
// id the provider sent.
func TestThreadResult(t *testing.T) {
	th := &thread{}
	th.call("toolu_1", "Read", false)
	th.call("read_file#7.1", "read_file", true)
	th.call("read_file#7.2", "read_file", true)
	th.call("call_9", "read_file", false)
	tests := []struct {
		id, name       string
		wantID, wantNm string
		ok             bool
	}{
		{"toolu_1", "Read", "toolu_1", "Read", true},
		{"synth_p1_1732_0", "read_file", "read_file#7.1", "read_file", true},
		{"", "read_file", "read_file#7.2", "read_file", true},
		{"synth_p1_1732_1", "read_file", "synth_p1_1732_1", "read_file", false}, // call_9's id was sent: not taken
		{"call_9", "read_file", "call_9", "read_file", true},
	}
	for _, tt := range tests {
		id, name, ok := th.result(tt.id, tt.name)
		if id != tt.wantID || name != tt.wantNm || ok != tt.ok {
			t.Errorf("result(%q, %q) = %q, %q, %v; want %q, %q, %v", tt.id, tt.name, id, name, ok, tt.wantID, tt.wantNm, tt.ok)
		}
	}
	if len(th.Calls) != 0 {
		t.Errorf("calls left waiting: %+v", th.Calls)
	}
}

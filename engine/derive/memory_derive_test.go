package derive

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzToolArgs checks that toolArgs decodes as encoding/json does.
func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{`{"command":"ls"}`, `{"a":1,"a":2}`, "{\"s\":\"\xff\"}", `{"s":"\ud800"}`, `{"n":1e400}`, `{"n":12345678901234567890}`,
		`[1]`, `{"a":{"b":[null,true,"x"]}}`, `{"a":"\u00e9\ud83d\ude00"}`, `{"a":1}x`, ` {"a" : 1} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want map[string]any
		if json.Unmarshal(in, &want) != nil {
			want = nil
		}
		if got := toolArgs(&Event{Tool: &Tool{Args: in}}); !reflect.DeepEqual(got, want) {
			t.Fatalf("toolArgs(%q) = %#v, encoding/json %#v", in, got, want)
		}
	})
}

func TestLastOutputLine(t *testing.T) {
	for in, want := range map[string]string{
		"> Task :reindexBench\nreindexed 2,400,000 docs in 6m41s\n": "reindexed 2,400,000 docs in 6m41s",
		"Plan: 0 to add, 2 to change, 0 to destroy.\nExit code 0\n": "Plan: 0 to add, 2 to change, 0 to destroy.",
		"ok\n-----\n\n":    "ok",
		"":                 "",
		"\n\n":             "",
		"single line only": "single line only",
	} {
		if got := lastOutputLine(in); got != want {
			t.Errorf("lastOutputLine(%q) = %q, want %q", in, got, want)
		}
	}
}

package derive

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/codec/redact"
)

// marshalRaw is what encoding/json writes for r.
func marshalRaw(t testing.TB, r []byte) []byte {
	t.Helper()
	b, err := json.Marshal(json.RawMessage(r))
	if err != nil {
		t.Fatalf("marshal %q: %v", r, err)
	}
	return b
}

func TestAppendNormal(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `null`, `1.5e3`, `"x"`,
		`{"a":1,"b":[true,false,null]}`,
		` { "a" : 1 ,` + "\n\t" + `"b" : [ 1 , 2 ] } `,
		`{"cmd":"ls -la | grep x > out && cat < in"}`,
		`{"s":"a \"quoted\" \\ back<slash>\\"}`,
		`{"s":"\\\"<"}`,
		`{"u":"line\u2028sep\u2029para"}`,
		"{\"u\":\"raw \xe2\x80\xa8 and \xe2\x80\xa9 and \xe2\x80\xa6\"}",
		"{\"bad\":\"\xff\xfe <\"}",
		`["a" , "b c" ,{"k" : "v w"}]`,
		`{"e":"\u003c already escaped \u0026"}`,
	} {
		got, want := appendNormal([]byte("x"), []byte(in)), marshalRaw(t, []byte(in))
		if !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Errorf("appendNormal(%q) = %q, want %q", in, got[1:], want)
		}
	}
}

func FuzzAppendNormal(f *testing.F) {
	for _, s := range []string{`{"a": "<b> & c"}`, "[1, 2,\n3]", `"\u2028"`, "\"\xe2\x80\xa8\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		if got, want := appendNormal(nil, in), marshalRaw(t, in); !bytes.Equal(got, want) {
			t.Fatalf("appendNormal(%q) = %q, want %q", in, got, want)
		}
	})
}

// checkHanded checks that each event, as encodeHanded hands it over,
// equals what decoding its stored form gives, as Engine.Events does.
func checkHanded(t *testing.T, what string, events []Event, red *redact.Redactor) {
	t.Helper()
	var enc eventEncoder
	for i := range events {
		ev := events[i]
		stored, err := encodeHanded(&enc, &ev, red)
		if err != nil {
			t.Fatalf("%s: event %d: %v", what, i+1, err)
		}
		var want Event
		if err := jsonv1.Unmarshal(stored, &want); err != nil {
			t.Fatalf("%s: event %d: decode: %v", what, i+1, err)
		}
		if !reflect.DeepEqual(ev, want) {
			got, _ := json.Marshal(ev)
			t.Fatalf("%s: event %d handed over differs from its decoding:\n got %s\nwant %s\n(%#v\n%#v)", what, i+1, got, stored, ev, want)
		}
	}
}

// TestHandEvents checks encodeHanded on every event of the golden
// corpora and on events made to differ from their decoding.
func TestHandEvents(t *testing.T) {
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "sk-ant-api03-" + strings.Repeat("A1b2C3d4", 12)
	made := []Event{
		{Kind: KindMessage, Role: "user", Text: "invalid \xff\xfe UTF-8 <b>"},
		{Kind: KindMessage, Role: "user", Text: "a key " + key},
		{Kind: KindToolCall, Tool: &Tool{ID: "t1", Name: "Bash", Args: json.RawMessage(`{ "command" : "ls > out && cat < in" }`)}},
		{Kind: KindToolCall, Tool: &Tool{ID: "t2", Name: "Bash", Args: json.RawMessage(`{"command":"export KEY=` + key + `"}`)}},
		{Kind: KindToolCall, Tool: &Tool{ID: "t3", Args: json.RawMessage{}}},
		{Kind: KindToolResult, Tool: &Tool{ID: "t1"}, Extra: json.RawMessage("{\"x\":\"\xe2\x80\xa8\"}\n")},
		{Kind: KindMessage, Parts: []llm.Part{}},
		{Kind: KindMessage, Parts: []llm.Part{{Type: "tool_use", Input: json.RawMessage(`{"a" : "<"}`), Content: []llm.Part{}, TrimSHA256: "ab"},
			{Type: "other", Raw: json.RawMessage(`{"type": "server_tool_use", "x": "a&b"}`)},
			{Type: "tool_result", Content: []llm.Part{{Type: "text", Input: json.RawMessage(" [1] ")}}}}},
		{Kind: KindModelCall, Call: &Call{Params: []llm.Param{}}},
		{Kind: KindModelCall, Call: &Call{Params: []llm.Param{{Name: "a"}, {Name: "b", Value: json.RawMessage(`{ "c" : "&" }`)}}}},
		{Kind: KindRecord, Record: &Record{Type: "x"}},
		{Kind: KindRecord, Record: &Record{Type: "y", Raw: json.RawMessage(`{"type" : "y", "t":"<tag>"}`)}},
	}
	checkHanded(t, "made", made, red)
	n := 0
	for _, s := range goldenClaude(t) {
		im, err := DeriveImport("claude", "claude:"+s.id, s.files)
		if err != nil {
			t.Fatal(err)
		}
		checkHanded(t, s.id, im.Events, red)
		n += len(im.Events)
	}
	if dir := filepath.Join("..", "..", "shared", "agentlogs-golden", "codex"); dirExists(dir) {
		for _, p := range codexGolden(t) {
			file, _ := readRollout(t, p)
			im := deriveRollout(t, file)
			checkHanded(t, filepath.Base(p), im.Events, red)
			n += len(im.Events)
		}
	}
	t.Logf("%d golden events", n)
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// TestHandEventTypes fails when Event gains a field of a type whose
// encoding and decoding the eventEncoder does not know: a map, an interface,
// a float, another RawMessage field, a slice of another type.
func TestHandEventTypes(t *testing.T) {
	known := map[reflect.Type]bool{
		reflect.TypeFor[json.RawMessage](): true, // Extra, Tool.Args, Part.Input, Part.Raw, Param.Value, Record.Raw
		reflect.TypeFor[[]llm.Part]():      true, // Parts, Part.Content
		reflect.TypeFor[[]llm.Param]():     true, // Call.Params
		reflect.TypeFor[[]Counterpart]():   true, // Also
	}
	cleared := map[string]bool{"Part.TrimSHA256": true}
	raws := 0
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		switch ty.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Uint64:
		case reflect.Pointer:
			walk(path, ty.Elem())
		case reflect.Struct:
			for f := range ty.Fields() {
				name := ty.Name() + "." + f.Name
				if !f.IsExported() || f.Tag.Get("json") == "-" {
					// Not encoded: the eventEncoder must clear it.
					if !cleared[name] {
						t.Errorf("%s.%s is not encoded: teach the eventEncoder (eventenc.go) to clear it", path, f.Name)
					}
					continue
				}
				walk(path+"."+f.Name, f.Type)
			}
		case reflect.Slice:
			if !known[ty] {
				t.Errorf("%s: a slice of type %s: teach the eventEncoder (eventenc.go) how it decodes", path, ty)
				return
			}
			if ty == reflect.TypeFor[json.RawMessage]() {
				raws++
				return
			}
			if !strings.HasSuffix(path, ".Content") { // a Part's Content is a Part's
				walk(path+"[]", ty.Elem())
			}
		default:
			t.Errorf("%s: a %s: teach the eventEncoder (eventenc.go) how it decodes", path, ty)
		}
	}
	walk("Event", reflect.TypeFor[Event]())
	if raws != 6 {
		t.Errorf("Event holds %d RawMessage fields, the eventEncoder knows 6", raws)
	}
}

// BenchmarkAppendNormal normalizes the records of a golden Claude log:
// the largest RawMessages an import's events carry.
func BenchmarkAppendNormal(b *testing.B) {
	sessions := goldenClaude(b)
	var recs [][]byte
	size := 0
	for _, s := range sessions[:1] {
		for _, f := range s.files {
			for _, r := range f.Records {
				recs = append(recs, r.Data)
				size += len(r.Data)
			}
		}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		for _, r := range recs {
			dst = appendNormal(dst[:0], r)
		}
	}
}

// keep copies into its arena without an allocation per event.
func TestKeepAllocs(t *testing.T) {
	var enc eventEncoder
	b := []byte(`{"kind":"message","text":"hello"}`)
	first := enc.keep(b)
	if n := testing.AllocsPerRun(500, func() { enc.keep(b) }); n != 0 {
		t.Fatalf("keep: %v allocations per event, want 0", n)
	}
	b[2] = 'K'
	if string(first) != `{"kind":"message","text":"hello"}` {
		t.Fatalf("kept %s: it shares the caller's bytes", first)
	}
	enc.resetArena()
	if again := enc.keep(b); &again[0] == &first[0] || string(first[:3]) != `{"k` {
		t.Fatal("resetArena reused the arena")
	}
}

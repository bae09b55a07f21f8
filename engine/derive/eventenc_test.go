package derive

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/llm"
)

// checkEncoder checks that the eventEncoder writes each event as
// json.Marshal does.
func checkEncoder(t *testing.T, what string, events []Event) {
	t.Helper()
	var enc eventEncoder
	for i := range events {
		want, werr := json.Marshal(&events[i])
		ev := events[i]
		enc.reset()
		enc.event(&ev)
		if (werr != nil) != (enc.err != nil) {
			t.Fatalf("%s: event %d: error %v, json.Marshal's %v", what, i+1, enc.err, werr)
		}
		if werr == nil && !bytes.Equal(enc.b, want) {
			t.Fatalf("%s: event %d:\n got %s\nwant %s", what, i+1, enc.b, want)
		}
	}
}

// fill sets every field of v, reached through pointers and slices, to a
// value that is not its zero value and needs escaping, so that a field
// the eventEncoder does not write shows.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("s <&> \"q\" \\ \n\t\x01 \u2028 \xff é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(-12345)
	case reflect.Uint64:
		v.SetUint(1<<63 + 7)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth)
			}
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(`{ "a" : [1, "<b> & \u2028"], "c":` + "\"\xe2\x80\xa9\"" + ` }`))
			return
		}
		if depth > 1 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), depth+1)
		}
		v.Set(s)
	}
}

func TestEventEncoder(t *testing.T) {
	var full Event
	fill(reflect.ValueOf(&full).Elem(), 0)
	full.Parts[1].Content = []llm.Part{}
	full.Call.Params[1].Value = nil
	made := []Event{
		{},
		full,
		{Kind: KindToolCall, Tool: &Tool{}, Usage: &Usage{}, Call: &Call{}, Error: &Error{}, Rewrite: &Rewrite{}, Record: &Record{}},
		{Kind: KindToolCall, Tool: &Tool{Args: json.RawMessage(`{"a":`)}},
		{Kind: KindRecord, Record: &Record{Raw: json.RawMessage{}}},
		{Kind: KindMessage, Parts: []llm.Part{}, Call: &Call{Params: []llm.Param{}}},
		{Text: strings.Repeat("\u00e9\u4e16\U0001F600 ok\x7f", 50)},
	}
	checkEncoder(t, "made", made)
	n := 0
	for _, s := range goldenClaude(t) {
		im, err := DeriveImport("claude", "claude:"+s.id, s.files)
		if err != nil {
			t.Fatal(err)
		}
		checkEncoder(t, s.id, im.Events)
		n += len(im.Events)
	}
	if dir := filepath.Join("..", "..", "shared", "agentlogs-golden", "codex"); dirExists(dir) {
		for _, p := range codexGolden(t) {
			file, _ := readRollout(t, p)
			im := deriveRollout(t, file)
			checkEncoder(t, filepath.Base(p), im.Events)
			n += len(im.Events)
		}
	}
	t.Logf("%d golden events", n)
}

func TestEventEncoderAllocs(t *testing.T) {
	ev := Event{Kind: KindMessage, Role: "user", Text: "hello <world>", Tool: &Tool{ID: "x", Args: json.RawMessage(`{"a":1}`)},
		Prov: Provenance{Side: "import", File: "f.jsonl", Line: 3}}
	var enc eventEncoder
	enc.event(&ev)
	if n := testing.AllocsPerRun(100, func() {
		enc.reset()
		enc.event(&ev)
	}); n != 0 {
		t.Errorf("encoding an event allocates %v times, want 0", n)
	}
}

func FuzzEventEncoder(f *testing.F) {
	for _, s := range []string{"plain", "<a href=\"x\">&amp;</a>", "\x00\x1f\x7f", "\xff\xfe\xe2\x80", "\u2028\u2029", "é世😀"} {
		f.Add(s, []byte(`{"k": "v"}`))
	}
	f.Fuzz(func(t *testing.T, s string, raw []byte) {
		ev := Event{Kind: Kind(s), Text: s, Tool: &Tool{Name: s, Args: raw}, Prov: Provenance{File: s}}
		checkEncoder(t, "fuzz", []Event{ev})
	})
}

func FuzzValidRaw(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, "\"\xff\"", `"\ud800"`, `"\ud800\u0041"`, ` [1, 2e5, -0.5] `, `{"a":}`, "\"\x01\"", `01`, `1.`, `nul`, `[1,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := validRaw(in), json.Valid(in); got != want {
			t.Fatalf("validRaw(%q) = %v, json.Valid %v", in, got, want)
		}
	})
}

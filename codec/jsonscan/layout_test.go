package jsonscan

import (
	"fmt"
	"hash/maphash"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var testSeed = maphash.MakeSeed()

// members records what a member callback sees, values as offsets in body.
func members(body []byte, out *[]string) func(name, value []byte) {
	return func(name, value []byte) {
		*out = append(*out, fmt.Sprintf("%s@%d+%d", name, cap(body)-cap(value), len(value)))
	}
}

// resplitAgrees checks that, whenever Resplit accepts next after the
// layout of prev, it finds what Split finds, members after the array
// included.
func resplitAgrees(t *testing.T, prev, next []byte, field string) bool {
	t.Helper()
	var layouts []*Layout
	if open, spans, ok := Split(prev, field, nil); ok {
		layouts = append(layouts, NewLayout(testSeed, prev, open, spans))
	}
	var got, want []string
	open, spans, ok := Resplit(testSeed, next, field, members(next, &got), layouts...)
	if !ok {
		return false
	}
	wOpen, wSpans, wOK := Split(next, field, members(next, &want))
	want = slices.DeleteFunc(want, func(m string) bool {
		var at int
		fmt.Sscanf(m[strings.LastIndexByte(m, '@')+1:], "%d", &at)
		return at < wOpen
	})
	if !wOK || open != wOpen || !slices.Equal(spans, wSpans) || !slices.Equal(got, want) {
		t.Fatalf("Resplit(%q after %q) = %d %v %v; Split finds %d %v %v %v", next, prev, open, spans, got, wOpen, wSpans, want, wOK)
	}
	l, from, ok := ResplitLayout(testSeed, next, field, nil, nil, layouts[0])
	if w := NewLayout(testSeed, next, wOpen, wSpans); !ok || from != 1 || !reflect.DeepEqual(l, w) {
		t.Fatalf("ResplitLayout(%q after %q) = %+v %d %v; NewLayout makes %+v", next, prev, l, from, ok, w)
	}
	return true
}

func TestResplit(t *testing.T) {
	for _, tc := range []struct {
		prev, next string
		ok         bool
	}{
		{`{"m":1,"messages":[1,2],"s":"x"}`, `{"m":1,"messages":[1,2,3],"s":"x"}`, true},
		{`{"m":1,"messages":[1,2],"s":"x"}`, `{"m":1,"messages":[1,2 , {"a":[3]}],"s":"y","t":[]}`, true},
		{`{"m":1,"messages":[]}`, `{"m":1,"messages":[7]}`, true},
		{`{"m":1,"messages":[1,2]}`, `{"m":1,"messages":[1,5]}`, true},    // the second element changed
		{`{"m":1,"messages":[1,2]}`, `{"m":2,"messages":[1,2,3]}`, false}, // the head changed
		{`{"m":1,"messages":[1,2]}`, `{"m":1,"messages":[1,2],"messages":[]}`, false},
		{`{"m":1,"messages":[1,2]}`, `{"m":1,"messages":[1,2],"mess\u0061ges":[]}`, false},
		{`{"m":1,"messages":[1,2]}`, `{"m":1,"messages":[1,2,}`, false},
		{`{"m":1,"messages":[1,2]}`, `{"m":1,"messages":[1,2]} x`, false},
	} {
		if got := resplitAgrees(t, []byte(tc.prev), []byte(tc.next), "messages"); got != tc.ok {
			t.Errorf("Resplit(%s after %s): ok %v, want %v", tc.next, tc.prev, got, tc.ok)
		}
	}
}

// TestResplitAllocs: a resent body costs a few allocations, not one per
// element.
func TestResplitAllocs(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":"message %d"}`, i)
	}
	prev := []byte(b.String() + `],"system":"s"}`)
	next := []byte(b.String() + `,{"role":"user","content":"new"}],"system":"s"}`)
	open, spans, _ := Split(prev, "messages", nil)
	l := NewLayout(testSeed, prev, open, spans)
	n := testing.AllocsPerRun(20, func() {
		if _, _, ok := Resplit(testSeed, next, "messages", nil, l); !ok {
			t.Fatal("Resplit refused a resent body")
		}
	})
	if max := 2.0; n > max && !raceOn {
		t.Errorf("Resplit: %v allocations, want at most %v", n, max)
	}
}

// FuzzResplit: whenever Resplit accepts a body that follows another, it
// finds what Split finds; it never panics.
func FuzzResplit(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"a"}]}`), []byte(`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}],"messages":[]}`))
	f.Add([]byte(`{"model":"m","messages":[1,2]}`), []byte(`{"model":"m","messages":[1,23]}`))
	f.Add([]byte(`{"model":"m","messages":[1,2],"system":"a"}`), []byte(`{"model":"m","messages":[1,2,3],"system":"b","x":{}}`))
	f.Add([]byte(`{"messages":[]}`), []byte(`{"messages":[ ] , "a" : 1 }`))
	f.Fuzz(func(t *testing.T, prev, next []byte) {
		resplitAgrees(t, prev, next, "messages")
	})
}

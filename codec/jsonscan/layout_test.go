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

// splitFields is Split made of Fields and Elements: the reference Split
// must agree with.
func splitFields(body []byte, field string, member func(name, value []byte)) (open int, spans [][2]int, ok bool) {
	open, found := -1, 0
	err := Fields(body, func(k, v []byte) bool {
		if string(k) != field {
			if member != nil {
				member(k, v)
			}
			return true
		}
		found++
		if len(v) == 0 || v[0] != '[' {
			return true
		}
		open = cap(body) - cap(v)
		spans = spans[:0]
		Elements(v, func(_ int, e []byte) bool {
			at := cap(body) - cap(e)
			spans = append(spans, [2]int{at, at + len(e)})
			return true
		})
		return true
	})
	if err != nil || found != 1 || open < 0 {
		return 0, nil, false
	}
	return open, spans, true
}

// FuzzSplit: Split finds what Fields and Elements find.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{`{"a":1,"messages":[1,{"b":[2]}, "x"],"c":{}}`, `{"messages":[]}`, `{"messages":1}`, `{"messages":[],"messages":[]}`, `{"mess\u0061ges":[1]}`, `{"messages":[1]} x`, ` { "messages" : [ 1 , 2 ] } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got, want []string
		open, spans, ok := Split(body, "messages", members(body, &got))
		wOpen, wSpans, wOK := splitFields(body, "messages", members(body, &want))
		if ok != wOK || !ok {
			if ok != wOK {
				t.Fatalf("Split(%q): ok %v, Fields and Elements say %v", body, ok, wOK)
			}
			return
		}
		if open != wOpen || !slices.Equal(spans, wSpans) || !slices.Equal(got, want) {
			t.Fatalf("Split(%q) = %d %v %v; Fields and Elements find %d %v %v", body, open, spans, got, wOpen, wSpans, want)
		}
	})
}

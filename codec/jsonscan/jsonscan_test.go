package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var cases = []string{
	`{}`, `[]`, ` { "a" : 1 , "b" : [ true , false , null ] } `, `"x"`, `-0.5e+10`, `0`, `-`, `01`, `1.`, `1e`, `.5`,
	`{"a":}`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{,}`, `"\u00e9\n\"\\\/"`, `"\x"`, `"\u12"`, "\"a\tb\"",
	`{"k\u0065y":1}`, `[[[[]]]]`, `[[[[]]]`, `tru`, `nul`, `{"a":1}x`, `{"a":"b"`, `"unterminated`, "\"\xff\xfe\"",
	`{"a":{"b":{"c":[1,2,{"d":"e"}]}}}`, ` `, ``, `[1e5,-2E-3,0.0]`, `{"":""}`,
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range cases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	if !Valid([]byte(deep)) || Valid([]byte("["+deep+"]")) {
		t.Errorf("the nesting limit is not encoding/json's 10000")
	}
}

func TestFieldsMatchUnmarshal(t *testing.T) {
	for _, c := range cases {
		checkFields(t, []byte(c))
	}
}

func TestElementsMatchUnmarshal(t *testing.T) {
	for _, c := range cases {
		checkElements(t, []byte(c))
	}
}

func TestSyntaxErrorNamesOffset(t *testing.T) {
	err := Fields([]byte(`{"model":"x","messages":[1,2,}`), func(_, _ []byte) bool { return true })
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != 29 {
		t.Fatalf("err = %v, want a SyntaxError at byte 29", err)
	}
	if !strings.Contains(err.Error(), "byte 29") {
		t.Errorf("error %q does not name the offset", err)
	}
}

func TestFieldsStopEarly(t *testing.T) {
	var keys []string
	err := Fields([]byte(`{"model":"m","messages":[1],"bad":}`), func(k, _ []byte) bool {
		keys = append(keys, string(k))
		return string(k) != "messages"
	})
	if err != nil || !reflect.DeepEqual(keys, []string{"model", "messages"}) {
		t.Fatalf("keys %v, err %v", keys, err)
	}
}

// checkFields compares Fields with encoding/json on one input: the same
// verdict, and the same members (last duplicate wins in a map).
func checkFields(t *testing.T, b []byte) {
	t.Helper()
	got := map[string]json.RawMessage{}
	var order []string
	err := Fields(b, func(kb, v []byte) bool {
		k := string(kb)
		if bytes.ContainsAny(v[:1], " \t\r\n") || !json.Valid(v) {
			t.Errorf("Fields(%q): value %q of %q is not one trimmed JSON value", b, v, k)
		}
		got[k] = v
		order = append(order, k)
		return true
	})
	var want map[string]json.RawMessage
	werr := json.Unmarshal(b, &want)
	if werr == nil && want == nil {
		werr = errors.New("null is not an object")
	}
	if (err == nil) != (werr == nil) {
		t.Fatalf("Fields(%q) err = %v, encoding/json err = %v", b, err, werr)
	}
	if err != nil {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("Fields(%q) = %v, want %v", b, order, want)
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("Fields(%q)[%q] = %q, want %q", b, k, got[k], v)
		}
	}
}

func checkElements(t *testing.T, b []byte) {
	t.Helper()
	var got []json.RawMessage
	err := Elements(b, func(i int, v []byte) bool {
		if i != len(got) {
			t.Errorf("Elements(%q): index %d, want %d", b, i, len(got))
		}
		got = append(got, v)
		return true
	})
	var want []json.RawMessage
	werr := json.Unmarshal(b, &want)
	if werr == nil && want == nil {
		werr = errors.New("null is not an array")
	}
	if (err == nil) != (werr == nil) {
		t.Fatalf("Elements(%q) err = %v, encoding/json err = %v", b, err, werr)
	}
	if err != nil {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("Elements(%q) = %q, want %q", b, got, want)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("Elements(%q)[%d] = %q, want %q", b, i, got[i], want[i])
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
		checkFields(t, b)
		checkElements(t, b)
		// Value reads a valid prefix, and all of a valid document but
		// the white space after it.
		if n, err := Value(b); err == nil {
			if n < 0 || n > len(b) || !json.Valid(b[:n]) {
				t.Fatalf("Value(%q) = %d: not a valid value", b, n)
			}
		} else if json.Valid(b) {
			t.Fatalf("Value(%q): %v, but it is valid JSON", b, err)
		}
		if json.Valid(b) {
			if n, _ := Value(b); len(bytes.TrimRight(b[n:], " \t\r\n")) != 0 {
				t.Fatalf("Value(%q) = %d, short of the whole document", b, n)
			}
		}
	})
}

func TestZeroAllocs(t *testing.T) {
	if raceOn {
		t.Skip("the race detector makes sync.Pool drop items: allocations are counted without it (go test ./codec/jsonscan)")
	}
	b := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi \u00e9"},{"role":"assistant","content":[{"type":"text","text":"x"}]}]}`)
	n := 0
	a := testing.AllocsPerRun(100, func() {
		Fields(b, func(k, v []byte) bool {
			if string(k) == "messages" {
				Elements(v, func(int, []byte) bool { n++; return true })
			}
			return true
		})
	})
	if a != 0 {
		t.Errorf("Fields and Elements allocate %.0f times per document, want 0", a)
	}
}

func BenchmarkElements(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","messages":[`)
	for i := 0; sb.Len() < 700<<10; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"   12\tfunc step(w io.Writer) error { return write(w, \"x\\n\") }\n"}]}`)
	}
	sb.WriteString(`]}`)
	doc := []byte(sb.String())
	b.Run("jsonscan", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			Fields(doc, func(k, v []byte) bool {
				if string(k) == "messages" {
					Elements(v, func(int, []byte) bool { return true })
				}
				return true
			})
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			var top map[string]json.RawMessage
			json.Unmarshal(doc, &top)
			var items []json.RawMessage
			json.Unmarshal(top["messages"], &items)
		}
	})
}

func TestValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int // -1: an error
	}{
		{`{"a":1},{"b":2}`, 7}, {`123,4`, 3}, {`"x\"y"]`, 6}, {` [1, 2] ,`, 7}, {`true}`, 4},
		{`null`, 4}, {`-1.5e3]`, 6}, {`tru`, -1}, {`{"a":}`, -1}, {``, -1}, {`]`, -1}, {`"abc`, -1},
	} {
		n, err := Value([]byte(c.in))
		if c.want < 0 {
			if err == nil {
				t.Errorf("Value(%q) = %d, want an error", c.in, n)
			}
			continue
		}
		if err != nil || n != c.want {
			t.Errorf("Value(%q) = %d, %v; want %d", c.in, n, err, c.want)
		}
	}
}

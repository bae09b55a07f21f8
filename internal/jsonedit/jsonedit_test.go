package jsonedit

import (
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		"{}\n",
		"[]\n",
		"null\n",
		"{\n  \"z\": 1,\n  \"a\": [\n    1.50,\n    \"x\",\n    true,\n    null,\n    {}\n  ],\n  \"m\": {\n    \"é\": \"<&> \\\"q\\\" \\\\ \\n \\u0001\"\n  }\n}\n",
		"{\n  \"big\": 123456789012345678901234567890,\n  \"e\": 1e-7\n}\n",
	} {
		v, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if got := string(Format(v)); got != in {
			t.Errorf("Format(Parse(%q)) = %q", in, got)
		}
	}
}

func TestOrderAndEdits(t *testing.T) {
	v, err := Parse([]byte(`{"b":1,"a":2,"b":3}`))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if got := string(Format(o)); got != "{\n  \"b\": 3,\n  \"a\": 2\n}\n" {
		t.Errorf("duplicate key: %q", got)
	}
	o.Set("c", "x")
	o.Set("b", FromGo(map[string]any{"y": []string{"p"}, "x": 1}))
	if !o.Delete("a") || o.Delete("a") {
		t.Error("Delete reports wrongly")
	}
	want := "{\n  \"b\": {\n    \"x\": 1,\n    \"y\": [\n      \"p\"\n    ]\n  },\n  \"c\": \"x\"\n}\n"
	if got := string(Format(o)); got != want {
		t.Errorf("after edits: %q, want %q", got, want)
	}
	w, _ := Parse([]byte(`{"c":"x","b":{"y":["p"],"x":1}}`))
	if !Equal(o, w) {
		t.Error("Equal ignores key order, but says differ")
	}
	w.(*Object).Set("c", "z")
	if Equal(o, w) {
		t.Error("Equal says the same for different values")
	}
}

func TestSyntaxError(t *testing.T) {
	for _, c := range []struct {
		in        string
		line, col int
	}{
		{"{\n  \"a\": 1,\n  \"b\": x\n}", 3, 8},
		{"{\n  \"a\": 1,\n}", 3, 1},
		{"{\"a\": 1}\n{\"b\": 2}", 2, 1},
		{"{\"a\": [1, 2", 1, 12},
		{"", 1, 1},
	} {
		_, err := Parse([]byte(c.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", c.in, err)
			continue
		}
		if se.Line != c.line || se.Col != c.col {
			t.Errorf("Parse(%q): line %d col %d (%v), want line %d col %d", c.in, se.Line, se.Col, se, c.line, c.col)
		}
	}
}

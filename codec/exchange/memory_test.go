package exchange

import (
	"errors"
	"testing"
)

func TestCorrection(t *testing.T) {
	c := Correction{Op: "forget", Target: "artifact", ID: "dec-3f9a2c1b7e4d", Reason: "wrong"}
	b, err := AppendCorrection(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCorrection(b)
	if err != nil || got != c {
		t.Fatalf("DecodeCorrection = %+v, %v; want %+v", got, err, c)
	}
	for _, bad := range []string{`{"op":"erase","target":"artifact","id":"x"}`, `{"op":"pin","target":"task","id":"x"}`,
		`{"op":"pin","target":"session","id":""}`, `[1]`, `{`} {
		if _, err := DecodeCorrection([]byte(bad)); !errors.Is(err, ErrPayload) {
			t.Errorf("DecodeCorrection(%s) = %v, want ErrPayload", bad, err)
		}
	}
}

func FuzzCorrection(f *testing.F) {
	f.Add([]byte(`{"op":"forget","target":"artifact","id":"dec-3f9a2c1b7e4d"}`))
	f.Add([]byte(`{"op":"pin","target":"session","id":"claude:abc","reason":"keep"}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := DecodeCorrection(p)
		if err != nil {
			return
		}
		b, err := AppendCorrection(nil, c)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", c, err)
		}
		c2, err := DecodeCorrection(b)
		if err != nil || c2 != c {
			t.Fatalf("round trip %+v → %+v, %v", c, c2, err)
		}
	})
}

package bodybuf

import "testing"

// TestGetPut: a buffer has room for what was asked, with headroom, and
// one given back is overwritten under test before it is lent again.
func TestGetPut(t *testing.T) {
	b := Get(1000)
	if len(b) != 0 || cap(b) < 1250 {
		t.Fatalf("Get(1000): len %d cap %d", len(b), cap(b))
	}
	b = append(b, "secret"...)
	kept := b[:6]
	Put(b)
	if string(kept) == "secret" {
		t.Fatal("a buffer given back still holds its bytes under test")
	}
	Put(make([]byte, 0, MaxPooled+1)) // too large: dropped, no panic
	Put(nil)
}

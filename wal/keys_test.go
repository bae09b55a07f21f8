package wal

import (
	"crypto/cipher"
	"crypto/sha256"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"unsafe"

	"github.com/bbengine/bbengine/internal/crypt"
)

// seededKeys returns a key set derived from seed alone, holding
// generations gens (1 when none are given) of which active is the active
// one, so that two processes (the
// crash test's parent and child) hold the same keys. crypt has no
// constructor for that yet (a data directory's keys will come from its
// keys.json), so it sets the fields of a crypt.Ephemeral key set by
// reflection; it fails the test if crypt's fields change.
func seededKeys(tb testing.TB, seed string, active uint32, gens ...uint32) *crypt.Keys {
	tb.Helper()
	k := crypt.Ephemeral()
	v := reflect.ValueOf(k).Elem()
	set := func(name string, x any) {
		f := v.FieldByName(name)
		if !f.IsValid() || f.Type() != reflect.TypeOf(x) {
			tb.Fatalf("crypt.Keys has no field %s of type %T: update seededKeys", name, x)
		}
		reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(x))
	}
	sum := func(s string) [crypt.KeySize]byte { return sha256.Sum256([]byte(seed + "/" + s)) }
	var id [crypt.DirIDSize]byte
	d := sum("dir")
	copy(id[:], d[:])
	set("dirID", id)
	set("root", sum("root"))
	set("names", sum("names"))
	m := map[uint32]cipher.AEAD{}
	if len(gens) == 0 {
		gens = []uint32{1}
	}
	for _, g := range gens {
		m[g] = crypt.NewAEAD(sum(fmt.Sprint("gen", g)))
	}
	set("gens", m)
	set("active", active)
	return k
}

// setActive makes gen, which k must hold, its active generation, as
// rotating the directory's keys will.
func setActive(tb testing.TB, k *crypt.Keys, gen uint32) {
	tb.Helper()
	v := reflect.ValueOf(k).Elem()
	mu := v.FieldByName("mu")
	active := v.FieldByName("active")
	if !mu.IsValid() || !active.IsValid() {
		tb.Fatal("crypt.Keys has no mu or active field: update setActive")
	}
	m := (*sync.RWMutex)(unsafe.Pointer(mu.UnsafeAddr()))
	m.Lock()
	*(*uint32)(unsafe.Pointer(active.UnsafeAddr())) = gen
	m.Unlock()
}

package crypt_test

import (
	"fmt"
	"log"
	"os"

	"github.com/bbengine/bbengine/internal/crypt"
)

// Example makes an encrypted directory's keys with a passphrase, makes a
// data key for a file, and unlocks the directory again to read it back.
func Example() {
	dir, err := os.MkdirTemp("", "bbengine-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	k, err := crypt.Init(dir, crypt.InitOptions{Passphrase: []byte("correct horse battery staple")})
	if err != nil {
		log.Fatal(err)
	}
	aad := []byte("blob 1")
	d, err := k.NewDataKey(aad) // d.Wrapped goes into the file's header
	if err != nil {
		log.Fatal(err)
	}

	_, err = crypt.Unlock(dir, crypt.UnlockOptions{Passphrase: []byte("wrong")})
	fmt.Println(err != nil)

	u, err := crypt.Unlock(dir, crypt.UnlockOptions{Passphrase: []byte("correct horse battery staple")})
	if err != nil {
		log.Fatal(err)
	}
	key, err := u.Unwrap(d.Gen, d.Wrapped[:], aad)
	fmt.Println(key == d.Key, err)

	info, err := crypt.ReadInfo(dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(crypt.Exists(dir), info.Slots[0].Type, info.Active)
	// Output:
	// true
	// true <nil>
	// true passphrase 1
}

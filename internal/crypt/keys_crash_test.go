package crypt

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCrash kills a process that keeps changing keys.json (a new
// generation, a new root key, in turn) at a random moment: the file left
// behind unlocks, and no generation the process reported done is lost.
func TestCrash(t *testing.T) {
	if os.Getenv("BBENGINE_CRYPT_CRASH_DIR") != "" {
		crashChild(os.Getenv("BBENGINE_CRYPT_CRASH_DIR"))
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for round := range 3 {
		dir := t.TempDir()
		if _, err := Init(dir, InitOptions{Passphrase: []byte("pw")}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$", "-test.count=1")
		cmd.Env = append(os.Environ(), "BBENGINE_CRYPT_CRASH_DIR="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var acked uint32
		sc := bufio.NewScanner(out)
		for n := 0; n < 5+round*7 && sc.Scan(); n++ {
			g, err := strconv.ParseUint(strings.TrimSpace(sc.Text()), 10, 32)
			if err != nil {
				t.Fatalf("child said %q", sc.Text())
			}
			acked = uint32(g)
		}
		time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond)
		cmd.Process.Kill()
		cmd.Wait()
		// What a kill inside safefile's write leaves: a partial
		// temporary file beside keys.json.
		if err := os.WriteFile(filepath.Join(dir, ".keys.json.tmp123"), []byte(`{"format": "bbengine-k`), 0o600); err != nil {
			t.Fatal(err)
		}
		if acked == 0 {
			t.Fatal("the child reported no generation")
		}
		k, err := Unlock(dir, UnlockOptions{Passphrase: []byte("pw")})
		if err != nil {
			t.Fatalf("round %d: after kill -9: %v", round, err)
		}
		if k.Active() < acked {
			t.Fatalf("round %d: active generation %d, but %d was reported done", round, k.Active(), acked)
		}
		// Left-over temporary files do not stop the next change.
		if g, err := k.NewGeneration(dir); err != nil || g != k.Active() {
			t.Fatalf("round %d: NewGeneration after the crash: %d, %v", round, g, err)
		}
		if _, err := Unlock(dir, UnlockOptions{Passphrase: []byte("pw")}); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(dir)
		t.Logf("round %d: %d generations reported, active %d, %d entries in the directory", round, acked, k.Active(), len(ents))
	}
}

func crashChild(dir string) {
	k, err := Unlock(dir, UnlockOptions{Passphrase: []byte("pw")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		if i%2 == 1 {
			if err := k.RotateRoot(dir); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			continue
		}
		g, err := k.NewGeneration(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(g)
	}
}

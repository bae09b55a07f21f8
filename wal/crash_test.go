package wal

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/crypt"
)

const (
	crashEnv        = "BBENGINE_WAL_CRASH_CHILD"
	crashSyncEnv    = "BBENGINE_WAL_CRASH_SYNC"
	crashWritersEnv = "BBENGINE_WAL_CRASH_WRITERS"
	crashKeysEnv    = "BBENGINE_WAL_CRASH_KEYS" // a seed of seededKeys: encrypt
)

// crashKeys returns the keys the crash test's child and parent share, or
// nil for a clear log.
func crashKeys(t *testing.T, seed string) *crypt.Keys {
	if seed == "" {
		return nil
	}
	return seededKeys(t, seed, 1)
}

// crashChild appends with the sync policy and from the number of
// goroutines its environment names and prints "id offset" for every
// acknowledged frame until it is killed.
func crashChild(t *testing.T, dir string) {
	policy, err := ParseSyncPolicy(os.Getenv(crashSyncEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	writers, err := strconv.Atoi(os.Getenv(crashWritersEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	l, err := Open(dir, &Options{Sync: policy, SegmentSize: 256 << 10, Keys: crashKeys(t, os.Getenv(crashKeysEnv))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	start := 0
	if r := l.NewReader(); r != nil {
		for r.Next() {
			if h := r.Header(); h.Kind != frame.KindSegmentHeader {
				start = int(h.Exchange) + 1
			}
		}
		r.Close()
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := start*10 + w; ; i += writers {
				off, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: uint64(i), Payload: crashPayload(i)})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprintf(out, "%d %d\n", i, off)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func crashPayload(i int) []byte {
	return []byte(strings.Repeat(strconv.Itoa(i)+",", 1+i%300))
}

// TestCrash kills a process appending to a log with SIGKILL, five times,
// and checks after each that every acknowledged frame is in the log at
// its offset and nothing in it is damaged: under SyncAlways from four
// goroutines (group commit), under SyncInterval from one (every frame
// written by the appender itself, rotations sealed in the background)
// and from four; and with encryption, under SyncAlways from four and
// under SyncInterval from one.
func TestCrash(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("crash test re-executes the test binary")
	}
	for _, c := range []struct {
		policy  SyncPolicy
		writers int
		keys    string
	}{{SyncAlways, 4, ""}, {SyncInterval, 1, ""}, {SyncInterval, 4, ""}, {SyncAlways, 4, "crash"}, {SyncInterval, 1, "crash"}} {
		name := fmt.Sprintf("sync=%v/writers=%d", c.policy, c.writers)
		if c.keys != "" {
			name += "/enc=aes256gcm"
		}
		t.Run(name, func(t *testing.T) {
			crashRun(t, c.policy, c.writers, c.keys)
		})
	}
}

func crashRun(t *testing.T, policy SyncPolicy, writers int, keys string) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	acked := map[int]uint64{}
	for iter := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir, crashSyncEnv+"="+policy.String(), crashWritersEnv+"="+strconv.Itoa(writers), crashKeysEnv+"="+keys)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// The kill comes a random while after the first acknowledgment, not
		// after the start, so a loaded machine slow to start the child
		// still kills it mid-write.
		var kill <-chan time.Time
		after := time.Duration(100+rng.IntN(400)) * time.Millisecond
		n := 0
	read:
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					break read
				}
				var id int
				var off uint64
				if _, err := fmt.Sscanf(line, "%d %d", &id, &off); err != nil {
					t.Fatalf("child printed %q", line)
				}
				acked[id] = off
				if n == 0 {
					kill = time.After(after)
				}
				n++
			case <-kill:
				cmd.Process.Kill()
				kill = nil
			}
		}
		cmd.Wait()
		if n == 0 {
			t.Fatalf("iteration %d: child acknowledged nothing; stderr: %s", iter, stderr.String())
		}

		l, err := Open(dir, &Options{Keys: crashKeys(t, keys)})
		if err != nil {
			t.Fatalf("iteration %d: reopen after SIGKILL: %v", iter, err)
		}
		if d := l.Damage(); len(d) > 0 {
			t.Fatalf("iteration %d: damage after SIGKILL: %v", iter, d)
		}
		// No partial frame: every frame in the log is intact and well formed.
		seen := map[int]uint64{}
		r := l.NewReader()
		for r.Next() {
			h := r.Header()
			if h.Kind == frame.KindSegmentHeader {
				continue
			}
			p, err := r.Payload()
			if err != nil || string(p) != string(crashPayload(int(h.Exchange))) {
				t.Fatalf("iteration %d: frame %d at %d is damaged (%v)", iter, h.Exchange, r.Offset(), err)
			}
			seen[int(h.Exchange)] = r.Offset()
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		// Every acknowledged frame is present at its offset.
		for id, off := range acked {
			if got, ok := seen[id]; !ok || got != off {
				t.Fatalf("iteration %d: acknowledged frame %d at %d is missing (found at %d, %v)", iter, id, off, got, ok)
			}
		}
		if keys != "" {
			infos, err := Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range infos {
				if !in.Encrypted || in.Err != nil {
					t.Fatalf("iteration %d: segment %+v, want encrypted and sound", iter, in)
				}
			}
		}
		t.Logf("iteration %d: %d acknowledged this run, %d in the log, recovery: %v", iter, n, len(seen), l.Recovery())
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

package server

import (
	"runtime"
	"syscall"
	"testing"
)

// niceOf is the nice value of thread tid (Linux's getpriority returns
// 20 - nice), or -100 when it cannot be read.
func niceOf(tid int) int {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return -100
	}
	return 20 - p
}

// TestLowPriority: the goroutine that calls lowPriority runs on a thread
// of its own at nice 19 and the threads the runtime starts meanwhile
// keep the process's priority.
func TestLowPriority(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base := niceOf(syscall.Gettid())
	type res struct{ low, other int }
	got := make(chan res)
	go func() {
		lowPriority()
		low := niceOf(syscall.Gettid())
		// A goroutine started now needs a thread; the runtime must not
		// clone it from this one.
		other := make(chan int)
		for range 4 {
			go func() {
				runtime.LockOSThread()
				other <- niceOf(syscall.Gettid())
			}()
		}
		worst := base
		for range 4 {
			if n := <-other; n != base {
				worst = n
			}
		}
		got <- res{low, worst}
	}()
	r := <-got
	if r.low != 19 {
		t.Errorf("derivation's thread at nice %d, want 19", r.low)
	}
	if r.other != base {
		t.Errorf("a thread started by the low-priority goroutine is at nice %d, want %d like the process", r.other, base)
	}
}

package server

import (
	"runtime"
	"syscall"
)

// lowPriority locks the calling goroutine to its OS thread for the rest
// of its life and gives the thread the lowest CPU priority (nice 19), so
// that when derivation and the proxy's request handling compete for the
// cores the kernel runs the requests first, and derivation takes the CPU
// they leave. The goroutine must not unlock the thread: an unprivileged
// process cannot raise the priority back, and a thread whose goroutine
// exits while locked ends with it. Threads the runtime starts meanwhile
// do not inherit the priority (it starts them from its template thread
// while the caller is locked).
func lowPriority() {
	runtime.LockOSThread()
	syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19)
}

//go:build unix

package bench

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user + system) the process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

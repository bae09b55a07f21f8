//go:build !unix

package bench

import "time"

// CPUTime is not measured on this platform: it returns 0.
func CPUTime() time.Duration { return 0 }

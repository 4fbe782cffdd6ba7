//go:build unix

package preview

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU so far: on a shared
// machine the benchmarks report it beside the wall time, which other
// processes' load stretches.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

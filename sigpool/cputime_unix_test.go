//go:build unix

package sigpool

import "syscall"

// cpuTime returns the process's user+system CPU time in nanoseconds, or
// -1. Per-op CPU time is less disturbed than wall time when other
// processes share the machine.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// ownThreadCPU returns the CPU time of the calling thread (its goroutine
// locked to it), to the nanosecond, or false.
func ownThreadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

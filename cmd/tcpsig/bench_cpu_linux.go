package main

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// ownThreadStats returns the calling thread's CPU time (its goroutine
// locked to it), to the nanosecond, and the time it has waited, runnable,
// for a CPU another thread held (the run delay of
// /proc/thread-self/schedstat), or false.
func ownThreadStats() (cpu, wait time.Duration, ok bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, 0, false
	}
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	f := bytes.Fields(b)
	if err != nil || len(f) < 2 {
		return 0, 0, false
	}
	w, err := strconv.ParseInt(string(f[1]), 10, 64)
	return time.Duration(ts.Nano()), time.Duration(w), err == nil
}

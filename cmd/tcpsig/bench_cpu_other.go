//go:build !linux

package main

import "time"

// ownThreadStats says this build reads no thread's CPU or wait time, so
// tcpsig bench shows its all-cores figures unchecked.
func ownThreadStats() (cpu, wait time.Duration, ok bool) { return 0, 0, false }

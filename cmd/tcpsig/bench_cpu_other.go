//go:build !linux

package main

import "time"

// ownThreadCPU says this build reads no thread's CPU time, so tcpsig bench
// shows its all-cores figures unchecked.
func ownThreadCPU() (time.Duration, bool) { return 0, false }

//go:build race

package netstack

// raceEnabled: the race detector slows gVisor down tenfold or more; the
// bulk tests move less data under it.
const raceEnabled = true

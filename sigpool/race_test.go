//go:build race

package sigpool

// raceEnabled: the race detector's instrumentation allocates, so
// allocation counts are checked without it.
const raceEnabled = true

//go:build race

package mac

// raceEnabled: the race detector's instrumentation allocates, so
// allocation counts are not meaningful under it.
const raceEnabled = true

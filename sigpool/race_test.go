//go:build race

package sigpool

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// the mac package's pooled key schedulers allocate; allocation counts are
// checked without it.
const raceEnabled = true

//go:build race

package pcapverify_test

// raceEnabled: under the race detector allocation counts are not
// meaningful, so the allocation checks skip.
const raceEnabled = true

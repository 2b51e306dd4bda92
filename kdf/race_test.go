//go:build race

package kdf

// raceEnabled: under the race detector allocation counts are not
// meaningful (sync.Pool drops items at random, and crypto's hashes
// allocate to marshal their state), so the allocation tests skip.
const raceEnabled = true

//go:build !race

package sigpool

const raceEnabled = false

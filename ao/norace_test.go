//go:build !race

package ao

const raceEnabled = false

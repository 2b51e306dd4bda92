//go:build race

package packetauth

const raceEnabled = true

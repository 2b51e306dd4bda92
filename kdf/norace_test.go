//go:build !race

package kdf

const raceEnabled = false

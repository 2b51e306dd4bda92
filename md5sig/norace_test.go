//go:build !race

package md5sig

const raceEnabled = false

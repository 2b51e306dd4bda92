//go:build !race

package pcapverify_test

const raceEnabled = false

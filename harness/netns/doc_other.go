//go:build !linux

// Package netns runs test code inside a fresh Linux network namespace; it
// is empty on other systems.
package netns

//go:build !linux

// Package linuxmd5 configures Linux's own TCP-MD5 on sockets; it is empty
// on other systems.
package linuxmd5

//go:build !linux

package main

import "errors"

// openInterface: live capture reads AF_PACKET sockets, which only Linux has.
func openInterface(name string) (packetSource, error) {
	return nil, errors.New("live capture (-i) needs Linux (AF_PACKET)")
}
